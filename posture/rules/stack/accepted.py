"""What a risk acceptance of a bulletin exposure finding covers (STACK-001, -002, -003, -005).
PURE.

Such a finding is one per check and node (posture.rules.subjects.bulletin_draft), so a
bulletin imported after the acceptance adds its exposures to the same finding. What a security
lead accepts is the evidence seen then (docs/findings.md): the CVEs listed, the fix each
component had to reach, the severity. `exposure_basis` keeps that at acceptance
(Finding.accepted_basis); `exposure_beyond` says what a later draft lists beyond it: a CVE the
acceptance did not see, a component asked to move to a higher fix, a higher severity. Then the
acceptance no longer covers the finding and it opens again (posture.finding_store). The same
bulletin imported again, a CVE of a branch the node is not on (not among its exposures), a
lower severity or a lower fix, are covered: the acceptance holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cmp_to_key
from typing import Any

from gpuposture.base.enums import Severity
from inventory.bulletins.csaf.versions import compare, parse_version

# The checks whose evidence lists a node's bulletin exposures, and under which key.
EXPOSURE_LISTS = {
    "STACK-001": "exposures",
    "STACK-002": "exposures",
    "STACK-003": "exposures",
    "STACK-005": "late_exposures",
}
# Why such a finding opened again (its `reopened`, the `outdated` audit event's `reopened`).
BEYOND = "more exposure than was accepted"


def exposure_basis(check_id: str, evidence: Any, severity: str) -> dict | None:
    """What an acceptance of this finding covers: {"cves", "fixes", "severity"}; None for a
    check that lists no bulletin exposures. An exposure naming no CVE counts by its
    advisory's id; `fixes`: the highest fix per component (none where the vendor gives none)."""
    key = EXPOSURE_LISTS.get(check_id)
    if key is None or not isinstance(evidence, Mapping):
        return None
    exposures = [e for e in evidence.get(key) or () if isinstance(e, Mapping)]
    cves = {str(c) for e in exposures for c in e.get("cves") or [e.get("advisory_id") or "?"]}
    versions: dict[str, list[str]] = {}
    for exposure in exposures:
        if exposure.get("fixed_version"):
            component = str(exposure.get("component") or "?")
            versions.setdefault(component, []).append(str(exposure["fixed_version"]))
    return {
        "cves": sorted(cves),
        "fixes": {component: _highest(found) for component, found in sorted(versions.items())},
        "severity": severity,
    }


def exposure_beyond(
    basis: Any, check_id: str, evidence: Any, severity: str
) -> dict[str, Any] | None:
    """What the finding lists now beyond the acceptance's `basis` (exposure_basis), or None
    (covered; or no basis known: an acceptance kept as before). The dict: `new_cves`,
    `fixes_raised` ({component: [then, now]}, then null where none was asked), `severity`
    ([then, now] where higher), and `change` saying them in one line."""
    now = exposure_basis(check_id, evidence, severity)
    if now is None or not isinstance(basis, Mapping):
        return None
    new_cves = sorted(set(now["cves"]) - set(basis.get("cves") or ()))
    then_fixes = basis.get("fixes") or {}
    raised = {
        component: [then_fixes.get(component), fix]
        for component, fix in now["fixes"].items()
        if _raised(then_fixes.get(component), fix)
    }
    then_severity = str(basis.get("severity") or "")
    known = then_severity in Severity.values()
    higher = known and Severity.rank(severity) < Severity.rank(then_severity)
    if not (new_cves or raised or higher):
        return None
    said = [f"new {', '.join(new_cves)}"] if new_cves else []
    said += [f"{c} fix {then or 'none'} -> {fix}" for c, (then, fix) in raised.items()]
    said += [f"severity {then_severity} -> {severity}"] if higher else []
    return {
        "change": "; ".join(said),
        "new_cves": new_cves,
        "fixes_raised": raised,
        "severity": [then_severity, severity] if higher else None,
    }


def _raised(then: str | None, fix: str) -> bool:
    """A fix above the one accepted; one that cannot be ordered against it counts when it
    differs (never silently covered)."""
    if then is None:
        return True
    if parse_version(then) is None or parse_version(fix) is None:
        return then != fix
    return compare(fix, then) > 0


def _highest(versions: list[str]) -> str:
    ordered = sorted(set(versions))
    if all(parse_version(v) for v in ordered):
        ordered.sort(key=cmp_to_key(compare))
    return ordered[-1]
