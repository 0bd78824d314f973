"""The practitioner checklist per cluster (DESIGN §6): ten items, each pass / fail / unknown
with the evidence behind it. PURE: decides from facts gathered by posture.selectors.

An item passes only when the data it needs was read; where gpuposture has no source for it
yet, it says unknown and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from inventory.node_components import firmware_coverage

PASS, FAIL, UNKNOWN = "pass", "fail", "unknown"


@dataclass(frozen=True)
class ChecklistFacts:
    synced: bool
    gpu_nodes: int
    time_sliced_nodes: int
    # Nodes of other vendors' GPUs (AMD, Intel, Gaudi) and no NVIDIA one: their pools are judged
    # (item 8), their stack cannot be inventoried (item 3).
    other_accelerator_nodes: int = 0
    # open findings of this cluster per check id
    open_findings: Mapping[str, int] = field(default_factory=dict)
    # accepted findings per check id: a risk accepted is still there (the item states a fact)
    accepted_findings: Mapping[str, int] = field(default_factory=dict)
    registered_checks: frozenset[str] = frozenset()
    trust_classes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # slug -> modes
    provider: str | None = None
    bulletins: int = 0
    days_since_bulletin_import: int | None = None
    telemetry_samples: int = 0  # 1 when GPU samples are held for this cluster (LEAK-001 reads them)
    reset_attestations: int = 0
    # Item 9: the window LEAK-001 looks for handovers in (the raw telemetry retention), how
    # long the GPU samples held in it span (first to last), and the handovers between tenants
    # sync history recorded in it (each one unattested opens LEAK-001).
    handover_window_days: int = 7
    telemetry_span_hours: float = 0.0
    handovers_recorded: int = 0
    firmware_known: int = 0  # GPU nodes with a known VBIOS version (coverage, item 3)
    # GPU nodes whose patch status is unknown (a driver or toolkit version not known, or a
    # branch no imported bulletin names): item 5 cannot say they are within the SLA.
    patch_unknown_nodes: int = 0
    # Kinds the last full sync read objects of; None: not known (every kind taken as read).
    kinds_read: frozenset[str] | None = None
    # Kinds the last full sync certainly did not read (inventory.kinds_read), and the checks
    # that therefore did not judge (posture.judged: a kind they need among them).
    kinds_unread: frozenset[str] = frozenset()
    unjudged_checks: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ChecklistItem:
    number: int
    title: str
    status: str
    evidence: dict[str, Any]


def _by_findings(
    facts: ChecklistFacts,
    checks: tuple[str, ...],
    looked_at: dict,
    optional: tuple[str, ...] = (),
    needs: tuple[str, ...] = (),
) -> tuple[str, dict]:
    """Fail on any open or accepted finding of `checks` (and of the `optional` ones that
    exist): an item states a fact about the cluster, and accepting a risk changes its weight,
    not the fact. Unknown when a required check is not available, or when the last full sync
    did not read every kind in `needs` (no finding there means nothing was looked at, not a
    pass): the evidence's `not_read` names the kinds missing."""
    missing = [c for c in checks if c not in facts.registered_checks]
    if missing:
        return UNKNOWN, {"reason": f"check(s) {', '.join(missing)} not available yet"}
    checks = checks + tuple(c for c in optional if c in facts.registered_checks)
    open_ = {c: facts.open_findings.get(c, 0) for c in checks if facts.open_findings.get(c)}
    accepted = {c: n for c in checks if (n := facts.accepted_findings.get(c, 0))}
    if open_ or accepted:
        found = {"open_findings": open_, **looked_at}
        return FAIL, found | ({"accepted_findings": accepted} if accepted else {})
    held = [c for c in checks if c in facts.unjudged_checks]
    if held:
        reason = (
            f"the last full sync did not read a kind {', '.join(held)} need(s): their findings "
            "were not re-judged, so the item cannot pass"
        )
        return UNKNOWN, {"reason": reason, "not_judged": held, "open_findings": {}, **looked_at}
    unread = [
        kind for kind in needs if facts.kinds_read is not None and kind not in facts.kinds_read
    ]
    if unread:
        kinds = " or ".join(filter(None, (", ".join(unread[:-1]), unread[-1])))
        reason = (
            f"the last full sync read no {kinds}: what they would show was not looked at, "
            "so the item cannot pass"
        )
        return UNKNOWN, {"reason": reason, "not_read": unread, "open_findings": {}, **looked_at}
    return PASS, {"open_findings": {}, **looked_at}


