"""SHARE-002, SHARE-006..008: MIG compute instances, MPS, sensitive tenants on shared GPUs and
vGPU scheduling (DESIGN §2, §3, §5)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from inventory.snapshot import Node
from posture.inputs import PostureInputs, TrustClassInfo
from posture.rules.common import (
    PLATFORM,
    GpuHolding,
    gpu_holdings,
    holding_evidence,
    platform_trust_class,
    pools_by_mode,
    sorted_nodes,
)
from posture.rules.registry import FindingDraft, check
from posture.rules.sharing import co_residence
from tenants.policy import base_resource

SENSITIVE_CLASS = "sensitive"
# Classes whose workloads need a guaranteed GPU share (latency-bound inference for customers,
# regulated workloads with fixed deadlines): vGPU best effort gives none.
PREDICTABLE_PERFORMANCE_CLASSES = ("sensitive", "external")
VGPU_SCHEDULER_UNKNOWN = "unknown scheduler, assumed best effort"
# A100, H100, H200 and B200 have 7 compute slices per GPU (A30: 4), so at most 7 // g GPU
# instances of a "<g>g" profile fit on one GPU.
MAX_MIG_SLICES = 7
# "nvidia.com/mig-1c.3g.40gb" -> compute slices 1, GPU-instance profile "3g.40gb".
_MIG_CI_PROFILE = re.compile(r"^nvidia\.com/mig-(\d+)c\.((\d+)g\..+)$")


def _node_facts(node: Node, pool: str, mode: str) -> dict[str, Any]:
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


def _by_tenant(holdings: list[GpuHolding]) -> dict[str, list[GpuHolding]]:
    grouped: dict[str, list[GpuHolding]] = {}
    for holding in holdings:
        if holding.tenant is not None:
            grouped.setdefault(holding.tenant.slug, []).append(holding)
    return dict(sorted(grouped.items()))


def _replicas(holdings: list[GpuHolding]) -> int:
    return sum(h.count for h in holdings)


def _node_draft(
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


# --- SHARE-002 -----------------------------------------------------------------------------


def gi_profile(resource: str) -> tuple[str, int] | None:
    """("3g.40gb", 3) for a compute-instance resource such as nvidia.com/mig-1c.3g.40gb."""
    match = _MIG_CI_PROFILE.match(base_resource(resource))
    return (match.group(2), int(match.group(3))) if match else None


def gpu_instance_bound(node: Node, profile: str, slices: int) -> int | None:
    """At most how many GPU instances of `profile` the node has: each holds at least one
    advertised compute instance, and at most 7 // slices fit on one GPU."""
    cis = sum(
        count
        for name, count in node.gpu_capacity.items()
        if (found := gi_profile(name)) is not None and found[0] == profile
    )
    bounds = [cis] if cis else []
    if node.gpu_count:
        bounds.append(node.gpu_count * (MAX_MIG_SLICES // slices))
    return min(bounds) if bounds else None


@check(
    id="SHARE-002",
    title="Compute instances of one MIG GPU instance used by different tenants",
    severity="high",
    scope="gpu",
    rationale=(
        "A MIG compute instance (`nvidia.com/mig-<c>c.<g>g.<mem>`) partitions only the SMs of "
        "its GPU instance: the framebuffer, L2 cache, copy engines and memory controllers "
        "stay shared by every compute instance of that GPU instance, so there is no memory "
        "isolation and only partial fault isolation between them. Compute instances of one "
        "GPU instance are not separate tenants (DESIGN §2). The API does not say which GPU "
        "instance a device belongs to, so pods of different tenants holding compute instances "
        "of the same GPU-instance profile on one node are reported as possibly co-resident, "
        "and as certainly co-resident when the node can only have one such GPU instance."
    ),
    remediation=(
        "Give each tenant whole GPU instances: change the node's mig-parted config (label "
        "`nvidia.com/mig.config=<config>` naming a layout without compute-instance splits, "
        "e.g. `all-3g.40gb`) so the device plugin advertises `nvidia.com/mig-3g.40gb`, and "
        "move the tenants' pods to those resources. Keep compute-instance profiles only on "
        "nodes (tainted per tenant) that serve a single tenant."
    ),
    mappings=("SP800-53:SC-4", "SP800-53:SC-39"),
)
def compute_instances_between_tenants(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for node in sorted_nodes(inputs):
        groups: dict[tuple[str, int], list[GpuHolding]] = {}
        for holding in gpu_holdings(inputs, node):
            profile = gi_profile(holding.resource)
            if holding.mode == "mig_ci" and profile is not None:
                groups.setdefault(profile, []).append(holding)
        for (profile, slices), holdings in sorted(groups.items()):
            tenants = _by_tenant(holdings)
            if len(tenants) < 2:
                continue
            bound = gpu_instance_bound(node, profile, slices)
            for slug in tenants:
                yield _share002_draft(inputs, node, profile, bound, slug, tenants)


def _share002_draft(
    inputs: PostureInputs,
    node: Node,
    profile: str,
    bound: int | None,
    slug: str,
    tenants: dict[str, list[GpuHolding]],
) -> FindingDraft:
    others = {other: hs for other, hs in tenants.items() if other != slug}
    verdict = "certain" if bound == 1 else "possible"
    why = (
        f"node {node.name} can hold only one {profile} GPU instance"
        if bound == 1
        else f"node {node.name} may hold up to {bound or 'an unknown number of'} {profile} "
        "GPU instances; the API does not say which one each compute instance belongs to"
    )
    evidence = {
        **_node_facts(node, f"GPU instance profile {profile}", "mig_ci"),
        "gpu_instance_profile": profile,
        "gpu_instances_at_most": bound,
        "co_residence": verdict,
        "co_residence_reason": why,
        "tenant": slug,
        "tenant_pods": holding_evidence(tenants[slug]),
        "other_tenants": [
            {
                "tenant": other,
                "trust_class": inputs.tenants_by_slug[other].trust_class.slug,
                "pods": holding_evidence(hs),
            }
            for other, hs in others.items()
        ],
    }
    title = (
        f"Tenant {slug} uses compute instances of {profile} GPU instances on node {node.name} "
        f"with {', '.join(others)} ({verdict} co-residence)"
    )
    return _node_draft("SHARE-002", node, slug, evidence, key=profile, title=title)


# --- SHARE-006 -----------------------------------------------------------------------------


@check(
    id="SHARE-006",
    title="MPS shared between different tenants",
    severity="high",
    scope="gpu",
    rationale=(
        "Under MPS all clients of a GPU submit work through one MPS server: address spaces "
        "are separated on Volta and later, but a fatal fault in any client (an illegal memory "
        "access, an out-of-range kernel) tears down every client of that server, performance "
        "limits are advisory, and DCGM-Exporter cannot attribute usage per pod. The device "
        "plugin hands out MPS replicas without regard to tenant, so two tenants on one MPS "
        "node can share a physical GPU and one can crash or starve the other."
    ),
    remediation=(
        "Keep `sharing.mps` only in the device-plugin config of a single-tenant pool: label "
        "the other nodes with a `nvidia.com/device-plugin.config` that has no `sharing` "
        "section, taint the MPS pool for one tenant and give that tenant's pods the matching "
        "toleration and nodeSelector. Between tenants use MIG GPU instances or whole GPUs."
    ),
    mappings=("SP800-53:SC-39",),
)
def mps_between_tenants(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for node in sorted_nodes(inputs):
        for (pool, mode), holdings in pools_by_mode(gpu_holdings(inputs, node)).items():
            tenants = _by_tenant(holdings)
            if mode != "mps" or len(tenants) < 2:
                continue
            for slug, own in tenants.items():
                others = {o: hs for o, hs in tenants.items() if o != slug}
                verdict, why = co_residence(
                    node, pool, _replicas(own), sum(_replicas(hs) for hs in others.values())
                )
                evidence = {
                    **_node_facts(node, pool, mode),
                    "co_residence": verdict,
                    "co_residence_reason": why,
                    "tenant": slug,
                    "tenant_pods": holding_evidence(own),
                    "other_tenants": {o: holding_evidence(hs) for o, hs in others.items()},
                }
                title = (
                    f"Tenant {slug} shares {pool} by MPS on node {node.name} with "
                    f"{', '.join(others)} ({verdict} co-residence)"
                )
                yield _node_draft("SHARE-006", node, slug, evidence, key=pool, title=title)


# --- SHARE-007 -----------------------------------------------------------------------------

Party = tuple[str, TrustClassInfo, list[GpuHolding]]  # (tenant slug or "platform", class, ...)


def _parties(holdings: list[GpuHolding], platform: TrustClassInfo) -> list[Party]:
    grouped: dict[str, tuple[TrustClassInfo, list[GpuHolding]]] = {}
    for h in holdings:
        # Platform pods get a key no tenant slug can take: "" sorts first and is never a slug.
        name, cls = (h.tenant.slug, h.tenant.trust_class) if h.tenant else ("", platform)
        grouped.setdefault(name, (cls, []))[1].append(h)
    return [(name or PLATFORM, cls, hs) for name, (cls, hs) in sorted(grouped.items())]


@check(
    id="SHARE-007",
    title="Sensitive tenant on a GPU time-sliced or MPS-shared with a lower trust class",
    severity="critical",
    scope="gpu",
    rationale=(
        "A sensitive model or dataset never shares a physical GPU in time-sliced or MPS mode "
        "with less trusted code (DESIGN §2). Time-slicing leaves GPU memory unprotected "
        "between workloads, and MPS puts every client behind one server whose fault ends "
        "them all; a tenant of a lower class (or a platform pod, whose code the sensitive "
        "tenant's approval did not cover) on the same time-sliced or MPS resource of the node "
        "can read leftover memory, observe timing, or deny service to the sensitive workload."
    ),
    remediation=(
        "Move the sensitive tenant to its dedicated pool now: nodes tainted "
        "`gpuposture.io/trust-class=sensitive:NoSchedule` whose device-plugin config "
        "(`nvidia.com/device-plugin.config`) has no `sharing` section, or MIG GPU instances "
        "owned by that tenant alone. Delete the pods named in the evidence so they reschedule "
        "there, then reset the GPUs they used (`nvidia-smi --gpu-reset -i <gpu>`) and record "
        "the reset attestation before any other tenant uses them."
    ),
    mappings=("SP800-53:SC-4",),
)
def sensitive_on_shared_gpu(inputs: PostureInputs) -> Iterator[FindingDraft]:
    platform = platform_trust_class(inputs)
    for node in sorted_nodes(inputs):
        for (pool, mode), holdings in pools_by_mode(gpu_holdings(inputs, node)).items():
            if mode not in ("time_slicing", "mps"):
                continue
            parties = _parties(holdings, platform)
            for name, cls, own in parties:
                if cls.slug != SENSITIVE_CLASS or name == PLATFORM:
                    continue
                lower = [p for p in parties if p[1].rank < cls.rank]
                if lower:
                    yield _share007_draft(node, pool, mode, name, cls, own, lower)


def _share007_draft(
    node: Node,
    pool: str,
    mode: str,
    slug: str,
    cls: TrustClassInfo,
    own: list[GpuHolding],
    lower: list[Party],
) -> FindingDraft:
    others = sum(_replicas(hs) for _, _, hs in lower)
    verdict, why = co_residence(node, pool, _replicas(own), others)
    evidence = {
        **_node_facts(node, pool, mode),
        "co_residence": verdict,
        "co_residence_reason": why,
        "tenant": slug,
        "trust_class": cls.slug,
        "trust_class_rank": cls.rank,
        "tenant_pods": holding_evidence(own),
        "lower_class_parties": [
            {
                "party": name,
                "is_platform": name == PLATFORM and all(h.tenant is None for h in hs),
                "trust_class": peer.slug,
                "rank": peer.rank,
                "pods": holding_evidence(hs),
            }
            for name, peer, hs in lower
        ],
    }
    peers = ", ".join(f"{name} ({peer.slug})" for name, peer, _ in lower)
    title = f"Sensitive tenant {slug} shares {pool} by {mode} on node {node.name} with {peers}"
    return _node_draft("SHARE-007", node, slug, evidence, key=f"{pool}:{mode}", title=title)


# --- SHARE-008 -----------------------------------------------------------------------------


@check(
    id="SHARE-008",
    title="vGPU best-effort scheduler where a tenant's class requires predictable performance",
    severity="low",
    scope="node",
    rationale=(
        "NVIDIA vGPU time-shares a physical GPU between VMs under one of three schedulers: "
        "best effort (the default), equal share or fixed share. Best effort gives a VM "
        "whatever the others leave, so a neighbouring VM (outside the cluster's view) can "
        "slow a workload arbitrarily. Kubernetes does not expose which scheduler the host "
        "runs, so an unknown scheduler is assumed to be best effort. Sensitive and external "
        "tenants require predictable performance (deadlines, customer SLOs)."
    ),
    remediation=(
        "On the hypervisor host, set the vGPU scheduler to equal share or fixed share "
        '(`options nvidia NVreg_RegistryDwords="RmPVMRL=0x01"` for equal share or '
        "`RmPVMRL=0x11` for fixed share in /etc/modprobe.d of the vGPU manager host, then "
        "reload the module or reboot), record the chosen scheduler with the node "
        "pool, or move the tenant to nodes with whole GPUs or MIG GPU instances."
    ),
    mappings=("SP800-53:SC-6",),
)
def vgpu_best_effort(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for node in sorted_nodes(inputs):
        if node.sharing_strategy != "vgpu":
            continue
        tenants = _by_tenant(gpu_holdings(inputs, node))
        for slug, own in tenants.items():
            cls = inputs.tenants_by_slug[slug].trust_class
            if cls.slug not in PREDICTABLE_PERFORMANCE_CLASSES:
                continue
            evidence = {
                "node": node.name,
                "gpu_model": node.gpu_model,
                "node_sharing_strategy": node.sharing_strategy,
                "vgpu_scheduler": VGPU_SCHEDULER_UNKNOWN,
                "tenant": slug,
                "trust_class": cls.slug,
                "tenant_pods": holding_evidence(own),
            }
            title = (
                f"{cls.slug.title()} tenant {slug} runs on vGPU node {node.name} "
                f"({VGPU_SCHEDULER_UNKNOWN})"
            )
            yield _node_draft("SHARE-008", node, slug, evidence, title=title)
