"""What a watch re-sync reads back from the stored inventory to derive a node's facts as a full
sync would: the workloads, GPU configuration and ClusterPolicies, the DRA objects, and the
namespaces labelled for tenants (inventory.sync_delta)."""

from __future__ import annotations

from typing import Any

from inventory import snapshot as snap
from inventory.dra_devices import DraIndex
from inventory.models import ClusterObject
from inventory.sources.configs import unreadable_configs
from inventory.sources.dra_sharing import dra_index
from inventory.sources.gpu_config import policy_unreadable
from tenants.mapping import TENANT_LABEL


def labelled_for_tenants(cluster: Any) -> frozenset[str]:
    """The stored namespaces labelled `gpuposture.io/tenant` (any value: claimed, as
    tenants.mapping.platform_namespaces reads it)."""
    rows = ClusterObject.objects.filter(
        cluster=cluster, kind="namespace", data__labels__has_key=TENANT_LABEL
    )
    return frozenset(rows.values_list("name", flat=True))


def stored_dra(cluster: Any, platform: frozenset[str]) -> DraIndex | None:
    """The cluster's stored DRA claims, slices, classes and templates, indexed with the
    platform namespaces as the node page reads them (inventory.dra_node)."""
    kinds = {
        "dra_claim": snap.DraClaim,
        "dra_slice": snap.DraSlice,
        "dra_device_class": snap.DraDeviceClass,
        "dra_claim_template": snap.DraClaimTemplate,
    }
    found: dict[str, list] = {kind: [] for kind in kinds}
    rows = ClusterObject.objects.filter(cluster=cluster, kind__in=list(kinds))
    for kind, data in rows.values_list("kind", "data"):
        found[kind].append(snap.from_dict(kinds[kind], data))
    return dra_index(
        found["dra_claim"],
        found["dra_slice"],
        found["dra_device_class"],
        found["dra_claim_template"],
        platform,
    )


def stored_node_inputs(
    cluster: Any,
) -> tuple[
    list, list, list[snap.UnreadableConfig], list[snap.GpuOperatorPolicy], list[snap.ConfigMap]
]:
    """The stored workloads, sharing configs, unreadable GPU configuration, ClusterPolicies and
    mig-parted ConfigMaps a node's facts are derived from."""
    kinds = ("workload", "sharing_config", "configmap", "gpu_operator_policy")
    objects = ClusterObject.objects.filter(cluster=cluster, kind__in=kinds)
    workloads, configs, unreadable, policies = [], [], [], []
    mig_parted: list[snap.ConfigMap] = []
    for kind, data in objects.values_list("kind", "data"):
        if kind == "gpu_operator_policy":
            policies.append(snap.from_dict(snap.GpuOperatorPolicy, data))
        if kind == "workload":
            workloads.append(snap.from_dict(snap.Workload, data))
        elif kind == "sharing_config":
            configs.append(snap.from_dict(snap.SharingConfig, data))
        elif kind == "configmap":
            configmap = snap.from_dict(snap.ConfigMap, data)
            unreadable += unreadable_configs(configmap)
            if configmap.purpose == "mig_parted":
                mig_parted.append(configmap)
        elif data.get("error"):
            unreadable.append(policy_unreadable(policies[-1]))
    return workloads, configs, unreadable, policies, mig_parted
