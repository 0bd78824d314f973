"""Reading one item of a `kubectl get -o json` List: its kind, its name and namespace, whether a
controller owns it. A malformed item, or one whose name the Kubernetes API would refuse
(object_names.py), is a SnapshotError naming the item (the whole snapshot is refused: the last
good state stays)."""

from __future__ import annotations

from typing import Any

from gpuposture.base.echo import echoed
from inventory.sources.exposure import ROUTE_KIND_NAMES
from inventory.sources.istio_auth import is_istio_auth
from inventory.sources.mesh_routes import mesh_route_kind
from inventory.sources.object_names import (
    name_problem,
    segment_problem,
    subdomain_problem,
)
from inventory.sources.raw import mapping, text

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
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        raise SnapshotError(f"items[{index}] ({kind}) has no metadata")
    name = text(metadata.get("name"))
    if not name:
        raise SnapshotError(f"items[{index}] ({kind}) has no metadata.name")
    if problem := name_problem(kind, name):
        raise SnapshotError(f"items[{index}] ({kind} {echoed(name)}) metadata.name is {problem}")
    namespace = text(metadata.get("namespace")) or None
    if kind in NAMESPACED_KINDS and namespace is None:
        raise SnapshotError(
            f"items[{index}] ({kind} {name!r}) has no metadata.namespace; a {kind} always has "
            "one in the API, so export with `kubectl get ... -A -o json` rather than from "
            "manifests"
        )
    # A namespace on a cluster-scoped object (a stray field in a manifest) means nothing. A
    # mesh's route is told by its API group: other CRDs may share its kind's name.
    namespaced = kind in NAMESPACED_KINDS or mesh_route_kind(obj) is not None or is_istio_auth(obj)
    if namespaced and namespace is not None and (problem := segment_problem(namespace)):
        raise SnapshotError(
            f"items[{index}] ({kind} {echoed(name)}) metadata.namespace {echoed(namespace)} is "
            f"{problem}"
        )
    _check_node_name(index, kind, name, obj)
    return name, namespace if namespaced else None


def _check_node_name(index: int, kind: str, name: str, obj: dict[str, Any]) -> None:
    # A pod's node is stored by name with it and linked to from the pages like a node's own.
    if kind != "Pod":
        return
    node = mapping(obj.get("spec")).get("nodeName")
    if isinstance(node, str) and node and (problem := subdomain_problem(node)):
        raise SnapshotError(
            f"items[{index}] (Pod {echoed(name)}) spec.nodeName {echoed(node)} is {problem}"
        )


def is_owned(obj: dict[str, Any]) -> bool:
    return bool(mapping(obj.get("metadata")).get("ownerReferences"))


def duplicate_warning(kind: str, namespace: str | None, name: str) -> str:
    where = f"{namespace}/{name}" if namespace else name
    return f"{kind} {where} appears more than once in the snapshot; the first copy was kept"
