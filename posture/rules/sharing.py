"""SHARE-*: how tenants share physical GPUs (DESIGN §2, §3, §5)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from functools import partial
from typing import Any

from inventory.snapshot import Node, SharingConfig
from posture.inputs import PostureInputs, TenantInfo, TrustClassInfo
from posture.rules.common import (
    PLATFORM,
    GpuHolding,
    gpu_holdings,
    holding_evidence,
    per_tenant,
    platform_trust_class,
    pools_by_mode,
    sorted_nodes,
)
from posture.rules.registry import FindingDraft, check
from tenants.policy import is_mig_resource, may_share

# Modes in which one physical GPU (or MIG device) serves several pods at once. exclusive and
# mig_gi give each pod its own device or hardware partition, so there is no pair to judge.
CONCURRENT_MODES = ("mig_ci", "vgpu_fixed", "vgpu_equal", "vgpu_best_effort", "mps", "time_slicing")
# Who holds one pool on a node: tenant slug ("" for platform pods) -> trust class, holdings.
Parties = dict[str, tuple[TrustClassInfo, list[GpuHolding]]]


def _physical_units(node: Node, pool: str) -> int | None:
    """How many physical devices back a pool: GPUs from nvidia.com/gpu.count (capacity is
    multiplied by the replicas), MIG devices from the capacity divided by the replicas."""
    if pool == "nvidia.com/gpu" and node.gpu_count:
        return node.gpu_count
    capacity = node.gpu_capacity.get(pool, 0) + node.gpu_capacity.get(f"{pool}.shared", 0)
    replicas = node.time_slicing_replicas or 1
    return capacity // replicas if capacity >= replicas else None


def co_residence(node: Node, pool: str, own: int, others: int) -> tuple[str, str]:
    """("certain" | "possible", why) for one party's replicas sharing a device with others'.

    Pigeonhole: kept apart, the party needs ceil(own/R) devices to itself and the others at
    least ceil(others/R); if that exceeds the devices there are, they must meet on one.
    """
    units = _physical_units(node, pool)
    per_unit = node.time_slicing_replicas
    kind = "MIG device" if is_mig_resource(pool) else "physical GPU"
    if units == 1:
        return "certain", f"node {node.name} has a single {kind} behind {pool}"
    if units is None:
        return "possible", f"the number of {kind}s behind {pool} on {node.name} is unknown"
    if not per_unit:
        return "possible", f"replicas per {kind} unknown; {units} {kind}s on {node.name}"
    needed = math.ceil(own / per_unit) + math.ceil(others / per_unit)
    if needed > units:
        return "certain", (
            f"{own} + {others} replicas at {per_unit} per {kind} need {needed} {kind}s to stay "
            f"apart; {node.name} has {units}"
        )
    return "possible", (
        f"{own} + {others} replicas at {per_unit} per {kind} fit on {units} {kind}s without "
        f"mixing, but the device plugin does not keep tenants apart"
    )


def _by_tenant(holdings: list[GpuHolding]) -> dict[str, list[GpuHolding]]:
    grouped: dict[str, list[GpuHolding]] = {}
    for holding in holdings:
        if holding.tenant is not None:
            grouped.setdefault(holding.tenant.slug, []).append(holding)
    return dict(sorted(grouped.items()))


def _node_facts(node: Node, pool: str, mode: str) -> dict[str, Any]:
    return {
        "node": node.name,
        "gpu_model": node.gpu_model,
        "gpu_count": node.gpu_count,
        "node_sharing_strategy": node.sharing_strategy,
        "time_slicing_replicas": node.time_slicing_replicas,
        "device_plugin_config": node.device_plugin_config,
        "resource": pool,
        "sharing_mode": mode,
    }


def _replicas(holdings: list[GpuHolding]) -> int:
    return sum(h.count for h in holdings)


@check(
    id="SHARE-001",
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
        "memory or deny each other service."
    ),
    remediation=(
        "Move the tenants onto separate node pools: label the nodes of each pool with their own "
        "`nvidia.com/device-plugin.config` and keep `sharing.timeSlicing` only in the config of "
        "a single-tenant pool, taint that pool per tenant class and give the tenant's pods the "
        "matching toleration and nodeSelector. Where tenants must share a node, use MIG GPU "
        "instances (`nvidia.com/mig.config` with one instance per tenant) or whole GPUs instead."
    ),
    mappings=("SP800-53:SC-4", "SP800-53:SC-39"),
)
def time_slicing_between_tenants(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for node in sorted_nodes(inputs):
        for (pool, mode), holdings in pools_by_mode(gpu_holdings(inputs, node)).items():
            tenants = _by_tenant(holdings)
            if mode != "time_slicing" or len(tenants) < 2:
                continue
            for slug, own in tenants.items():
                yield _share001_draft(inputs, node, pool, slug, own, tenants)


def _share001_draft(
    inputs: PostureInputs,
    node: Node,
    pool: str,
    slug: str,
    own: list[GpuHolding],
    tenants: dict[str, list[GpuHolding]],
) -> FindingDraft:
    others = {other: hs for other, hs in tenants.items() if other != slug}
    other_replicas = sum(_replicas(hs) for hs in others.values())
    verdict, why = co_residence(node, pool, _replicas(own), other_replicas)
    evidence = {
        **_node_facts(node, pool, "time_slicing"),
        "co_residence": verdict,
        "co_residence_reason": why,
        "tenant": slug,
        "tenant_pods": holding_evidence(own),
        "tenant_replicas": _replicas(own),
        "other_tenants": [
            {
                "tenant": other,
                "trust_class": inputs.tenants_by_slug[other].trust_class.slug,
                "pods": holding_evidence(hs),
                "replicas": _replicas(hs),
            }
            for other, hs in others.items()
        ],
    }
    return FindingDraft(
        check_id="SHARE-001",
        tenant=slug,
        subject_kind="Node",
        subject_namespace="",
        subject_name=node.name,
        evidence=evidence,
        key=pool,
        title=(
            f"Tenant {slug} time-slices {pool} on node {node.name} with "
            f"{', '.join(others)} ({verdict} co-residence)"
        ),
    )


@check(
    id="SHARE-003",
    title="A tenant shares a GPU by a mode its or the other tenant's trust class forbids",
    severity="high",
    scope="gpu",
    rationale=(
        "Two tenants may share a physical GPU only by a mode both trust classes allow "
        "(DESIGN §3): time-slicing and MPS give no fault isolation and time-slicing no memory "
        "isolation, compute instances of one MIG GPU instance share memory, and vGPU best "
        "effort gives no performance isolation. A class that forbids the mode was assigned "
        "because its workloads must not be exposed to, or expose, the other party that way."
    ),
    remediation=(
        "Schedule the tenant on nodes whose sharing mode its class allows: exclusive GPUs "
        "(no `sharing` section in the node's device-plugin config) or MIG GPU instances "
        "(`nvidia.com/mig.config` giving each tenant its own instances, mig strategy mixed). "
        "Enforce it with a per-class NoSchedule taint on the node pool and a matching "
        "toleration and nodeSelector on the tenant's workloads. If the sharing is intended, "
        "change the tenant's trust class through review rather than tolerating the finding."
    ),
    mappings=("SP800-53:SC-39", "SP800-53:AC-4"),
)
def forbidden_sharing_mode(inputs: PostureInputs) -> Iterator[FindingDraft]:
    platform = platform_trust_class(inputs)
    for node in sorted_nodes(inputs):
        for (pool, mode), holdings in pools_by_mode(gpu_holdings(inputs, node)).items():
            if mode not in CONCURRENT_MODES:
                continue
            parties = _parties(holdings, platform)
            for slug in sorted(p for p in parties if p):
                draft = _share003_draft(node, pool, mode, slug, parties)
                if draft is not None:
                    yield draft


def _parties(holdings: list[GpuHolding], platform: TrustClassInfo) -> Parties:
    """Tenant slug (or "" for pods no tenant owns: never a slug) -> its class and holdings."""
    parties: Parties = {}
    for h in holdings:
        name, cls = (h.tenant.slug, h.tenant.trust_class) if h.tenant else ("", platform)
        parties.setdefault(name, (cls, []))[1].append(h)
    return parties


def _violations(
    node: Node, pool: str, mode: str, slug: str, parties: Parties
) -> list[dict[str, Any]]:
    """Each peer the tenant may not share this pool with by `mode`, and the rule that says so."""
    own_class, own = parties[slug]
    violations = []
    for peer, (peer_class, theirs) in sorted(parties.items()):
        decision = may_share(own_class, peer_class, mode)
        if peer == slug or decision.allowed:
            continue
        verdict, why = co_residence(node, pool, _replicas(own), _replicas(theirs))
        violations.append(
            {
                "peer": peer or PLATFORM,
                "peer_is_platform": peer == "",
                "peer_trust_class": peer_class.slug,
                "rule": decision.rule,
                "forbidden_by": list(decision.forbidden_by),
                "co_residence": verdict,
                "co_residence_reason": why,
                "peer_pods": holding_evidence(theirs),
            }
        )
    return violations


def _share003_draft(
    node: Node, pool: str, mode: str, slug: str, parties: Parties
) -> FindingDraft | None:
    violations = _violations(node, pool, mode, slug, parties)
    if not violations:
        return None
    own_class, own = parties[slug]
    evidence = {
        **_node_facts(node, pool, mode),
        "tenant": slug,
        "trust_class": own_class.slug,
        "tenant_pods": holding_evidence(own),
        "violations": violations,
    }
    peers = ", ".join(f"{v['peer']} ({v['peer_trust_class']})" for v in violations)
    return FindingDraft(
        check_id="SHARE-003",
        tenant=slug,
        subject_kind="Node",
        subject_namespace="",
        subject_name=node.name,
        evidence=evidence,
        key=f"{pool}:{mode}",
        title=f"Tenant {slug} ({own_class.slug}) shares {pool} by {mode} with {peers}",
    )


@check(
    id="SHARE-005",
    title="Time-slicing configured without failRequestsGreaterThanOne: true",
    severity="medium",
    scope="cluster",
    rationale=(
        "With `failRequestsGreaterThanOne` false (the device plugin's default) a container may "
        "request several replicas of a time-sliced GPU and receives them, often on the same "
        "physical GPU, while expecting a proportional share it never gets: time-slicing gives "
        "no guaranteed share per replica. Quotas and chargeback counted in replicas then "
        "overstate what tenants receive and let one workload crowd out others on the device."
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
    for config in configs:
        if config.mode != "time_slicing" or config.fail_requests_greater_than_one:
            continue
        nodes = [n for n in sorted_nodes(inputs) if _uses_config(inputs, n, config)]
        tenants = {t.slug: t for n in nodes for t in _gpu_tenants(inputs, n)}
        make = partial(_share005_draft, config, nodes, sorted(tenants))
        yield from per_tenant([tenants[slug] for slug in sorted(tenants)], make)


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
    """A labelled node uses the key its `nvidia.com/device-plugin.config` label names; an
    unlabelled time-sliced node falls back to the map's only key or its "default" key."""
    if node.device_plugin_config:
        return node.device_plugin_config == config.key
    if node.sharing_strategy != "time_slicing":
        return False
    return config.key == "default" or len(_keys_of(inputs, config)) == 1


