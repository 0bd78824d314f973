"""Patch status of one node against the fixes of imported bulletins. PURE.

A node's components (data-center driver by branch, container toolkit, device plugin, GPU
Operator, DCGM exporter, MIG manager, and the VBIOS where a bulletin names firmware for the
node's GPU model) are compared with each fix's affected bound (inventory.patching.fix_bounds);
the baseline of a component (and driver branch) is the highest fixed version any bulletin
names. A version that is unknown, or a driver branch no bulletin covers any more, makes the
status unknown: never a guess in either direction. A component the node does not run
(inventory.components: not installed) is not judged at all; its fixes are recorded as not
affected, "component not present".

A bound may hold only under a condition ("CDI mode only"): inventory.conditions judges it
against the node's facts. Not met: the node is not affected, with the reason. Not judged: the
exposure stays, "condition unverified".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from gpuposture.base.enums import Severity
from gpuposture.base.labels import words
from inventory.bulletins.csaf.fixes import Fix
from inventory.bulletins.csaf.products import ALL_VERSIONS, OPEN
from inventory.bulletins.csaf.versions import compare, parse_version
from inventory.conditions import NOT_PRESENT, VEX_NOT_PRESENT, NodeFacts, Verdict, evaluate
from inventory.patching.driver_family import (
    branch_fixes,
    dropped_by,
    fix_branch,
    host_driver_fix,
    one_per_bound,
)
from inventory.patching.fix_bounds import bounded, contradicted, exposed, past_fix
from inventory.patching.operands import split_by_operands
from inventory.patching.unread import VERSION_NOT_READ, why_not_read
from inventory.patching.versions import (
    bundled_dcgm,
    driver_branch,
    installed_version,
    model_matches,
)

CURRENT, BELOW_BASELINE, UNKNOWN = "current", "below_baseline", "unknown"
# Reason code of a driver on a branch no imported bulletin names (PatchStatus.investigating).
BRANCH_UNLISTED = "branch_unlisted"
# Node field -> the bulletin component kind it is compared with.
COMPONENTS = {
    "driver_version": "driver",
    "container_toolkit_version": "container_toolkit",
    "device_plugin_version": "device_plugin",
    "gpu_operator_version": "gpu_operator",
    "dcgm_exporter_version": "dcgm_exporter",
    "mig_manager_version": "mig_manager",
    "dra_driver_version": "dra_driver",
    "firmware_version": "firmware",
}
SEVERITY_ORDER = Severity.values()
NOT_READ = (
    "not judged: {kinds}: nvidia-smi -q -x does not show them, and the Kubernetes API does "
    "not list this node"
)


@dataclass(frozen=True)
class Exposure:
    component: str
    installed: str | None  # None: the component is not installed (a not-affected record)
    fixed_version: str | None
    affected: str  # "< 535.230.02" / "<= 1.16.1"
    cves: tuple[str, ...]
    max_cvss: float | None
    severity: str | None
    advisory_id: str
    released: str
    condition: str | None  # the bound applies only under this condition (e.g. CDI mode)
    # "holds" or "unverified" on an exposure with a condition; "not_met" on a not-affected one.
    condition_status: str | None = None
    # Why: {"code", "text", "justification"} (inventory.conditions.Verdict.as_reason).
    reason: dict[str, str | None] | None = None
    # No fixed version, and the vendor says why ("none_available: ...", "no_fix_planned: ...").
    no_fix: str | None = None
    # What the bulletin says to do for it: (category, details, url) per remediation; a
    # mitigation or workaround is what a node that cannot upgrade yet can do.
    remedies: tuple[tuple[str, str, str], ...] = ()
    # A driver exposure: (branch, fixed version) for each branch its bulletin fixes the same
    # CVEs on (driver_family.branch_fixes): whether a version on another branch is fixed.
    branch_fixes: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class NodeStack:
    """What the judgement needs of a node besides its versions."""

    not_installed: frozenset[str] = frozenset()  # component kinds (inventory.components)
    gpu_model: str | None = None  # the GFD product label, for firmware bulletins
    # The host driver is the vGPU Manager (a vm-vgpu node): judged by its own rows.
    vgpu_host: bool = False
    facts: NodeFacts = field(default_factory=NodeFacts)
    # Component kinds the node's only source cannot show (a node described by nvidia-smi
    # alone: all but the driver and firmware). Their fixes are neither exposures nor "not
    # affected": the status is the shown components', and a note names what was not judged.
    not_read: frozenset[str] = frozenset()


@dataclass(frozen=True)
class PatchStatus:
    status: str
    exposures: tuple[Exposure, ...]
    baselines: dict[str, str]  # component (driver as "driver R535") -> highest fixed version
    unknown: tuple[str, ...]  # why a component could not be judged
    not_affected: tuple[Exposure, ...] = ()  # in a bound, but not affected, each with its reason
    unknown_components: tuple[str, ...] = ()  # the kinds behind `unknown`
    # Fixes whose bound the installed version is past: the node runs a fixed version (VEX).
    fixed: tuple[Exposure, ...] = ()
    # OPEN bounds the node's version may be in (under investigation, or no bound stated): the
    # component is unknown, never current; a VEX says `under_investigation`.
    investigating: tuple[Exposure, ...] = ()
    not_read: tuple[str, ...] = ()  # notes: components with fixes the source cannot show
    # Fixes that concern a component the node runs, or may run, whose version was not read
    # (reason code VERSION_NOT_READ, saying which input would tell): a VEX says
    # `under_investigation`. A component known not installed is in `not_affected` instead.
    unread: tuple[Exposure, ...] = ()


@dataclass
class _Judgement:
    exposures: list[Exposure] = field(default_factory=list)
    not_affected: list[Exposure] = field(default_factory=list)
    fixed: list[Exposure] = field(default_factory=list)
    investigating: list[Exposure] = field(default_factory=list)
    unread: list[Exposure] = field(default_factory=list)
    baselines: dict[str, str] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)
    unknown_components: list[str] = field(default_factory=list)

    def not_judged(self, kind: str, why: str) -> None:
        self.unknown.append(why)
        self.unknown_components.append(kind)


def _applies(
    fix: Fix, kind: str, branch: str | None, gpu_model: str | None, vgpu_host: bool = False
) -> bool:
    component = fix.component
    if kind == "driver":
        # Data-center nodes run the Linux data-center ("Tesla") driver of their branch; a
        # vm-vgpu node the vGPU Manager of its branch (inventory.patching.driver_family).
        return host_driver_fix(fix, vgpu_host) and fix_branch(fix) == branch
    if component.kind != kind:
        return False
    if kind == "firmware":
        return model_matches(component.line, gpu_model)
    return component.platform in (None, "linux")


def node_patch_status(
    versions: dict[str, str | None], fixes: Iterable[Fix], stack: NodeStack | None = None
) -> PatchStatus:
    """`versions`: node field (see COMPONENTS) -> installed version or None."""
    fixes = list(fixes)
    if not fixes:
        return PatchStatus(UNKNOWN, (), {}, ("no bulletins imported",))
    stack = stack or NodeStack()
    judged = _Judgement()
    not_read: list[str] = []
    for field_name, kind in COMPONENTS.items():
        installed = versions.get(field_name)
        installed = installed_version(kind, installed) if installed else None
        if kind in stack.not_read and not installed:
            if concerning := [f for f in fixes if _applies(f, kind, None, stack.gpu_model)]:
                not_read.append(kind)
                judged.unread += [_unread(kind, None, f, stack) for f in one_per_bound(concerning)]
            continue
        if kind in stack.not_installed and kind != "driver":
            judged.not_affected += [
                _absent(kind, f) for f in fixes if _applies(f, kind, None, None)
            ]
            continue
        _judge(kind, installed, fixes, stack, judged)
    if dcgm := bundled_dcgm(versions.get("dcgm_exporter_version")):
        _judge("dcgm", dcgm, fixes, stack, judged)
    exposures = judged.exposures
    status = BELOW_BASELINE if exposures else UNKNOWN if judged.unknown else CURRENT
    return PatchStatus(
        status,
        tuple(exposures),
        judged.baselines,
        tuple(judged.unknown),
        tuple(judged.not_affected),
        tuple(dict.fromkeys(judged.unknown_components)),
        tuple(judged.fixed),
        tuple(judged.investigating),
        (NOT_READ.format(kinds=", ".join(not_read)),) if not_read else (),
        tuple(judged.unread),
    )


def _judge(
    kind: str, installed: str | None, fixes: list[Fix], stack: NodeStack, judged: _Judgement
) -> None:
    branch = driver_branch(installed) if kind == "driver" and installed else None
    vgpu = stack.vgpu_host
    relevant = one_per_bound([f for f in fixes if _applies(f, kind, branch, stack.gpu_model, vgpu)])
    if kind == "gpu_operator":
        relevant = _spare_absent_operands(installed, relevant, fixes, stack, judged)
    label = f"driver {branch}" if branch else kind
    if not installed or parse_version(installed) is None:
        if kind == "driver" and branch is None:  # no branch read: any branch's fix may concern it
            relevant = one_per_bound([f for f in fixes if host_driver_fix(f, vgpu)])
        if kind == "driver" or relevant:
            judged.not_judged(kind, _unknown_note(kind, relevant, stack.gpu_model))
        judged.unread += [_unread(kind, installed, f, stack) for f in relevant]
        return
    if kind == "driver" and not relevant:
        if any(f.component.kind == ("vgpu_manager" if vgpu else "driver") for f in fixes):
            why = (
                f"branch {branch} is in no imported bulletin (out of support, or bulletins missing)"
            )
            judged.not_judged(kind, f"driver {installed}: {why}")
            # Each driver CVE is unknown for it, not absent: a VEX says under_investigation.
            judged.investigating += _unlisted(installed, why, fixes, vgpu)
        return
    if kind == "driver" and (dropped := dropped_by(relevant, fixes, vgpu)):
        judged.not_judged(kind, f"driver {installed}: {dropped}")
    for fix in relevant:
        if fix.fixed_version and parse_version(fix.fixed_version):
            best = judged.baselines.get(label)
            if best is None or compare(fix.fixed_version, best) > 0:
                judged.baselines[label] = fix.fixed_version
        if fix.affected.op == OPEN:
            _judge_open(kind, installed, fix, judged)
            continue
        if contradicted(installed, fix):
            _judge_contradicted(kind, installed, fix, judged)
            continue
        if not exposed(installed, fix):
            if bounded(fix) or past_fix(installed, fix):
                judged.fixed.append(_exposure(kind, installed, fix, None))
            continue
        condition = fix.condition or fix.affected.condition
        verdict = evaluate(condition, stack.facts, installed) if condition else None
        if verdict is not None and verdict.affected is False:
            judged.not_affected.append(_exposure(kind, installed, fix, verdict))
        elif kind == "driver":
            exposure = _exposure(kind, installed, fix, verdict)
            judged.exposures.append(replace(exposure, branch_fixes=branch_fixes(fix, fixes, vgpu)))
        else:
            judged.exposures.append(_exposure(kind, installed, fix, verdict))


def _spare_absent_operands(
    installed: str | None,
    relevant: list[Fix],
    fixes: list[Fix],
    stack: NodeStack,
    judged: _Judgement,
) -> list[Fix]:
    """GPU Operator fixes whose flaw is in operands the node does not run are recorded not
    affected, component not present (inventory.patching.operands); the rest are judged."""
    kept, spared = split_by_operands(relevant, fixes, stack.not_installed)
    for fix, why in spared:
        reason = Verdict(False, NOT_PRESENT, why, VEX_NOT_PRESENT)
        judged.not_affected.append(
            replace(_exposure("gpu_operator", installed, fix, reason), condition_status=None)
        )
    return kept


def _judge_open(kind: str, installed: str, fix: Fix, judged: _Judgement) -> None:
    """A bound the bulletin leaves open: past its fixed version the node runs the fix, past the
    highest version it names it is not concerned; else whether it is affected is unknown."""
    if past_fix(installed, fix):
        judged.fixed.append(_exposure(kind, installed, fix, None))
        return
    reach = fix.affected.version
    if reach != ALL_VERSIONS and parse_version(reach) and compare(installed, reach) > 0:
        return
    why = {"code": "open_bound", "text": fix.warning, "justification": None}
    judged.investigating.append(replace(_exposure(kind, installed, fix, None), reason=why))
    cves = ", ".join(fix.cves) or "no CVE named"
    judged.not_judged(kind, f"{kind} {installed}: {fix.advisory_id} ({cves}): {fix.warning}")


def _judge_contradicted(kind: str, installed: str, fix: Fix, judged: _Judgement) -> None:
    """Upstream data that says both: neither "move to the version you run" nor "fixed" is
    true to it, so the component is unknown, saying why (a VEX: under investigation)."""
    text = (
        f"{fix.advisory_id} names {installed} both affected ({fix.affected.op} "
        f"{fix.affected.version}) and fixed; which it is, the bulletin does not say"
    )
    why = {"code": "contradictory_bulletin", "text": text, "justification": None}
    judged.investigating.append(replace(_exposure(kind, installed, fix, None), reason=why))
    judged.not_judged(kind, f"{kind} {installed}: {text}")


def _unlisted(installed: str, why: str, fixes: list[Fix], vgpu: bool) -> list[Exposure]:
    """A driver on a branch no bulletin names, once per driver vulnerability the bulletins
    fix: no bound or fixed version of another branch speaks of it."""
    reason = {"code": BRANCH_UNLISTED, "text": why, "justification": None}
    seen, found = set(), []
    for fix in fixes:
        if host_driver_fix(fix, vgpu) and (fix.advisory_id, fix.cves) not in seen:
            seen.add((fix.advisory_id, fix.cves))
            unlisted = replace(_exposure("driver", installed, fix, None), fixed_version=None)
            found.append(replace(unlisted, affected="", reason=reason, condition=None))
    return found


def _unknown_note(kind: str, relevant: list[Fix], gpu_model: str | None) -> str:
    if kind != "firmware":
        return f"{words(kind)}: version unknown"
    models = ", ".join(sorted({f.component.line or "?" for f in relevant}))
    if gpu_model is None:
        return f"firmware: GPU model unknown, and imported bulletins name firmware for {models}"
    advisories = ", ".join(sorted({f.advisory_id for f in relevant}))
    return (
        f"firmware: VBIOS version unknown ({advisories} names firmware for {models}; "
        "import `nvidia-smi -q -x` for the node)"
    )


_CONDITION_STATUS = {True: "holds", False: "not_met", None: "unverified"}


def _exposure(kind: str, installed: str | None, fix: Fix, verdict: Verdict | None) -> Exposure:
    return Exposure(
        component=kind,
        installed=installed,
        fixed_version=fix.fixed_version,
        affected=f"{fix.affected.op} {fix.affected.version}",
        cves=fix.cves,
        max_cvss=fix.max_cvss,
        severity=(fix.severity or "").lower() or None,
        advisory_id=fix.advisory_id,
        released=fix.released,
        condition=fix.condition or fix.affected.condition,
        condition_status=_CONDITION_STATUS[verdict.affected] if verdict else None,
        reason=verdict.as_reason() if verdict else None,
        no_fix=fix.no_fix,
        remedies=fix.remedies,
    )


def _absent(kind: str, fix: Fix) -> Exposure:
    reason = Verdict(
        False,
        NOT_PRESENT,
        f"Not affected: the node does not run the {words(kind)}.",
        VEX_NOT_PRESENT,
    )
    return replace(_exposure(kind, None, fix, reason), condition_status=None)


def _unread(kind: str, raw: str | None, fix: Fix, stack: NodeStack) -> Exposure:
    """A fix that concerns a component whose version was not read (`raw`: what was read
    instead of a version), with why and which input would tell."""
    why = why_not_read(
        kind,
        raw,
        host_only=kind in stack.not_read,
        gpu_model=stack.gpu_model,
        model=fix.component.line,
    )
    reason = {"code": VERSION_NOT_READ, "text": why, "justification": None}
    return replace(_exposure(kind, None, fix, None), reason=reason)


REMEDY_KEYS = ("category", "details", "url")


def remedy_dicts(remedies: Iterable[tuple[str, str, str]]) -> list[dict[str, str]]:
    """Remediations as stored and shown: {"category", "details", "url"}."""
    return [dict(zip(REMEDY_KEYS, remedy, strict=True)) for remedy in remedies]


def worst_severity(exposures: Iterable[Exposure]) -> str | None:
    found = {e.severity for e in exposures if e.severity in SEVERITY_ORDER}
    return next((s for s in SEVERITY_ORDER if s in found), None)
