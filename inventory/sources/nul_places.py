"""Where in an object a string held a NUL, as a sync run's warning says it (nul_strings).
PURE.

A tenant viewer reads the runs of their clusters (docs/access.md), so a place shows only
what is no tenant's text: the object as object_refs names it (`namespace/name`, hidden whole
where it is another party's) and Kubernetes' own field names. It stops at a map, whose keys
its writer chose, and counts: "metadata.annotations (one key)", "data (2 keys)".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inventory.sources.nul_strings import NulReplaced

# A place shows Kubernetes' own field names only. A map's keys are text its writer chose (an
# annotation's or a label's key, a ConfigMap's data key, a claim's opaque parameters), and a
# tenant viewer reads the run's warnings (docs/access.md): a place stops at the map and counts
# ("metadata.annotations (one key)"), and at any key not listed here (a custom resource's spec
# is its author's words), so no tenant's text reaches another through a path.
MAP_FIELDS = frozenset(
    {
        "annotations",
        "labels",
        "data",
        "binaryData",
        "stringData",
        "nodeSelector",
        "matchLabels",
        "selector",
        "parameters",
        "attributes",
        "capacity",
        "allocatable",
        "limits",
        "requests",
        "hard",
        "used",
    }
)
SHOWN_FIELDS = MAP_FIELDS | frozenset(
    {
        # objects and their metadata
        "apiVersion",
        "kind",
        "metadata",
        "spec",
        "status",
        "template",
        "jobTemplate",
        "generateName",
        "ownerReferences",
        "managedFields",
        "finalizers",
        "type",
        "immutable",
        # pods and containers
        "containers",
        "initContainers",
        "ephemeralContainers",
        "name",
        "image",
        "command",
        "args",
        "workingDir",
        "env",
        "envFrom",
        "value",
        "valueFrom",
        "prefix",
        "configMapRef",
        "configMapKeyRef",
        "secretRef",
        "secretKeyRef",
        "fieldRef",
        "key",
        "resources",
        "ports",
        "volumeMounts",
        "volumes",
        "mountPath",
        "subPath",
        "hostPath",
        "path",
        "configMap",
        "items",
        "securityContext",
        "serviceAccountName",
        "nodeName",
        "schedulerName",
        "runtimeClassName",
        "tolerations",
        "affinity",
        "hostname",
        "subdomain",
        "message",
        "reason",
        # RBAC, admission, DRA
        "rules",
        "subjects",
        "roleRef",
        "namespace",
        "webhooks",
        "devices",
        "config",
        "opaque",
        "driver",
    }
)
PER_COUNT = {"value": ("one key", "keys"), "key": ("one key's name", "keys' names")}


def place(where: str, what: str, n: int) -> str:
    if not what:
        return where
    one, many = PER_COUNT[what]
    return f"{where} ({one if n == 1 else f'{n} {many}'})"


@dataclass(frozen=True)
class Path:
    """Where the walk is: the object, the fields shown so far, whether a key not shown was
    passed (the place stops there), and whether the mapping walked is a map (MAP_FIELDS)."""

    who: str
    fields: str = ""
    stopped: bool = False
    is_map: bool = False

    def place(self) -> str:
        return f"{self.who} {self.fields}" if self.fields else self.who

    def add(self, found: NulReplaced, what: str = "") -> None:
        found.add(self.place(), "value" if self.stopped and not what else what)

    def key(self, key: Any, item: Any) -> Path:
        is_map = key in MAP_FIELDS and isinstance(item, dict)
        if self.stopped or self.is_map or key not in SHOWN_FIELDS:
            return Path(self.who, self.fields, True, is_map)
        fields = f"{self.fields}.{key}" if self.fields else key
        return Path(self.who, fields, False, is_map)

    def index(self, index: int) -> Path:
        if self.stopped:
            return Path(self.who, self.fields, True)
        return Path(self.who, f"{self.fields}[{index}]")
