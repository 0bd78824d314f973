"""Which reader each raw Kubernetes object goes to, and what is kept of it. PURE.

normalise.py hands every validated, de-duplicated object here (Collected.add_tolerantly); the
objects are kept per kind, as snapshot dataclasses where a reader can read them alone, raw where
reading needs the whole snapshot (nodes, ConfigMaps, PersistentVolumes, Calico's and Istio's
objects read together). normalise.py then sorts them into a ClusterSnapshot.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from inventory.owners import qualified_kind
from inventory.snapshot import (
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
)
from inventory.snapshot_admission import AdmissionPolicy
from inventory.snapshot_dra import DraClaim, DraClaimTemplate, DraDeviceClass, DraSlice
from inventory.sources import dra, nvidia_runtime
from inventory.sources import objects as readers
from inventory.sources.admission import admission_policy_from, is_admission
from inventory.sources.calico_sets import NetSet, is_network_set, network_set
from inventory.sources.cni_policies import CALICO_GROUPS, cni_policies_from, cni_policy_kind
from inventory.sources.dra import DRA_KINDS
from inventory.sources.exposure import ingress_from, route_of, service_from
from inventory.sources.gpu_config import RawConfigMap
from inventory.sources.istio_auth import POLICY_LABELS, IstioObjects, is_istio_auth
from inventory.sources.istio_gateways import is_envoy_filter, is_istio_gateway
from inventory.sources.knative import is_kingress, kingress_from
from inventory.sources.object_refs import object_ref
from inventory.sources.owner_links import OwnerNotes
from inventory.sources.pods import pod_from_object
from inventory.sources.raw import name_of, text
from inventory.sources.service_accounts import service_account_from
from inventory.sources.snapshot_items import is_owned

# Controllers between a pod and its workload whose owner is always kept, a CronJob's to say it
# exists (inventory/owners.py); any other object's only on a pod's chain (owner_links.py).
OWNER_KINDS = ("ReplicaSet", "Job", "CronJob")
# Controllers kept as a Workload with their pod template: a workload with no pod running is
# judged from it (DESIGN §5). A Job only when nothing owns it: a CronJob's Jobs are the
# CronJob's template, another controller's are that controller's.
WORKLOAD_KINDS = ("DaemonSet", "Deployment", "StatefulSet", "CronJob", "Job")


@dataclass
class Collected:
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
    # Istio's Gateways (which pods serve a VirtualService) and EnvoyFilters, as written
    istio_gateways: list[dict[str, Any]] = field(default_factory=list)
    envoy_filters: list[dict[str, Any]] = field(default_factory=list)
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
        elif kind == "Ingress" and namespace and is_kingress(obj):
            # Knative's own Ingress: a route only for an ingress class that writes no other
            # object (Kourier's: inventory/sources/knative.py).
            if route := kingress_from(obj, namespace):
                self.ingresses.append(route)
        elif kind == "Ingress" and namespace:
            self.ingresses.append(ingress_from(obj, namespace))
        elif is_istio_auth(obj):
            self.istio_auth.append(obj)
        elif is_istio_gateway(obj):
            self.istio_gateways.append(obj)
        elif is_envoy_filter(obj):
            self.envoy_filters.append(obj)
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

    def istio(self, pods: list[Pod], listed: Collection[str]) -> IstioObjects:
        """What VirtualServices' authentication is read from (istio_auth.py). The policy kinds
        were read when some object of them was, or a live list read them to the end."""
        return IstioObjects(
            policies=self.istio_auth,
            gateways=self.istio_gateways,
            envoy_filters=self.envoy_filters,
            pods=pods,
            services=self.services,
            policies_read=bool(self.istio_auth) or any(k in listed for k in POLICY_LABELS),
        )

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
