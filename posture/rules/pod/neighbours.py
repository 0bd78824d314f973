"""The tenants a way out of a container onto its node affects beside its owner. PURE.

POD-001 (privileged), POD-002 (hostPID or hostNetwork), POD-003 (a dangerous host path),
POD-004 (SYS_ADMIN or another critical capability) and POD-005 (/dev/nvidia-caps) each hand a
workload's container its node: every GPU and device there, every process, MIG for every GPU.
So the finding, one per workload and owned by the workload's tenant (the one to change it, as
its actions say), also affects every other party with an active pod on a node where one of the
workload's replicas runs (DESIGN §5: a finding "carries the tenants it affects (many)"; a node
finding already affects every tenant on the node). The unclassified party counts as a tenant
here as everywhere; the platform's own pods are no party. A workload with no pod on a node (a
template: scaled to 0, a CronJob between runs) reaches no one but its owner.

The evidence's `neighbours` says who and where: slug -> {"nodes": the shared nodes (the first
MEMBERS_SHOWN), "node_count"}; a neighbour's exposure is its node count (DESIGN §6: what the
cause spans of that tenant's), the owner's stays the workload's pods. The identity is
unchanged, so history and acceptances stay with the finding; a tenant viewer of a neighbour
reads it with the owner's names hidden (tenants.redaction), as a co-tenancy finding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from posture.inputs import PostureInputs
from posture.rules.common import tenants_on_node
from posture.rules.registry import MEMBERS_SHOWN, FindingDraft, merge_drafts

# Said in each such check's rationale (docs/checks.md), so its catalogue entry says whom the
# finding affects.
AFFECTS = (
    " The finding is the workload's tenant's to fix, and it also affects every other tenant "
    "(and the unclassified party) with an active pod on a node where one of the workload's "
    "replicas runs: the evidence's `neighbours` lists each with those nodes. A workload with "
    "no pod on a node (scaled to 0) affects only its tenant."
)
# POD-002's: hostIPC alone reaches no other tenant's pod (posture.rules.pod.hardening).
HOST_NAMESPACES_AFFECT = (
    " With hostPID or hostNetwork the finding, the workload's tenant's to fix, also affects "
    "every other tenant (and the unclassified party) with an active pod on a node where one "
    "of its replicas runs (the evidence's `neighbours`); with hostIPC alone only its tenant: "
    "the host's IPC namespace is shared by no other tenant's ordinary pod."
)
# Why a finding of each check reaches the tenants beside it (the evidence's `neighbours_why`).
REACH = {
    "POD-001": "a privileged container gets every device and the kernel of its node",
    "POD-002": "a pod in the host's PID or network namespace sees the node's processes "
    "or its network and node-local services",
    "POD-003": "a dangerous host path hands the container part of its node",
    "POD-004": "a critical capability leads out of the container onto its node",
    "POD-005": "/dev/nvidia-caps repartitions MIG on every GPU of its node",
}


def reaching_neighbours(
    inputs: PostureInputs,
    pod_drafts: Iterable[FindingDraft],
    reaches: Callable[[FindingDraft], bool] = lambda _: True,
) -> list[FindingDraft]:
    """The pod drafts of one check merged into one per workload (registry.merge_drafts, which
    passes them through unchanged after this), each widened to the other parties on the nodes
    its replicas run on. Read before merging: each pod's draft names its own node (the
    merged `pods` list is capped). `reaches`: whether a pod's draft is a way onto its node
    (POD-002's hostIPC alone is not)."""
    drafts = list(pod_drafts)
    nodes: dict[tuple[str, ...], set[str]] = {}
    for draft in drafts:
        if not reaches(draft):
            continue
        for entry in draft.evidence.get("pods", ()):
            if entry.get("node"):
                nodes.setdefault(draft.identity(), set()).add(entry["node"])
    return [_widened(inputs, d, nodes.get(d.identity(), set())) for d in merge_drafts(drafts)]


def _widened(inputs: PostureInputs, draft: FindingDraft, nodes: set[str]) -> FindingDraft:
    shared: dict[str, list[str]] = {}
    for node in sorted(nodes):
        for tenant in tenants_on_node(inputs, node):
            if tenant.slug not in draft.tenants:
                shared.setdefault(tenant.slug, []).append(node)
    if not shared:
        return draft
    neighbours = {
        slug: {"nodes": held[:MEMBERS_SHOWN], "node_count": len(held)}
        for slug, held in sorted(shared.items())
    }
    evidence = {
        **draft.evidence,
        "neighbours": neighbours,
        "neighbours_why": f"{REACH[draft.check_id]}: other tenants' pods run there",
    }
    # The owner keeps the workload's exposure (not named here: it takes `exposure`).
    exposures = {**draft.tenant_exposures, **{s: len(held) for s, held in shared.items()}}
    return replace(
        draft,
        tenants=tuple(sorted({*draft.tenants, *shared})),
        evidence=evidence,
        tenant_exposures=exposures,
    )