RBAC_KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")


def cluster_checklist(facts: ChecklistFacts) -> list[ChecklistItem]:
    if not facts.synced:
        reason = {"reason": "the cluster has not been synced successfully yet"}
        return [ChecklistItem(n, t, UNKNOWN, reason) for n, t in TITLES.items()]
    gpu = {"gpu_nodes_checked": facts.gpu_nodes}
    items = {
        1: _classes(facts),
        2: _claims_read(
            facts,
            _by_findings(
                facts,
                ("SHARE-001",),
                {**gpu, "time_sliced_nodes": facts.time_sliced_nodes},
                optional=("SHARE-006",),
                # Pods meet on nodes: with no Node read, no GPU node was there to judge.
                needs=("Pod", "Node"),
            ),
        ),
        3: _stack_covered(
            facts,
            _slices_read(
                facts,
                _on_gpu_nodes(
                    facts,
                    _by_findings(
                        facts,
                        ("STACK-004",),
                        {
                            **gpu,
                            "firmware": firmware_coverage(facts.gpu_nodes, facts.firmware_known),
                        },
                        needs=("Node",),
                    ),
                ),
            ),
        ),
        4: _bulletins_fresh(facts),
        5: _slices_read(facts, _patch_sla(facts)),
        6: _by_findings(facts, ("POD-001", "POD-003", "POD-004", "POD-005"), {}, needs=("Pod",)),
        # K8S-004 judges bindings to roles: with any of the four kinds unread, a tenant's
        # write on the sharing ConfigMaps may be in what was not read.
        7: _by_findings(facts, ("K8S-004",), {}, needs=RBAC_KINDS),
        8: _slices_read(facts, _pools(facts)),
        9: _resets(facts),
        10: _provider(facts),
    }
    for number in NOT_READ_ON_OTHER_VENDORS:
        items[number] = _other_vendors(facts, number, items[number])
    return [
        ChecklistItem(n, TITLES[n], status, evidence) for n, (status, evidence) in items.items()
    ]


# What gpuposture does not read on a node of another vendor's GPUs (AMD, Intel, Gaudi), for
# each item whose checks judge NVIDIA's GPUs alone (item 3 says it in its own words, item 8
# judges every vendor's pools): with such a node the item cannot pass, having not looked.
NOT_READ_ON_OTHER_VENDORS = {
    2: "whether their devices are shared between tenants (their device plugins' sharing "
    "settings, such as Intel's shared-dev-num, are not read)",
    5: "their driver stack, and only NVIDIA's bulletins are judged: whether they are past the "
    "patch SLA is not known",
    7: "who may edit their vendors' device-plugin or partition settings (only NVIDIA's "
    "ConfigMaps and ClusterPolicy are judged)",
    9: "who held their devices, so their handovers between tenants (sync history and "
    "DCGM telemetry cover NVIDIA's GPUs)",
}


def _other_vendors(
    facts: ChecklistFacts, number: int, judged: tuple[str, dict]
) -> tuple[str, dict]:
    """Item `number` on a cluster with other vendors' GPU nodes: a finding open still fails it;
    a pass becomes unknown, naming how many nodes were not looked at and why (an unknown keeps
    its own reason). The count is in the evidence whatever the status."""
    status, evidence = judged
    count = facts.other_accelerator_nodes
    if not count:
        return judged
    evidence = {**evidence, "accelerator_nodes_not_judged": count}
    if status != PASS:
        return status, evidence
    reason = (
        f"{count} node(s) hold other vendors' GPUs or accelerators (AMD, Intel, Gaudi): "
        f"gpuposture does not read {NOT_READ_ON_OTHER_VENDORS[number]}; only the "
        f"{facts.gpu_nodes} NVIDIA GPU node(s) were checked"
    )
    return UNKNOWN, {**evidence, "reason": reason}


def _claims_read(facts: ChecklistFacts, judged: tuple[str, dict]) -> tuple[str, dict]:
    """Item 2 passes only where the DRA claims pods name, and the slices that say which GPU
    each claim holds, were read: a claim not read may be a device shared between tenants (a
    finding open still fails it)."""
    reason = (
        "pods name DRA resource claims the last full sync did not read: which devices "
        "they hold, and who shares them, is unknown"
    )
    return _unknown_unread(facts, _slices_read(facts, judged), "ResourceClaim", reason)


