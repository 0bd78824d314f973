"""Reading one item of a `kubectl get -o json` List: its kind, its name and namespace, whether a
controller owns it. A malformed item, or one whose name the Kubernetes API would refuse
(object_names.py), is a SnapshotError naming the item (the whole snapshot is refused: the last
good state stays)."""

from __future__ import annotations

from typing import Any

from gpuposture.base.echo import echoed
from inventory.sources.exposure import ROUTE_KIND_NAMES
from inventory.sources.nul_strings import NUL
from inventory.sources.object_names import (
    name_problem,
    segment_problem,
    subdomain_problem,
)
from inventory.sources.object_refs import object_ref
from inventory.sources.raw import mapping, text
from tenants.mapping import PLATFORM_LABEL, TENANT_LABEL

NAMESPACED_KINDS = frozenset(
    {
        "Pod",
        "ResourceQuota",
        "ConfigMap",
        "DaemonSet",
        "Deployment",
        "StatefulSet",
        "ReplicaSet",
        "Job",
        "CronJob",
        "Service",
        "Role",
        "RoleBinding",
        "Ingress",
        "NetworkPolicy",
        *ROUTE_KIND_NAMES,
        "ResourceClaim",
        "ResourceClaimTemplate",
        "ServiceAccount",
    }
)

# Built-in kinds the API serves cluster-wide only, whatever a manifest writes on them.
CLUSTER_SCOPED_KINDS = frozenset(
    {
        "Node",
        "Namespace",
        "PersistentVolume",
        "ClusterRole",
        "ClusterRoleBinding",
        "DeviceClass",
        "ResourceSlice",
    }
)


class SnapshotError(ValueError):
    """The snapshot cannot be read; the message says which object or file and why."""


def item_kind(index: int, obj: Any) -> str:
    if not isinstance(obj, dict):
        raise SnapshotError(
            f"items[{index}] is a {type(obj).__name__}, not a Kubernetes object; "
            "expected the items of a `kubectl get ... -o json` List"
        )
    kind = text(obj.get("kind"))
    if not kind:
        raise SnapshotError(
            f"items[{index}] has no kind; export with `kubectl get ... -o json`, which sets it"
        )
    return kind


def item_identity(index: int, kind: str, obj: dict[str, Any]) -> tuple[str, str | None]:
    """The item's (name, namespace), or a SnapshotError naming it as object_refs does: a
    viewer reads a failed run's error with another party's objects hidden, which only a name
    given with its namespace can be."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        raise SnapshotError(f"items[{index}] ({kind}) has no metadata")
    name = text(metadata.get("name"))
    if not name:
        raise SnapshotError(f"items[{index}] ({kind}) has no metadata.name")
    namespace = text(metadata.get("namespace")) or None
    # The API writes metadata.namespace on namespaced objects only, so a custom resource's
    # own metadata says its scope: a Katib Experiment `hpo` in each of two namespaces is two
    # objects. Only a built-in kind whose scope is fixed drops one (a stray field in a manifest).
    if kind in CLUSTER_SCOPED_KINDS:
        namespace = None
    if namespace is not None and (problem := segment_problem(namespace)):
        # Neither it nor the name shown: no party's namespace, so nothing would hide them.
        raise SnapshotError(f"items[{index}] ({kind}) metadata.namespace is {problem}")
    if kind in NAMESPACED_KINDS and namespace is None:
        # Its name alone would be a bare object name (object_refs): the index says which.
        raise SnapshotError(
            f"items[{index}] ({kind}) has no metadata.namespace; a {kind} always has one in "
            "the API, so export with `kubectl get ... -A -o json` rather than from manifests"
        )
    if problem := name_problem(kind, name):
        raise SnapshotError(
            f"items[{index}] ({object_ref(kind, namespace, name)}) metadata.name is {problem}"
        )
    where = object_ref(kind, namespace, name)
    _check_node_name(index, kind, where, obj)
    _check_labels(index, where, metadata.get("labels"))
    return name, namespace


# The labels gpuposture reads by name, which a refusal may name: any other key is text its
# writer chose (a tenant's, in a viewer's view of the run: docs/access.md).
NAMED_LABELS = frozenset({TENANT_LABEL, PLATFORM_LABEL})


def _check_labels(index: int, where: str, labels: Any) -> None:
    # The API server validates label keys and values, which cannot hold a NUL; removing one
    # (nul_strings) could turn `true<NUL>` into a platform label's `true`: refused as a bad
    # name is.
    if not isinstance(labels, dict):
        return
    for key, value in labels.items():
        if NUL in str(key) or (isinstance(value, str) and NUL in value):
            label = echoed(key) if key in NAMED_LABELS else "(one key, not named)"
            raise SnapshotError(
                f"items[{index}] ({where}) metadata.labels {label} holds a NUL byte "
                "(\\u0000), which no Kubernetes label can; fix or remove that label"
            )


def _check_node_name(index: int, kind: str, where: str, obj: dict[str, Any]) -> None:
    # A pod's node is stored by name with it and linked to from the pages like a node's own.
    if kind != "Pod":
        return
    node = mapping(obj.get("spec")).get("nodeName")
    if isinstance(node, str) and node and (problem := subdomain_problem(node)):
        raise SnapshotError(f"items[{index}] ({where}) spec.nodeName {echoed(node)} is {problem}")


def is_owned(obj: dict[str, Any]) -> bool:
    return bool(mapping(obj.get("metadata")).get("ownerReferences"))


def duplicate_warning(kind: str, namespace: str | None, name: str) -> str:
    where = object_ref(kind, namespace, name)
    return f"{where} appears more than once in the snapshot; the first copy was kept"
