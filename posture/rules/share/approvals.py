"""SHARE-004, DRIFT-004: sharing modes in use against the approved sharing requests.

A tenant may share GPUs by a mode only under an active (approved, unexpired) sharing request
for that mode on the cluster, or on the node pool the GPUs are in (DESIGN §3). exclusive shares
nothing and needs no approval. With no active approval at all, SHARE-004; with approvals for
other modes only, the cluster drifted from what was approved: DRIFT-004.

An approval scoped `within_tenant` (the tenant's class forbids the mode between tenants) covers
the tenant's use here like any other: what it does not cover, sharing a GPU with another tenant,
is judged by the co-tenancy checks (SHARE-001/002/003/006/007), which read no approval at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gpuposture.base.enums import SharingMode
from inventory.pools import node_pool
from posture.inputs import PostureInputs, SharingRequestInfo
from posture.rules.common import GpuHolding, gpu_holdings, pod_ref, sorted_nodes
from posture.rules.registry import DRA_KINDS, FindingDraft, check
from posture.rules.share.pool_words import NOTE, own_pool_labels, unnamed_pool_words
from posture.rules.share.vendor_approvals import shared_vendor_holdings
from posture.rules.subjects import mode_use_draft
from tenants.mapping import UNCLASSIFIED

AMD_POOLS = "amd.com/"  # posture.rules.dra_holdings.held_pool of AMD's DRA devices
EVIDENCE_LIMIT = 20  # nodes and pods listed per finding; the counts say how many in all


@dataclass
class ModeUse:
    """Where one tenant uses one sharing mode in one node pool."""

    nodes: set[str] = field(default_factory=set)
    pods: set[str] = field(default_factory=set)
    # Pods that use the mode through NVIDIA_VISIBLE_DEVICES, outside any scheduler: no
    # approval covers that, and the fix is removing the variable, not asking for one.
    env_pods: set[str] = field(default_factory=set)
    env_workloads: set[str] = field(default_factory=set)  # theirs ("Pod ns/name"...)


def mode_usage(inputs: PostureInputs) -> dict[tuple[str, str, str], ModeUse]:
    """(tenant slug, mode, node pool) -> the nodes and pods, for every non-exclusive use."""
    usage: dict[tuple[str, str, str], ModeUse] = {}
    for node in sorted_nodes(inputs):
        pool = node_pool(node.labels)
        for holding in gpu_holdings(inputs, node):
            # A mode another forces on the holder (another tenant's DRA adminAccess reach) is
            # not one it uses: no approval of its could change it, the reacher's use is judged
            # (the co-tenancy checks still report the pair).
            mode = holding.chosen_mode
            # exclusive shares nothing; "unknown" (a MIG layout nobody knows) is SHARE-009's.
            if holding.tenant is None or mode in (SharingMode.EXCLUSIVE, "unknown"):
                continue
            if mode == SharingMode.MIG_CI and holding.pool.startswith(AMD_POOLS):
                # An AMD compute partition held through DRA is judged as the device plugin's
                # partitions are (vendor_approvals): one tenant's partitions share nothing with
                # another and need no approval; shared with another party, they do.
                continue
            _add(usage, holding, mode, pool, node.name)
        for holding in shared_vendor_holdings(inputs, node):
            _add(usage, holding, holding.chosen_mode, pool, node.name)
    return dict(sorted(usage.items()))


def _add(
    usage: dict[tuple[str, str, str], ModeUse],
    holding: GpuHolding,
    mode: str,
    pool: str,
    node: str,
) -> None:
    assert holding.tenant is not None  # callers keep tenants' holdings only
    use = usage.setdefault((holding.tenant.slug, mode, pool), ModeUse())
    use.nodes.add(node)
    use.pods.add(pod_ref(holding.pod))
    if holding.through_env:
        use.env_pods.add(pod_ref(holding.pod))
        if holding.workload:
            use.env_workloads.add(holding.workload)


def _request_evidence(request: SharingRequestInfo) -> dict[str, Any]:
    return {
        "id": request.id,
        "mode": request.mode,
        "node_pool": request.node_pool or "(whole cluster)",
        "state": request.state,
        "scope": request.scope,
        "requested_by": request.requested_by,
        "requested_at": request.requested_at,
        "decided_by": request.decided_by,
        "decided_at": request.decided_at,
        "expires_at": request.expires_at,
    }


def _use_evidence(tenant: str, mode: str, pool: str, use: ModeUse) -> dict[str, Any]:
    evidence: dict[str, Any] = {
        "tenant": tenant,
        "observed_mode": mode,
        "node_pool": pool or "(no pool label)",
        "nodes": sorted(use.nodes)[:EVIDENCE_LIMIT],
        "node_count": len(use.nodes),
        "pods": sorted(use.pods)[:EVIDENCE_LIMIT],
        "pod_count": len(use.pods),
    }
    if use.env_pods:
        evidence["through_visible_devices"] = {
            "pods": sorted(use.env_pods)[:EVIDENCE_LIMIT],
            "pod_count": len(use.env_pods),
            # The workloads to change (POD-011's): where they are all the use, removing the
            # variable from them is the one action that closes this finding too.
            "workloads": sorted(use.env_workloads)[:EVIDENCE_LIMIT],
            "workload_count": len(use.env_workloads),
            "note": "these take GPUs through NVIDIA_VISIBLE_DEVICES, outside the scheduler "
            "(POD-011): remove the variable; an approval would not make it reviewed sharing",
        }
    return evidence


def _unclassified_path(use: ModeUse) -> dict[str, Any]:
    """How the unclassified party's use gets reviewed: a sharing request names a tenant, and
    no tenant owns these pods yet; the approval the check asks for starts with a claim."""
    namespaces = sorted({ref.split("/")[0] for ref in use.pods})
    return {
        "namespaces": namespaces[:EVIDENCE_LIMIT],
        "note": "no sharing request can name the unclassified party: claim these namespaces "
        "for a tenant in the registry (or mark them the platform's); that tenant then asks "
        "for the mode, or its pods move to whole GPUs",
    }


def approval_findings(inputs: PostureInputs) -> list[tuple[str, FindingDraft]]:
    # Both checks ask; work it out once per evaluation.
    if "approval_findings" not in inputs.memo:
        inputs.memo["approval_findings"] = list(_judge(inputs))
    return inputs.memo["approval_findings"]  # type: ignore[return-value]  # stored just above


def _judge(inputs: PostureInputs) -> Iterator[tuple[str, FindingDraft]]:
    for (tenant, mode, pool), use in mode_usage(inputs).items():
        theirs = [r for r in inputs.sharing_requests if r.tenant == tenant]
        mine = [r for r in theirs if r.covers_pool(pool)]
        active = [r for r in mine if r.state == "active"]
        if any(r.mode == mode for r in active):
            continue
        evidence = _use_evidence(tenant, mode, pool, use)
        where = f"node pool {pool}"
        if not pool:
            where = unnamed_pool_words(inputs, use.nodes)
            evidence["node_pool_note"] = NOTE
            if labels := _own_labels(inputs, use.nodes):
                evidence["pool_labels_not_read"] = labels
        if not active:
            # The request's absence is the evidence; earlier requests for the mode say why,
            # and so does one for another node pool (an approval there does not cover here).
            evidence["active_approval"] = None
            evidence["requests_for_this_mode"] = [
                {**_request_evidence(r), "covers_this_pool": r.covers_pool(pool)}
                for r in theirs
                if r.mode == mode
            ][:5]
            title = f"{tenant} uses {mode} on {where} with no active approval"
            if tenant == UNCLASSIFIED:
                evidence["approval_path"] = _unclassified_path(use)
                title += " (no request can name unclassified: claim its namespaces first)"
            yield "SHARE-004", _draft("SHARE-004", tenant, mode, pool, evidence, title)
            continue
        evidence["approved"] = [_request_evidence(r) for r in active]
        # The weakest approved mode covering the pool is the exposure the platform accepted;
        # a mode isolating better than it (DESIGN §2 orders the modes) is said, but the change
        # was approved by nobody: DRIFT-004 keeps the catalogue's severity (DESIGN §5).
        stronger = any(_isolation_rank(mode) < _isolation_rank(r.mode) for r in active)
        evidence["observed_is_stronger_isolation"] = stronger
        approved = ", ".join(sorted({r.mode for r in active}))
        title = f"{tenant} uses {mode} on {where}; approved: {approved}"
        if stronger:
            title += f" ({mode} isolates better than what was approved; approve it or revert)"
        yield "DRIFT-004", _draft("DRIFT-004", tenant, mode, pool, evidence, title)


def _isolation_rank(mode: str) -> int:
    """Position in SharingMode, strongest isolation first; unknown modes rank weakest."""
    return SharingMode.rank(mode)


def _own_labels(inputs: PostureInputs, names: set[str]) -> dict[str, list[str]]:
    """The cluster's own pool labels on the nodes (pool_words.own_pool_labels), key -> values."""
    found: dict[str, set[str]] = {}
    for node in sorted_nodes(inputs):
        if node.name in names:
            for key, value in own_pool_labels(node.labels).items():
                found.setdefault(key, set()).add(value)
    return {key: sorted(values)[:EVIDENCE_LIMIT] for key, values in sorted(found.items())}


