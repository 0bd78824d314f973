"""Raw Kubernetes objects -> one ClusterSnapshot. PURE: no Django, no ORM, no network.

Every source (a kubectl JSON snapshot, the live API) hands its objects here, so the rules for
what a node runs and how it shares its GPUs live in one place. The per-kind readers are in
nodes.py, pods.py, gpu_config.py and objects.py (a node's facts from the whole snapshot:
snapshot_nodes.py); this module validates, dispatches and sorts.
An object a reader cannot read (anything a tenant wrote may be hostile) is skipped with a
warning that names it; only an item that is not a Kubernetes object at all fails the snapshot.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from inventory.owners import qualified_kind
from inventory.snapshot import (
    ClusterSnapshot,
    ConfigMap,
    GpuOperatorPolicy,
    Ingress,
    Namespace,
    NetworkPolicy,
    OwnerLink,
    Pod,
    ResourceQuota,
    Role,
    RoleBinding,
    Service,
    ServiceAccount,
    Workload,
    gc_paused,
)
from inventory.snapshot_admission import AdmissionPolicy
from inventory.snapshot_dra import DraClaim, DraClaimTemplate, DraDeviceClass, DraSlice
from inventory.sources import dra, nvidia_runtime
from inventory.sources import objects as readers
from inventory.sources.admission import admission_policy_from, is_admission
from inventory.sources.aws_auth import aws_auth_configmaps, aws_auth_warnings
from inventory.sources.calico_sets import NetSet, is_network_set, network_set, with_network_sets
from inventory.sources.cni_config import cni_configmaps
from inventory.sources.cni_policies import (
    CALICO_GROUPS,
    cni_policies_from,
    cni_policy_kind,
    cni_policy_namespace,
)
from inventory.sources.dra import DRA_KINDS
from inventory.sources.dra_sharing import dra_index
from inventory.sources.env_configmaps import env_configmaps
from inventory.sources.exposure import ingress_from, route_of, service_from
from inventory.sources.gke_managed import gke_managed_namespaces
from inventory.sources.gpu_config import GpuConfigs, RawConfigMap, read_gpu_configs
from inventory.sources.images import image_version
from inventory.sources.istio_auth import authenticated_routes, is_istio_auth
from inventory.sources.object_refs import object_ref
from inventory.sources.openshift import openshift_namespaces
from inventory.sources.owner_links import OwnerNotes
from inventory.sources.persistent_volumes import claim_node_paths, with_claim_paths
from inventory.sources.plugin_reach import gpu_nodes
from inventory.sources.pods import pod_from_object, pod_from_template
from inventory.sources.quantity_warnings import pod_quantity_warnings
from inventory.sources.raw import mapping, name_of, text
from inventory.sources.service_accounts import service_account_from
from inventory.sources.snapshot_items import (
    SnapshotError,
    duplicate_warning,
    is_owned,
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

# Controllers between a pod and its workload whose owner is always kept, a CronJob's to say it
# exists (inventory/owners.py); any other object's only on a pod's chain (owner_links.py).
OWNER_KINDS = ("ReplicaSet", "Job", "CronJob")
# Controllers kept as a Workload with their pod template: a workload with no pod running is
# judged from it (DESIGN §5). A Job only when nothing owns it: a CronJob's Jobs are the
# CronJob's template, another controller's are that controller's.
WORKLOAD_KINDS = ("DaemonSet", "Deployment", "StatefulSet", "CronJob", "Job")
# A message about Secrets, not a credential.
SECRET_WARNING = "Secret objects in the snapshot were ignored: gpuposture never reads Secrets"  # noqa: S105


@dataclass
class _Collected:
    """Objects kept so far, before sorting."""

    raw_nodes: list[dict[str, Any]] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)
    quotas: list[ResourceQuota] = field(default_factory=list)
    raw_configmaps: list[RawConfigMap] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)
    roles: list[Role] = field(default_factory=list)
    bindings: list[RoleBinding] = field(default_factory=list)
    ingresses: list[Ingress] = field(default_factory=list)
    network_policies: list[NetworkPolicy] = field(default_factory=list)
    operator_policies: list[GpuOperatorPolicy] = field(default_factory=list)
    owners: list[OwnerLink] = field(default_factory=list)
    owner_notes: OwnerNotes = field(default_factory=OwnerNotes)  # every object's controller
    dra_claims: list[DraClaim] = field(default_factory=list)
    dra_claim_templates: list[DraClaimTemplate] = field(default_factory=list)
    dra_device_classes: list[DraDeviceClass] = field(default_factory=list)
    dra_slices: list[DraSlice] = field(default_factory=list)
    admission_policies: list[AdmissionPolicy] = field(default_factory=list)
    persistent_volumes: list[dict[str, Any]] = field(default_factory=list)
    service_accounts: list[ServiceAccount] = field(default_factory=list)
    # Istio's VirtualServices as written and its auth policies, read together (istio_auth.py)
    virtual_services: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    istio_auth: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Calico's policies as written and its network sets, read together (calico_sets.py)
    calico_raw: list[dict[str, Any]] = field(default_factory=list)
    network_sets: list[NetSet] = field(default_factory=list)
    # RuntimeClass name -> handler: which pods run under NVIDIA's runtime (nvidia_runtime.py)
    runtime_handlers: dict[str, str] = field(default_factory=dict)

    def add(self, kind: str, obj: dict[str, Any], namespace: str | None) -> None:
        self.owner_notes.note(kind, obj)
        if is_admission(obj):  # by API group first: Kyverno's ClusterPolicy is not NVIDIA's
            self.admission_policies.append(admission_policy_from(obj))
        elif cni_policy_kind(obj):  # by API group first: Calico's NetworkPolicy is not ours
            self.network_policies.extend(cni_policies_from(obj))
            if (cni_policy_kind(obj) or "").partition("/")[0] in CALICO_GROUPS:
                self.calico_raw.append(obj)
        elif is_network_set(obj):
            self.network_sets.append(network_set(obj))
        elif kind == "Node":
            self.raw_nodes.append(obj)  # read last: a node's facts need its pods and configs
        elif kind == "Pod" and namespace:
            self.pods.append(pod_from_object(obj, namespace))
        elif kind == "Namespace":
            self.namespaces.append(readers.namespace_from(obj))
        elif kind == "ResourceQuota" and namespace:
            self.quotas.append(readers.quota_from(obj, namespace))
        elif kind == "ConfigMap" and namespace:
            # Read last: whether it is GPU configuration depends on the operator and DaemonSets.
            self.raw_configmaps.append(RawConfigMap(namespace, name_of(obj), obj.get("data")))
        elif kind in WORKLOAD_KINDS + OWNER_KINDS and namespace:
            self._add_controller(kind, obj, namespace)
        elif kind == "Service" and namespace and _builtin(kind, obj):
            self.services.append(service_from(obj, namespace))
        elif kind in ("Role", "ClusterRole"):
            self.roles.append(readers.role_from(obj, namespace))
        elif kind in ("RoleBinding", "ClusterRoleBinding"):
            self.bindings.append(readers.binding_from(obj, namespace))
        elif kind == "Ingress" and namespace:
            self.ingresses.append(ingress_from(obj, namespace))
        elif is_istio_auth(obj):
            self.istio_auth.append(obj)
        elif namespace and (route := route_of(obj, namespace)):
            self.ingresses.append(route)
            if route.kind == "VirtualService":
                self.virtual_services[(namespace, route.name)] = obj
        elif kind == "NetworkPolicy" and namespace:
            self.network_policies.append(readers.network_policy_from(obj, namespace))
        elif kind == "ClusterPolicy":
            self.operator_policies.append(readers.gpu_operator_policy_from(obj))
        elif kind in DRA_KINDS:
            self._add_dra(kind, obj, namespace)
        elif kind == "PersistentVolume":
            self.persistent_volumes.append(obj)  # only its node path reaches a pod's claim
        elif kind == "ServiceAccount" and namespace:
            self.service_accounts.append(service_account_from(obj, namespace))
        elif nvidia_runtime.is_runtime_class(kind, obj):
            self.runtime_handlers.update([nvidia_runtime.runtime_class_handler(obj)])

    def _add_controller(self, kind: str, obj: dict[str, Any], namespace: str) -> None:
        # Only the built-in ones: Volcano's Job is another resource (inventory.owners).
        builtin = _builtin(kind, obj)
        if kind in OWNER_KINDS and builtin:
            self.owners.append(readers.owner_link_from(obj, namespace))
        if kind in ("DaemonSet", "Deployment"):
            self.workloads.append(readers.workload_from(obj, namespace))
        elif builtin and kind in WORKLOAD_KINDS and not (kind == "Job" and is_owned(obj)):
            # Kept for their pod template only: without one there is nothing to judge.
            workload = readers.workload_from(obj, namespace)
            if workload.template is not None:
                self.workloads.append(workload)

    def _add_dra(self, kind: str, obj: dict[str, Any], namespace: str | None) -> None:
        if kind == "ResourceClaim" and namespace:
            self.dra_claims.append(dra.claim_from(obj, namespace))
        elif kind == "ResourceClaimTemplate" and namespace:
            self.dra_claim_templates.append(dra.claim_template_from(obj, namespace))
        elif kind == "DeviceClass":
            self.dra_device_classes.append(dra.device_class_from(obj))
        elif kind == "ResourceSlice":
            self.dra_slices.append(dra.slice_from(obj))

    def add_tolerantly(
        self, kind: str, obj: dict[str, Any], namespace: str | None, name: str
    ) -> None:
        """add(), skipping an object no reader can read with a warning that names it."""
        try:
            self.add(kind, obj, namespace)
        except Exception as exc:  # noqa: BLE001 - one unreadable object must not stop the sync
            reason = f"{type(exc).__name__}: {exc}"[:300]
            where = object_ref(kind, namespace, name)  # so a viewer's redaction hides it
            self.warnings.append(f"{where} could not be read and was skipped: {reason}")
            if kind == "ClusterPolicy" and not is_admission(obj):
                # The GPU Operator's configuration: its nodes must say it is unknown (STACK-007).
                self.operator_policies.append(GpuOperatorPolicy(name=name, error=reason))


def _builtin(kind: str, obj: dict[str, Any]) -> bool:
    """Not a custom resource sharing a built-in kind's name (inventory.owners.qualified_kind):
    Knative's Service is no core Service, Volcano's Job no batch Job."""
    return qualified_kind(kind, text(obj.get("apiVersion"), "") or "") == kind


def normalise(
    objects: Iterable[dict[str, Any]],
    *,
    configured_platform: Collection[str] = (),
    tenant_namespaces: Collection[str] = (),
    listed: Collection[str] = (),
) -> ClusterSnapshot:
    """Normalise the items of a `kubectl get ... -A -o json` List (already flattened).

    `configured_platform` (GPUPOSTURE_PLATFORM_NAMESPACES) and `tenant_namespaces` (the tenant
    registry's) decide with the objects themselves which namespaces are the platform's, and so
    which ConfigMaps may be GPU configuration (tenants.mapping.platform_namespaces).
    Raises SnapshotError for an item that is not a Kubernetes object; an object whose content
    cannot be read is skipped with a warning. The result does not depend on the order of the
    objects. `listed`: the kinds a live list read to the end, of which none is an answer.
    """
    with gc_paused():  # tens of thousands of dataclasses, no cycles among them
        return _normalise(objects, configured_platform, tenant_namespaces, listed)


def _normalise(
    objects: Iterable[dict[str, Any]],
    configured_platform: Collection[str],
    tenant_namespaces: Collection[str],
    listed: Collection[str] = (),
) -> ClusterSnapshot:
    collected = _Collected()
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
    return _snapshot(collected, configs, counts, daemonsets_read)


def _snapshot(
    collected: _Collected, configs: GpuConfigs, counts: Counter[str], daemonsets_read: bool
) -> ClusterSnapshot:
    sharing_configs = sorted(
        configs.sharing_configs, key=lambda c: (c.namespace, c.configmap, c.key)
    )
    claims = claim_node_paths(collected.persistent_volumes)
    handlers, resolve = collected.runtime_handlers, nvidia_runtime.with_runtime_handler
    pods = sorted(
        (resolve(with_claim_paths(p, claims), handlers) for p in collected.pods),
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
                authenticated_routes(
                    collected.ingresses, collected.virtual_services, collected.istio_auth
                ),
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
