"""How much risk an action removes: the risk points each of its findings gives each tenant it
affects, as the score counts them (posture.scoring.finding_risk), and shares of a total. PURE."""

from __future__ import annotations

from typing import TYPE_CHECKING

from posture.scoring import finding_risk

if TYPE_CHECKING:
    from posture.actions import ActionFinding


def percent(part: float, whole: float) -> float:
    return round(100 * part / whole, 1) if whole else 0.0


def finding_tenant_risk(
    finding: ActionFinding, known: dict[tuple[str, int, float], float]
) -> dict[str, float]:
    """The risk points the finding gives each tenant it affects (what the score counts: the
    tenant's own exposure where it has one). Each (severity, exposure, class weight) is
    computed once into `known`, shared by a whole grouping: a large world's findings have a
    few dozen of them for hundreds of thousands of (finding, tenant) pairs."""
    points = {}
    own = finding.tenant_exposures
    for tenant, weight in finding.tenant_weights.items():
        exposure = own.get(tenant, finding.exposure) if own else finding.exposure
        kind = (finding.severity, exposure, weight)
        if kind not in known:
            known[kind] = finding_risk(
                severity=finding.severity, exposure=exposure, class_weight=weight
            )
        points[tenant] = known[kind]
    return points