def _gpu_tenants(inputs: PostureInputs, node: Node) -> list[TenantInfo]:
    """Tenants with an active pod holding a GPU device on the node."""
    found = {h.tenant.slug: h.tenant for h in gpu_holdings(inputs, node) if h.tenant}
    return [found[slug] for slug in sorted(found)]


def _share005_draft(
    config: SharingConfig, nodes: list[Node], tenants: list[str], slug: str | None
) -> FindingDraft:
    evidence = {
        "configmap": f"{config.namespace}/{config.configmap}",
        "key": config.key,
        "field": f"data[{config.key!r}]: sharing.timeSlicing.failRequestsGreaterThanOne",
        "fail_requests_greater_than_one": "false or absent (the device plugin's default)",
        "replicas": config.replicas,
        "resources": list(config.resources),
        "rename_by_default": config.rename_by_default,
        "nodes_using_it": [n.name for n in nodes],
        "tenants_on_those_nodes": tenants,
    }
    return FindingDraft(
        check_id="SHARE-005",
        tenant=slug,
        subject_kind="ConfigMap",
        subject_namespace=config.namespace,
        subject_name=config.configmap,
        evidence=evidence,
        key=config.key,
        title=(
            f"Time-slicing config {config.namespace}/{config.configmap} key {config.key} "
            f"lets a container take several replicas ({config.replicas or '?'} per GPU)"
        ),
    )