def _slices_read(facts: ChecklistFacts, judged: tuple[str, dict]) -> tuple[str, dict]:
    """An item about GPU nodes (2, 3, 5, 8) passes only where the DRA ResourceSlices were read
    when the last full sync proved them there (its claims allocated): a node whose GPUs only
    its slices publish, never read, may be a GPU node nobody judged (a finding open still
    fails it)."""
    reason = (
        "the last full sync read no DRA ResourceSlice though its claims are allocated: "
        "which nodes hold GPUs only a DRA driver publishes is not fully known"
    )
    return _unknown_unread(facts, judged, "ResourceSlice", reason)


def _unknown_unread(
    facts: ChecklistFacts, judged: tuple[str, dict], kind: str, reason: str
) -> tuple[str, dict]:
    """A pass turned unknown, saying `reason`, where the last full sync did not read `kind`."""
    status, evidence = judged
    if status == PASS and kind in facts.kinds_unread:
        return UNKNOWN, {"reason": reason, "not_read": [kind], **evidence}
    return status, evidence


def _classes(facts: ChecklistFacts) -> tuple[str, dict]:
    if not facts.trust_classes:
        return FAIL, {"reason": "no trust classes are defined"}
    empty = sorted(slug for slug, modes in facts.trust_classes.items() if not modes)
    status = FAIL if empty else PASS
    return status, {
        "classes": {k: list(v) for k, v in facts.trust_classes.items()},
        "without_modes": empty,
    }


def _bulletins_fresh(facts: ChecklistFacts) -> tuple[str, dict]:
    if not facts.bulletins:
        return FAIL, {"reason": "no vendor bulletins have been imported (import_bulletins)"}
    age = facts.days_since_bulletin_import
    evidence = {"bulletins": facts.bulletins, "days_since_last_import": age}
    return (PASS if age is not None and age <= 7 else FAIL), evidence


def _patch_sla(facts: ChecklistFacts) -> tuple[str, dict]:
    if not facts.bulletins:
        return UNKNOWN, {"reason": "patch status needs imported bulletins"}
    # No Node read is no node judged against the SLA, not "no node past it".
    status, evidence = _by_findings(
        facts, ("STACK-005",), {"gpu_nodes_checked": facts.gpu_nodes}, needs=("Node",)
    )
    unknown = facts.patch_unknown_nodes
    if status != PASS or not unknown:
        return status, evidence
    # No STACK-005 open is no node *known* to be past the SLA; a node whose versions are not
    # known may be (a managed AMI, a host-installed toolkit): "patched" is not said of it.
    reason = (
        f"{unknown} of {facts.gpu_nodes} GPU node(s) have an unknown patch status (a driver or "
        "toolkit version not known, or a branch no imported bulletin names): whether they are "
        "past the patch SLA is not known"
    )
    return UNKNOWN, {**evidence, "gpu_nodes_patch_unknown": unknown, "reason": reason}


def _pools(facts: ChecklistFacts) -> tuple[str, dict]:
    """Item 8 judges the pools and quotas of every vendor's GPUs (K8S-002 and K8S-001 do)."""
    looked_at: dict[str, Any] = {"gpu_nodes_checked": facts.gpu_nodes}
    if facts.other_accelerator_nodes:
        looked_at["other_accelerator_nodes_checked"] = facts.other_accelerator_nodes
    judged = _by_findings(facts, ("K8S-001", "K8S-002"), looked_at, needs=("Node",))
    # No GPU node: no pool to taint, no GPU for a quota to bound.
    return _on_gpu_nodes(facts, judged, facts.gpu_nodes + facts.other_accelerator_nodes)


def _on_gpu_nodes(
    facts: ChecklistFacts, judged: tuple[str, dict], seen: int | None = None
) -> tuple[str, dict]:
    """An item about GPU nodes (3: their stack inventoried; 8: their pools tainted) passes only
    where a GPU node (`seen`, default the NVIDIA ones) was seen: with none, nothing was judged,
    so nothing passes (and on a CPU-only cluster nothing fails either). A finding open still
    fails it."""
    status, evidence = judged
    if status == PASS and not (facts.gpu_nodes if seen is None else seen):
        return UNKNOWN, {"reason": "no GPU node seen", **evidence}
    return status, evidence


