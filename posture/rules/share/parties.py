"""Who holds a GPU resource on a node and whether two parties' replicas must meet on one device:
the helpers the SHARE- checks share."""

from __future__ import annotations

import math
from typing import Any

from inventory.snapshot import Node
from posture.inputs import TrustClassInfo
from posture.rules.common import GpuHolding
from posture.rules.registry import FindingDraft
from tenants.policy import is_mig_resource

# Modes in which one physical GPU (or MIG device) serves several pods at once. exclusive and
# mig_gi give each pod its own device or hardware partition, so there is no pair to judge.
CONCURRENT_MODES = ("mig_ci", "vgpu_fixed", "vgpu_equal", "vgpu_best_effort", "mps", "time_slicing")
# Who holds one pool on a node: tenant slug ("" for platform pods) -> trust class, holdings.
Parties = dict[str, tuple[TrustClassInfo, list[GpuHolding]]]


def physical_units(node: Node, pool: str) -> int | None:
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
    units = physical_units(node, pool)
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


def by_tenant(holdings: list[GpuHolding]) -> dict[str, list[GpuHolding]]:
    grouped: dict[str, list[GpuHolding]] = {}
    for holding in holdings:
        if holding.tenant is not None:
            grouped.setdefault(holding.tenant.slug, []).append(holding)
    return dict(sorted(grouped.items()))


def node_facts(node: Node, pool: str, mode: str) -> dict[str, Any]:
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


def replicas(holdings: list[GpuHolding]) -> int:
    return sum(h.count for h in holdings)


def node_facts_mig(node: Node, pool: str, mode: str) -> dict[str, Any]:
    return {
        "node": node.name,
        "gpu_model": node.gpu_model,
        "gpu_count": node.gpu_count,
        "node_sharing_strategy": node.sharing_strategy,
        "mig_strategy": node.mig_strategy,
        "mig_config": node.mig_config,
        "time_slicing_replicas": node.time_slicing_replicas,
        "resource": pool,
        "sharing_mode": mode,
    }


def node_draft(
    check_id: str, node: Node, slug: str | None, evidence: dict[str, Any], **extra: str
) -> FindingDraft:
    return FindingDraft(
        check_id=check_id,
        tenant=slug,
        subject_kind="Node",
        subject_namespace="",
        subject_name=node.name,
        evidence=evidence,
        subject_labels=dict(node.labels),
        **extra,
    )
