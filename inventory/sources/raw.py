"""Safe readers for raw Kubernetes objects (dicts from JSON or YAML).

Real manifests are messy (`containers: null`, a list where a mapping belongs, unquoted YAML
booleans), so every reader returns an empty value of the expected type instead of raising:
a malformed sub-field must never crash a sync.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any


def mapping(value: Any) -> dict[str, Any]:
    """The value if it is a mapping, else an empty one."""
    return value if isinstance(value, dict) else {}


def dig(obj: Any, *path: str) -> dict[str, Any]:
    """The mapping at obj[path[0]][path[1]]..., or {} as soon as a step is missing or wrong."""
    current = mapping(obj)
    for key in path:
        current = mapping(current.get(key))
    return current


def dicts(value: Any) -> list[dict[str, Any]]:
    """The mappings of a list (other items dropped), or [] when value is not a list."""
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]


def text(value: Any, default: str | None = None) -> str | None:
    """A scalar as the text the manifest author wrote; None/containers give default."""
    if type(value) is str:  # by far the most common case: every name, image and label
        return value
    if isinstance(value, bool):
        # YAML 1.1 reads an unquoted `true` as a boolean; give back the word, not "True".
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return default


def str_dict(value: Any) -> dict[str, str]:
    """A mapping of strings (labels, selectors); non-scalar values are dropped."""
    result: dict[str, str] = {}
    if not isinstance(value, dict):
        return result
    for key, item in value.items():
        as_text = item if type(item) is str else text(item)
        if as_text is not None:
            result[key if type(key) is str else str(key)] = as_text
    return result


def str_tuple(value: Any) -> tuple[str, ...]:
    """A list of scalars as a tuple of strings; anything else is empty."""
    if not isinstance(value, list):
        return ()
    if all(type(item) is str for item in value):
        return tuple(value)
    return tuple(t for t in (text(item) for item in value) if t is not None)


def as_int(value: Any) -> int | None:
    """An integer written as a number or a decimal string, else None (never a guess)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("+").isdigit():
        return int(value.strip())
    return None


def flag(value: Any) -> bool | None:
    """A boolean field: True/False when set as a boolean, None when unset or malformed."""
    return value if isinstance(value, bool) else None


def canonical_hash(value: Any) -> str:
    """sha256 of canonical JSON, so the same content hashes the same whatever its key order.
    YAML may yield dates; default=str keeps them hashable instead of failing."""
    encoded = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def meta(obj: dict[str, Any]) -> dict[str, Any]:
    return mapping(obj.get("metadata"))


def name_of(obj: dict[str, Any]) -> str:
    return text(meta(obj).get("name"), "") or ""


def uid_of(obj: dict[str, Any]) -> str:
    """metadata.uid: the object's identity, which a name reused by another object never has."""
    return text(meta(obj).get("uid"), "") or ""


def created_of(obj: dict[str, Any]) -> str:
    """metadata.creationTimestamp as RFC 3339 text ("" when absent); YAML may give a datetime."""
    value = meta(obj).get("creationTimestamp")
    return value.isoformat() if isinstance(value, datetime) else text(value, "") or ""


def namespace_of(obj: dict[str, Any]) -> str | None:
    return text(meta(obj).get("namespace")) or None


def labels_of(obj: dict[str, Any]) -> dict[str, str]:
    return str_dict(meta(obj).get("labels"))


# The built-in kinds that run pods. A reference without the `controller` flag (a snapshot written
# by hand) to another built-in kind (a Service, PodDisruptionBudget, ConfigMap, ...) names a
# garbage-collection parent only: vcluster's syncer makes its Service the owner of every pod it
# writes into the host namespace.
_BUILT_IN_RUNNING_PODS = frozenset(
    {
        "CronJob",
        "DaemonSet",
        "Deployment",
        "Job",
        "Pod",
        "ReplicaSet",
        "ReplicationController",
        "StatefulSet",
    }
)


def _built_in(api_version: str) -> bool:
    """Kubernetes' own API groups (core `v1`, `apps`, `batch`, `policy`, `*.k8s.io`); also a
    reference with no apiVersion, which the API never writes. `*.x-k8s.io` groups are SIG
    projects' custom resources (JobSet, LeaderWorkerSet), which run pods."""
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return not group or "." not in group or group.endswith(".k8s.io")


def _may_run_pods(ref: dict[str, Any]) -> bool:
    """A built-in kind that runs pods, or any custom resource (an operator's: RayJob, Knative's
    Service, NodeSet): the reference's group decides, not a kind name a CRD may share."""
    kind, api_version = text(ref.get("kind"), "") or "", text(ref.get("apiVersion"), "") or ""
    return kind in _BUILT_IN_RUNNING_PODS if _built_in(api_version) else bool(kind)


def controller_reference(obj: dict[str, Any]) -> dict[str, Any]:
    """The ownerReference that names what manages the object: the one marked `controller: true`;
    where none is marked (a snapshot written by hand often omits the flag), the first that names
    a kind able to run pods and does not say `controller: false` (a garbage-collection parent
    only, as the API writes it); {} for none (a bare object)."""
    refs = dicts(meta(obj).get("ownerReferences"))
    marked = next((r for r in refs if r.get("controller") is True), None)
    if marked is not None:
        return marked
    unflagged = (r for r in refs if "controller" not in r or r.get("controller") is None)
    return next((r for r in unflagged if _may_run_pods(r)), {})
