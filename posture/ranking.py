"""The overview's ranked list: one row per thing that holds risk, most risk first.

Tenants give rows today (tenant_rows); any other holder of GPU workloads (for example the
namespaces no tenant claims) joins by giving RankedRows to `ranked`, which alone orders them.
PURE apart from reading attributes the selector annotated.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gpuposture.base.enums import Severity
from posture.claims import shown_namespaces

SEVERITIES = Severity.values()


@dataclass(frozen=True)
class RankedRow:
    key: str  # the tie-break for truly equal risk (a tenant's slug)
    label: str  # what the row is called (a tenant's name)
    trust_class: str
    risk: float | None  # None: not scored yet
    score: float | None = None
    grade: str | None = None
    cap: str = ""
    previous_risk: float | None = None  # the run before, for the trend arrow
    open_counts: dict[str, int] = field(default_factory=dict)
    tenant_slug: str | None = None  # set when the row is a tenant (links to its page)
    # The system tenant's namespaces nobody claims (the first few, and how many more).
    namespaces: tuple[str, ...] = ()
    more_namespaces: int = 0
    # False: nothing of the tenant was seen on any cluster read (posture.observed).
    observed: bool = True

    @property
    def trend(self) -> str:
        return trend_of(self.risk, self.previous_risk)

    @property
    def change(self) -> float | None:
        if self.risk is None or self.previous_risk is None:
            return None
        return round(self.risk - self.previous_risk, 2)


def trend_of(risk: float | None, previous: float | None) -> str:
    """ "up" (more risk than the run before), "down", "same", or "new" (nothing to compare)."""
    if risk is None or previous is None:
        return "new"
    if round(risk - previous, 2) > 0:
        return "up"
    if round(risk - previous, 2) < 0:
        return "down"
    return "same"


def ranked(rows: Iterable[RankedRow]) -> list[RankedRow]:
    """Most risk first; rows not scored yet after the scored ones (their risk is unknown, and
    they say so); equal risk by key."""
    return sorted(rows, key=lambda r: (r.risk is None, -(r.risk or 0.0), r.key))


def tenant_rows(tenants: Iterable) -> list[RankedRow]:
    """Rows from tenants as posture.selectors.tenants_overview annotates them."""
    rows = []
    for t in tenants:
        shown, more = shown_namespaces(t.unclaimed_namespaces if t.is_system else ())
        rows.append(
            RankedRow(
                key=t.slug,
                label=t.name,
                trust_class=t.trust_class.slug,
                risk=t.latest_risk,
                score=t.latest_score,
                grade=t.latest_grade,
                cap=t.latest_cap or "",
                previous_risk=t.previous_risk,
                open_counts={s: getattr(t, f"open_{s}") for s in SEVERITIES},
                tenant_slug=t.slug,
                namespaces=tuple(shown),
                more_namespaces=more,
                observed=t.observed,
            )
        )
    return rows
