"""Raw Kubernetes objects -> one ClusterSnapshot. PURE: no Django, no ORM, no network.

Every source (a kubectl JSON snapshot, the live API) hands its objects here, so the rules for
what a node runs and how it shares its GPUs live in one place. The per-kind readers are in
nodes.py, pods.py, gpu_config.py and objects.py (a node's facts from the whole snapshot:
snapshot_nodes.py); collected.py dispatches each object to its reader; this module validates,
reads what needs the whole snapshot, and sorts.
An object a reader cannot read (anything a tenant wrote may be hostile) is skipped with a
warning that names it; only an item that is not a Kubernetes object at all fails the snapshot.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import replace
from typing import Any

from inventory.owners import qualified_kind
from inventory.snapshot import ClusterSnapshot, ConfigMap, Ingress, Pod, gc_paused
from inventory.sources import nvidia_runtime
from inventory.sources.aws_auth import aws_auth_configmaps, aws_auth_warnings
from inventory.sources.calico_sets import with_network_sets
from inventory.sources.cni_config import cni_configmaps
from inventory.sources.cni_policies import cni_policy_kind, cni_policy_namespace
from inventory.sources.collected import Collected
from inventory.sources.dra_sharing import dra_index
from inventory.sources.env_configmaps import env_configmaps
from inventory.sources.gke_managed import gke_managed_namespaces
from inventory.sources.gpu_config import GpuConfigs, RawConfigMap, read_gpu_configs
from inventory.sources.images import image_version
from inventory.sources.istio_auth import authenticated_routes
from inventory.sources.knative import with_kourier_auth
from inventory.sources.openshift import openshift_namespaces
from inventory.sources.persistent_volumes import claim_node_paths, with_claim_paths
from inventory.sources.plugin_reach import gpu_nodes
from inventory.sources.pods import pod_from_template
from inventory.sources.quantity_warnings import pod_quantity_warnings
from inventory.sources.raw import mapping, text
from inventory.sources.snapshot_items import (
    SnapshotError,
    duplicate_warning,
    item_identity,
    item_kind,
)
from inventory.sources.snapshot_nodes import plugin_config_default, snapshot_nodes
from inventory.sources.unmounted_config import node_config_keys

__all__ = [
    "SnapshotError",
    "image_version",
    "normalise",
    "plugin_config_default",
    "pod_from_template",
]

# A message about Secrets, not a credential.
SECRET_WARNING = "Secret objects in the snapshot were ignored: gpuposture never reads Secrets"  # noqa: S105


def normalise(
    objects: Iterable[dict[str, Any]],
    *,
    configured_platform: Collection[str] = (),
    tenant_namespaces: Collection[str] = (),
    listed: Collection[str] = (),
    whole: bool = True,
) -> ClusterSnapshot:
    """Normalise the items of a `kubectl get ... -A -o json` List (already flattened).

    `configured_platform` (GPUPOSTURE_PLATFORM_NAMESPACES) and `tenant_namespaces` (the tenant
    registry's) decide with the objects themselves which namespaces are the platform's, and so
    which ConfigMaps may be GPU configuration (tenants.mapping.platform_namespaces).
    Raises SnapshotError for an item that is not a Kubernetes object; an object whose content
    cannot be read is skipped with a warning. The result does not depend on the order of the
    objects. `listed`: the kinds a live list read to the end, of which none is an answer.
    `whole`: the objects are all the source holds (a list or an export), so an owner they lack
    is not in the snapshot; False for a watch re-sync's changes (inventory.sources.owner_links).
    """
    with gc_paused():  # tens of thousands of dataclasses, no cycles among them
        return _normalise(objects, configured_platform, tenant_namespaces, listed, whole)


def _normalise(
    objects: Iterable[dict[str, Any]],
    configured_platform: Collection[str],
    tenant_namespaces: Collection[str],
    listed: Collection[str] = (),
    whole: bool = True,
) -> ClusterSnapshot:
    collected = Collected()
    collected.owner_notes.whole = whole
    counts: Counter[str] = Counter()
    seen: set[tuple[str, str | None, str]] = set()
    for index, obj in enumerate(objects):
        kind = item_kind(index, obj)
        counts[kind] += 1
        if kind == "Secret":
            continue  # never look further into a Secret, not even its metadata
        name, namespace = item_identity(index, kind, obj)
        # A CNI's own policy is told apart by its group (Calico's kind is `NetworkPolicy`).
        cni_kind = cni_policy_kind(obj)
        # Knative's Service and Volcano's Job are not the built-in of their kind's name.
        identity = (qualified_kind(kind, text(obj.get("apiVersion"), "") or ""), namespace, name)
        if cni_kind:
            identity = (cni_kind, cni_policy_namespace(obj), name)
        if identity in seen:
            collected.warnings.append(duplicate_warning(kind, namespace, name))
            continue
        seen.add(identity)
        collected.add_tolerantly(kind, obj, namespace, name)
    if counts["Secret"]:
        collected.warnings.append(SECRET_WARNING)
    # OpenShift's own namespaces, on a cluster its nodes prove OpenShift (openshift.py), join
    # the named ones: a namespace a tenant claims still never becomes the platform's.
    node_labels = [
        mapping(mapping(raw.get("metadata")).get("labels")) for raw in collected.raw_nodes
    ]
    openshift = openshift_namespaces(
        {ns.name for ns in collected.namespaces} | {w.namespace for w in collected.workloads},
        node_labels,
    )
    # GKE's managed DCGM namespace, as the pages find it (inventory.platform): its exporter's
    # pods give GKE's nodes their DCGM exporter (snapshot_nodes reads only platform pods).
    gke = gke_managed_namespaces(collected.workloads, collected.pods, node_labels)
    configs = read_gpu_configs(
        collected.raw_configmaps,
        workloads=collected.workloads,
        policies=collected.operator_policies,
        namespaces=collected.namespaces,
        configured_platform={*configured_platform, *openshift, *gke},
        tenant_namespaces=tenant_namespaces,
        bindings=collected.bindings,
        node_keys=node_config_keys(collected.raw_nodes),
        pods=collected.pods,
        nodes=gpu_nodes(collected.raw_nodes),
    )
    collected.warnings.extend(configs.warnings)
    # A snapshot file holding no DaemonSet may not have exported them (inventory.kinds_read).
    daemonsets_read = bool(counts["DaemonSet"]) or "DaemonSet" in listed
    return _snapshot(collected, configs, counts, daemonsets_read, listed)


def _snapshot(
    collected: Collected,
    configs: GpuConfigs,
    counts: Counter[str],
    daemonsets_read: bool,
    listed: Collection[str] = (),
) -> ClusterSnapshot:
    sharing_configs = sorted(
        configs.sharing_configs, key=lambda c: (c.namespace, c.configmap, c.key)
    )
    claims = claim_node_paths(collected.persistent_volumes)
    handlers, resolve = collected.runtime_handlers, nvidia_runtime.with_runtime_handler
    checked = collected.owner_notes.pods_checked(collected.pods)  # what holds each one's owner
    pods = sorted(
        (resolve(with_claim_paths(p, claims), handlers) for p in checked),
        key=lambda p: (p.namespace, p.name),
    )
    workloads = [
        replace(w, template=with_claim_paths(w.template, claims)) if w.template else w
        for w in collected.workloads
    ]
    nodes, warnings = snapshot_nodes(
        collected.raw_nodes,
        collected.workloads,
        collected.operator_policies,
        pods,
        sharing_configs,
        configs.unreadable,
        dra_index(
            collected.dra_claims,
            collected.dra_slices,
            collected.dra_device_classes,
            collected.dra_claim_templates,
            configs.platform,
        ),
        tenant_claimed=configs.claimed,
        mig_parted=configs.configmaps,
        daemonsets_read=daemonsets_read,
    )
    aws_auth = aws_auth_configmaps(collected.raw_configmaps)
    collected.warnings += [*warnings, *pod_quantity_warnings(pods), *aws_auth_warnings(aws_auth)]
    return ClusterSnapshot(
        nodes=tuple(sorted(nodes, key=lambda n: n.name)),
        pods=tuple(pods),
        namespaces=tuple(sorted(collected.namespaces, key=lambda n: n.name)),
        quotas=tuple(sorted(collected.quotas, key=lambda q: (q.namespace, q.name))),
        configmaps=tuple(
            sorted(
                [
                    *configs.configmaps,
                    *_cni_configmaps(collected.raw_configmaps, configs),
                    *aws_auth,
                ],
                key=lambda c: (c.namespace, c.name),
            )
        ),
        sharing_configs=tuple(sharing_configs),
        workloads=tuple(sorted(workloads, key=lambda w: (w.namespace, w.name, w.kind))),
        services=tuple(sorted(collected.services, key=lambda s: (s.namespace, s.name))),
        roles=tuple(sorted(collected.roles, key=lambda r: (r.namespace or "", r.name, r.kind))),
        bindings=tuple(
            sorted(collected.bindings, key=lambda b: (b.namespace or "", b.name, b.kind))
        ),
        ingresses=tuple(
            sorted(
                _routes(collected, pods, listed),
                key=lambda i: (i.namespace, i.kind != "Ingress", i.name),
            )
        ),
        network_policies=tuple(
            sorted(
                with_network_sets(
                    collected.network_policies,
                    collected.calico_raw,
                    collected.network_sets,
                    collected.namespaces,
                ),
                key=lambda n: (n.namespace, n.name),
            )
        ),
        gpu_operator_policies=tuple(sorted(collected.operator_policies, key=lambda p: p.name)),
        owners=tuple(
            sorted(
                collected.owner_notes.links(collected.owners, pods, collected.workloads),
                key=lambda o: (o.namespace, o.kind, o.name),
            )
        ),
        env_configmaps=tuple(env_configmaps(pods, collected.raw_configmaps)),
        dra_claims=tuple(sorted(collected.dra_claims, key=lambda c: (c.namespace, c.name))),
        dra_claim_templates=tuple(
            sorted(collected.dra_claim_templates, key=lambda c: (c.namespace, c.name))
        ),
        dra_device_classes=tuple(sorted(collected.dra_device_classes, key=lambda c: c.name)),
        dra_slices=tuple(sorted(collected.dra_slices, key=lambda s: s.name)),
        admission_policies=tuple(
            sorted(collected.admission_policies, key=lambda p: (p.kind, p.namespace, p.name))
        ),
        service_accounts=tuple(
            sorted(collected.service_accounts, key=lambda a: (a.namespace, a.name))
        ),
        counts=dict(sorted(counts.items())),
        warnings=tuple(sorted(set(collected.warnings))),
        platform_namespaces=tuple(sorted(configs.platform)),
    )


def _cni_configmaps(raw: list[RawConfigMap], configs: GpuConfigs) -> list[ConfigMap]:
    """The CNI settings kept (cni_config.py), but for a map already kept as GPU configuration."""
    kept = {(c.namespace, c.name) for c in configs.configmaps}
    return [c for c in cni_configmaps(raw) if (c.namespace, c.name) not in kept]


def _routes(collected: Collected, pods: list[Pod], listed: Collection[str]) -> list[Ingress]:
    """The routes with what authenticates them: Istio's policies in front of each
    VirtualService, net-kourier's external authorization in front of Kourier's routes."""
    istio = collected.istio(pods, listed)
    routes = authenticated_routes(collected.ingresses, collected.virtual_services, istio)
    configmaps = [(c.namespace, c.name, c.data) for c in collected.raw_configmaps]
    return with_kourier_auth(routes, pods, configmaps)
