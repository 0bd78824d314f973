"""What a watch re-sync cannot apply by itself (inventory.sync_delta): a change whose reach
only a full list re-derives raises NeedsFullSync, and the caller lists everything."""

from __future__ import annotations

import json
from typing import Any

from inventory import snapshot as snap
from inventory.models import ClusterObject, Pod
from inventory.sources.base import WatchDelta
from inventory.sources.env_configmaps import container_sources, env_sources
from inventory.sources.images import component_of
from inventory.sources.istio_auth import is_istio_auth
from inventory.sources.istio_gateways import is_envoy_filter, is_istio_gateway
from inventory.sources.knative import is_kingress
from inventory.sources.mesh_routes import mesh_route_kind
from inventory.sources.raw import meta, text

# Object kinds whose change moves facts of every GPU node: only a full sync re-derives those.
NODE_WIDE_KINDS = frozenset({"sharing_config", "configmap", "gpu_operator_policy"})


class NeedsFullSync(Exception):
    """The change reaches further than a watch re-sync re-derives."""


def refuse_istio(delta: WatchDelta) -> None:
    """A VirtualService's authentication is read from Istio's policies, Gateways and
    EnvoyFilters with it (istio_auth.py), a Kourier route's from net-kourier's controller
    (knative.py): one of them that changed needs them all. A Sidecar is kept only while it
    limits egress (cni_policies.py): one that stops doing so is no object to update, but one
    to drop."""
    for obj in [*delta.changed, *delta.deleted]:
        group = (text(obj.get("apiVersion"), "") or "").rpartition("/")[0]
        sidecar = (group, obj.get("kind")) == ("networking.istio.io", "Sidecar")
        virtual_service = mesh_route_kind(obj) == ("networking.istio.io", "VirtualService")
        gateway = is_istio_gateway(obj) or is_envoy_filter(obj) or is_kingress(obj)
        if is_istio_auth(obj) or virtual_service or sidecar or gateway:
            where = f"{text(meta(obj).get('namespace'), '')}/{text(meta(obj).get('name'), '')}"
            raise NeedsFullSync(f"{obj.get('kind')} {where} changed: Istio routes are read whole")


def refuse_node_wide(key: tuple[str, str, str], gpu_stack_workload: bool) -> None:
    if key[0] in NODE_WIDE_KINDS or gpu_stack_workload:
        kind, namespace, name = key
        raise NeedsFullSync(f"{kind} {namespace}/{name} changed: it feeds every GPU node's facts")


def refuse_env_sources(
    cluster: Any,
    delta: WatchDelta,
    changed: snap.ClusterSnapshot,
    old_pods: dict[tuple[str, str], tuple],
) -> None:
    """A ConfigMap pods take env from (NVIDIA_VISIBLE_DEVICES for POD-011, any variable for
    POD-008's credentials) that changed, or a pod newly reading one the last full list did not
    keep: which pods it feeds, and its keys' facts, are known only to a full list. A pod whose
    references are as stored (a status update) asks for nothing new."""
    stored = set(
        ClusterObject.objects.filter(cluster=cluster, kind="env_configmap").values_list(
            "namespace", "name"
        )
    )
    seen = set()
    for obj in [*delta.changed, *delta.deleted]:
        if obj.get("kind") == "ConfigMap":
            metadata = obj.get("metadata") or {}
            key = (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
            if key in stored:
                raise NeedsFullSync(f"ConfigMap {key[0]}/{key[1]} that pods take env from changed")
            seen.add(key)
    known = stored | {(c.namespace, c.name) for c in changed.env_configmaps}
    # One the last full list did not keep, yet a stored pod takes env from: created since (a
    # pod waiting for it, or an optional reference), which a full list would keep.
    unkept = seen - known
    if taken := sorted(_stored_env_sources(cluster, unkept) & unkept):
        namespace, name = taken[0]
        raise NeedsFullSync(f"ConfigMap {namespace}/{name}, which a stored pod reads, changed")
    new = [p for p in changed.pods if not _same_references(p, old_pods)]
    missing = sorted(env_sources(new) - known)
    if missing:
        namespace, name = missing[0]
        raise NeedsFullSync(
            f"a pod takes env from ConfigMap {namespace}/{name}, "
            "which the last full list did not keep"
        )


def _stored_env_sources(cluster: Any, configmaps: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The ConfigMaps the stored pods of these ConfigMaps' namespaces take env from."""
    if not configmaps:
        return set()
    rows = Pod.objects.filter(
        cluster=cluster, namespace__in=sorted({ns for ns, _ in configmaps})
    ).values_list("namespace", "data__containers")
    found = set()
    for namespace, containers in rows.iterator(chunk_size=2000):
        for data in containers if isinstance(containers, list) else ():
            container = snap.from_dict(snap.Container, data)
            found |= {(namespace, name) for name in container_sources(container)}
    return found


def _same_references(pod: snap.Pod, old_pods: dict[tuple[str, str], tuple]) -> bool:
    old = old_pods.get((pod.namespace, pod.name))
    return old is not None and env_sources([old[4]]) == env_sources([pod])


def is_gpu_stack(canonical: str) -> bool:
    images = json.loads(canonical).get("images") or {}
    return any(component_of(image) for image in images.values())