def _stack_covered(facts: ChecklistFacts, judged: tuple[str, dict]) -> tuple[str, dict]:
    """Item 3 says the stack of every GPU node was inventoried. gpuposture reads NVIDIA's stack
    only: a node of another vendor's GPUs (AMD, Intel, Gaudi) leaves the item unknown, with
    the count, never a pass (a finding open still fails it)."""
    status, evidence = judged
    count = facts.other_accelerator_nodes
    if not count:
        return status, evidence
    evidence = {**evidence, "accelerator_nodes_not_inventoried": count}
    if status == FAIL:
        return status, evidence
    reason = (
        f"{count} node(s) hold other vendors' GPUs or accelerators (AMD, Intel, Gaudi), whose "
        f"driver stack gpuposture cannot inventory; only the {facts.gpu_nodes} NVIDIA GPU "
        "node(s) were checked"
    )
    return UNKNOWN, {**evidence, "reason": reason}


# Samples start a scrape after the window opens: an hour short of it still watched all of it.
WINDOW_SLACK_HOURS = 1.0


def _resets(facts: ChecklistFacts) -> tuple[str, dict]:
    """Item 9 passes only where gpuposture has looked: every handover in LEAK-001's window
    could have been seen (GPU telemetry spans the window), or handovers were seen and each has
    a reset recorded. Telemetry over minutes, with no handover seen, shows nothing that a reset
    could be recorded for: unknown, not pass. An open LEAK-001 fails it whatever saw it."""
    looked_at = {
        "reset_attestations": facts.reset_attestations,
        "telemetry_span_hours": round(facts.telemetry_span_hours, 1),
        "handover_window_days": facts.handover_window_days,
        "handovers_recorded": facts.handovers_recorded,
    }
    # An open LEAK-001 is a handover without a reset whatever saw it (telemetry or sync
    # history): the item fails on it, telemetry or not.
    if facts.open_findings.get("LEAK-001") or facts.accepted_findings.get("LEAK-001"):
        return _by_findings(facts, ("LEAK-001",), looked_at)
    if not facts.gpu_nodes and not facts.other_accelerator_nodes:
        # No GPU on the cluster: no handover to record, and no telemetry to ask for.
        return UNKNOWN, {"reason": "no GPU node seen", **looked_at}
    if not facts.telemetry_samples:
        # Sync history alone cannot pass the item: a tenant may take a GPU and hand it on
        # between two syncs, and a pod count per sync never shows that handover.
        return UNKNOWN, {
            "reason": "no GPU telemetry: who held each GPU, and so each handover, is unknown "
            "(sync history sees only handovers that span a sync)",
            **looked_at,
        }
    window = facts.handover_window_days * 24
    if facts.handovers_recorded or facts.telemetry_span_hours >= window - WINDOW_SLACK_HOURS:
        # Handovers seen, none without a reset (LEAK-001 is not open); or the whole window
        # watched, so a handover without a reset would have opened it.
        return _by_findings(facts, ("LEAK-001",), looked_at)
    reason = (
        f"GPU telemetry spans {facts.telemetry_span_hours:.1f} h of the "
        f"{facts.handover_window_days}-day window in which handovers are looked for, and sync "
        "history recorded no handover between tenants: nothing seen shows a GPU passing from "
        f"one tenant to the next, so no reset could be shown ({facts.reset_attestations} "
        "reset(s) recorded)"
    )
    return UNKNOWN, {"reason": reason, **looked_at}


def _provider(facts: ChecklistFacts) -> tuple[str, dict]:
    if facts.provider is None:
        return PASS, {"reason": "the cluster is not hosted by a provider"}
    return _by_findings(facts, ("PROV-001",), {"provider": facts.provider})


TITLES = {
    1: "Trust classes mapped to sharing modes",
    2: "No time-slicing or MPS between tenants",
    3: "GPU stack inventoried on every GPU node",
    4: "Vendor bulletins ingested within the last 7 days",
    5: "No node past the patch SLA",
    6: "No privileged, SYS_ADMIN or /dev hostPath in tenant pods",
    7: "Sharing ConfigMaps editable by the platform only",
    8: "GPU pools tainted and GPU quotas set",
    9: "GPU resets recorded between exclusive tenants",
    10: "Accepted questionnaire for every provider",
}
