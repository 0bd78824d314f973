"""SHARE-001 (tenants time-slicing one GPU) and SHARE-005 (a time-slicing config that hands out
several replicas to one container)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from inventory.snapshot import Node, SharingConfig
from inventory.sources.cloud_labels import gke_shares
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import (
    gpu_holdings,
    sorted_nodes,
)
from posture.rules.pairs import PairCause, pair_drafts
from posture.rules.registry import DRA_KINDS, MEMBERS_SHOWN, FindingDraft, check
from posture.rules.share.dra_names import env_reach, shared_name
from posture.rules.share.groups import tenant_pairs_sharing
from posture.rules.subjects import configmap_draft


@check(
    id="SHARE-001",
    needs=DRA_KINDS,
    title="Pods of different tenants time-slice the same physical GPU",
    severity="critical",
    scope="gpu",
    rationale=(
        "Time-slicing gives no memory, fault or performance isolation: replicas of one GPU are "
        "interleaved in time on the same device with nothing protecting one workload's memory "
        "from another's, a fatal fault ends every client, and DCGM-Exporter cannot attribute "
        "usage per pod. The NVIDIA device plugin hands out "
        "replicas without regard to tenant, so two tenants holding replicas of a time-sliced "
        "resource on one node can land on the same physical GPU and read each other's leftover "
        "memory or deny each other service. Intel's GPU plugin with `sharedDevNum` above 1 "
        "(more `gpu.intel.com/i915` or `xe` than the node has cards) time-shares a card the "
        "same way."
    ),
    remediation=(
        "Move the tenants onto separate node pools: label the nodes of each pool with their own "
        "`nvidia.com/device-plugin.config` and keep `sharing.timeSlicing` only in the config of "
        "a single-tenant pool, taint that pool per tenant class and give the tenant's pods the "
        "matching toleration and nodeSelector. Where tenants must share a node, use MIG GPU "
        "instances (`nvidia.com/mig.config` with one instance per tenant) or whole GPUs instead. "
        "Where a party reaches the GPU through NVIDIA_VISIBLE_DEVICES (its evidence's "
        '`mode_basis` starts "through NVIDIA_VISIBLE_DEVICES"), no pool change helps: '
        "remove the variable from that workload (POD-011) and make the node's toolkit ignore "
        "it (STACK-008)."
    ),
    mappings=("SP800-53:SC-4", "SP800-53:SC-39"),
)
def time_slicing_between_tenants(inputs: PostureInputs) -> Iterator[FindingDraft]:
    meetings = tenant_pairs_sharing(inputs, "time_slicing")
    yield from pair_drafts("SHARE-001", meetings, _share001_title)


def _share001_title(cause: PairCause) -> str:
    if reach := env_reach(cause):
        # Through the variable, not a time-slicing config: say so (a MIG node has none).
        return (
            f"{cause.who} share {shared_name(cause, cause.key)} in {cause.where}, {reach} "
            f"({cause.co_residence} co-residence)"
        )
    return (
        f"{cause.who} time-slice {shared_name(cause, cause.key)} in {cause.where} "
        f"({cause.co_residence} co-residence)"
    )


@check(
    id="SHARE-005",
    needs=("ConfigMap",),
    title="Time-slicing configured without failRequestsGreaterThanOne: true",
    severity="medium",
    scope="cluster",
    rationale=(
        "With `failRequestsGreaterThanOne` false (the device plugin's default) a container may "
        "request several replicas of a time-sliced GPU and receives them, often on the same "
        "physical GPU, while expecting a proportional share it never gets: time-slicing gives "
        "no guaranteed share per replica. Quotas and chargeback counted in replicas then "
        "overstate what tenants receive and let one workload crowd out others on the device. "
        "GKE's own GPU time-sharing (node label `cloud.google.com/gke-gpu-sharing-strategy`) "
        "has no such setting and needs none: GKE rejects a container that requests more than "
        "one shared GPU, so its nodes never count here (SHARE-001 still judges who shares)."
    ),
    remediation=(
        "In the device-plugin ConfigMap named in the evidence, set "
        "`sharing.timeSlicing.failRequestsGreaterThanOne: true` under the key shown (the "
        "GPU Operator reads it from the ConfigMap referenced by ClusterPolicy "
        "`devicePlugin.config.name`), then restart the device-plugin DaemonSet. Containers "
        "that request more than one shared replica are then rejected with "
        "UnexpectedAdmissionError and must ask for a whole GPU instead."
    ),
    mappings=("SP800-53:SC-6",),
)
def time_slicing_allows_multiple_replicas(inputs: PostureInputs) -> Iterator[FindingDraft]:
    configs = sorted(
        inputs.snapshot.sharing_configs, key=lambda c: (c.namespace, c.configmap, c.key)
    )
    # Whether the sync said which config each GPU node uses (older data did not).
    resolved = all(n.device_plugin_config_used is not None for n in sorted_nodes(inputs))
    for config in configs:
        if config.mode != "time_slicing" or config.fail_requests_greater_than_one:
            continue
        nodes = [n for n in sorted_nodes(inputs) if _uses_config(inputs, n, config)]
        # Each tenant's own exposure (DESIGN §6): the nodes reading the key that it holds GPUs on.
        nodes_held = Counter(t.slug for n in nodes for t in _gpu_tenants(inputs, n))
        yield _share005_draft(config, nodes, sorted(nodes_held), resolved, nodes_held)


def _keys_of(inputs: PostureInputs, config: SharingConfig) -> set[str]:
    keys = {
        c.key
        for c in inputs.snapshot.sharing_configs
        if (c.namespace, c.configmap) == (config.namespace, config.configmap)
    }
    for cm in inputs.snapshot.configmaps:
        if (cm.namespace, cm.name) == (config.namespace, config.configmap):
            keys.update(cm.keys)
    return keys


def _uses_config(inputs: PostureInputs, node: Node, config: SharingConfig) -> bool:
    """The node uses the config the sync found in force on it (its label, the plugin's or the
    ClusterPolicy's default, only where its plugin runs). Nodes synced before that was read:
    a labelled node uses the key its `nvidia.com/device-plugin.config` label names; an
    unlabelled time-sliced node falls back to the map's only key or its "default" key, unless
    GKE's own device plugin shares its GPUs."""
    if node.device_plugin_config_used is not None:
        return node.device_plugin_config_used == config.ref
    if node.device_plugin_config:
        return node.device_plugin_config == config.key
    if node.sharing_strategy != "time_slicing" or gke_shares(node.labels):
        return False  # GKE's device plugin reads no ConfigMap, and allows one shared GPU each
    return config.key == "default" or len(_keys_of(inputs, config)) == 1


def _gpu_tenants(inputs: PostureInputs, node: Node) -> list[TenantInfo]:
    """Tenants with an active pod holding a GPU device on the node."""
    found = {h.tenant.slug: h.tenant for h in gpu_holdings(inputs, node) if h.tenant}
    return [found[slug] for slug in sorted(found)]


def _share005_draft(
    config: SharingConfig,
    nodes: list[Node],
    tenants: list[str],
    resolved: bool,
    nodes_held: Counter[str],
) -> FindingDraft:
    """One finding per ConfigMap key, for every tenant on the nodes that read it."""
    evidence = {
        "configmap": f"{config.namespace}/{config.configmap}",
        "key": config.key,
        "field": f"data[{config.key!r}]: sharing.timeSlicing.failRequestsGreaterThanOne",
        "fail_requests_greater_than_one": "false or absent (the device plugin's default)",
        "replicas": config.replicas,
        "resources": list(config.resources),
        "rename_by_default": config.rename_by_default,
        "nodes_using_it": [n.name for n in nodes[:MEMBERS_SHOWN]],
        "node_count": len(nodes),
        "tenants_on_those_nodes": tenants,
    }
    if config.matched:
        # No ClusterPolicy or DaemonSet read names the map: say how it was taken as the config.
        evidence["config_matched"] = config.matched
    title = (
        f"Time-slicing config {config.namespace}/{config.configmap} key {config.key} "
        f"lets a container take several replicas ({config.replicas or '?'} per GPU)"
    )
    if not nodes and resolved:
        # Every node's config in force is known and none is this key: it shares nothing now.
        # The catalogue's medium stays (DESIGN §5): a node labelled for the key would take it,
        # and with no tenant on its nodes the finding weighs nothing in any tenant's risk.
        evidence["basis"] = "latent: no node's device plugin reads this key now"
        title += ", on no node now"
    return configmap_draft(
        "SHARE-005",
        config.namespace,
        config.configmap,
        tenants=tenants,
        evidence=evidence,
        key=config.key,
        title=title,
        exposure=len(nodes),
        tenant_exposures=dict(nodes_held),
    )