def _draft(
    check_id: str,
    tenant: str,
    mode: str,
    pool: str,
    evidence: dict[str, Any],
    title: str,
) -> FindingDraft:
    return mode_use_draft(
        check_id, tenant, mode, pool, evidence=evidence, title=title, exposure=evidence["pod_count"]
    )


@check(
    id="SHARE-004",
    needs=DRA_KINDS,
    title="A tenant uses a sharing mode with no active approval",
    severity="medium",
    scope="tenant",
    rationale=(
        "Every sharing mode other than whole GPUs trades isolation for utilisation, and the "
        "trade is the platform team's to make, in writing: a sharing request, approved by a "
        "platform engineer other than the requester, with an expiry for sensitive tenants. A "
        "mode in use with no active approval was never reviewed against the tenant's trust "
        "class and neighbours, or its approval expired or was revoked."
    ),
    remediation=(
        "Ask for the mode in a sharing request (Approvals page or `POST "
        "/api/v1/sharing-requests/`) with the cluster and node pool in the evidence, and have "
        "a platform engineer decide it; or move the tenant's pods to whole GPUs "
        "(`nvidia.com/gpu` on a node without a sharing config). Evidence lists any earlier "
        "request for the mode and why it is not active."
    ),
    mappings=("SP800-53:CM-3",),
)
def sharing_without_approval(inputs: PostureInputs) -> Iterator[FindingDraft]:
    yield from (draft for check_id, draft in approval_findings(inputs) if check_id == "SHARE-004")
