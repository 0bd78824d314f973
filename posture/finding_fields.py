"""The fields of a finding as it leaves the app, declared once: the API's JSON keys and their
order (posture.serializers.FindingSerializer), the `values()` columns the findings list and
export read (posture.finding_rows), the CSV columns, the SARIF result's properties
(posture.exports) and what the findings search matches (posture.finding_search).

A new field is a line here (plus the model field and its migration). A field the model has
under the same name needs nothing more; one read through a relation or derived from the
check (`cluster`, `owner`, `mappings`...) also declares its schema type in the serializer.
tests/posture/test_finding_fields.py checks that every reader follows this list. A field
that may name another tenant is also listed in Finding.redacted_fields.

PURE: no ORM (posture.rules, the check catalogue, is pure too)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from posture.claims import claim_namespace, with_claim_note
from posture.rules import CHECKS
from posture.scoring import SEVERITY_WEIGHTS, finding_risk


def check_remediation(check_id: str) -> str:
    check = CHECKS.get(check_id)
    return check.remediation if check else ""


def remediation_shown(row: dict[str, Any]) -> str:
    """A finding row's remediation once its tenants are known: of a finding that affects only
    the unclassified party, the claim of its namespace comes first (posture.claims); the
    check's own follows, for the case the namespace turns out to be a tenant's."""
    namespace = claim_namespace(
        row["tenants"],
        row["subject_kind"],
        row["subject_namespace"],
        row["subject_name"],
        row["evidence"],
    )
    return with_claim_note(row["remediation"], namespace)


def check_mappings(check_id: str) -> list[str]:
    check = CHECKS.get(check_id)
    return list(check.mappings) if check else []


def finding_points(*, status: str, severity: str, tenants: Iterable[tuple[float, int]]) -> float:
    """A finding's `risk` (DESIGN §8): the risk points it adds to the tenants it affects, one
    (class weight, exposure) in `tenants` for each tenant the reader sees, the exposure being
    the tenant's own where its link has one (FindingTenant.exposure), as the score counts them
    (posture.scoring.finding_risk): the sum of the contributions the finding makes to those
    tenants' scores. Only an open finding counts: accepted or resolved, 0."""
    if status != "open" or severity not in SEVERITY_WEIGHTS:
        return 0.0
    total = sum(
        finding_risk(severity=severity, exposure=exposure, class_weight=weight)
        for weight, exposure in tenants
    )
    return round(total, 2)


@dataclass(frozen=True)
class FindingField:
    """One field of a finding's JSON row, and where each reader finds it."""

    name: str  # the key in the API's JSON and the JSON export, and the CSV header
    # The values() lookup it is read from; None for the tenants, read from the links table
    # for a page of rows at once (posture.finding_rows.tenant_slugs).
    source: str | None
    when: bool = False  # a date and time: written as the API writes one (ISO 8601)
    derive: Callable[[Any], Any] | None = None  # the JSON value from the stored one
    csv: int = 0  # its place among the CSV export's columns, from 1 (0: not a CSV column)
    csv_cell: Callable[[Any], Any] | None = None  # the CSV cell from the JSON value
    sarif: str = ""  # its name among a SARIF result's properties ("": not one)
    search: bool = False  # the findings search matches its text (as the reader sees it)


def _joined(separator: str) -> Callable[[Any], str]:
    return lambda values: separator.join(values or [])


def _json_cell(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


FINDING_FIELDS: tuple[FindingField, ...] = (
    FindingField("id", "id", csv=1, sarif="findingId"),
    FindingField("check", "check_id", csv=2, search=True),
    FindingField("severity", "severity", csv=3),
    FindingField("status", "status", csv=4, sarif="status"),
    # One row per finding: the tenants it affects in one cell.
    FindingField("tenants", None, csv=5, csv_cell=_joined("; "), sarif="tenants"),
    # Risk points it adds to the tenants shown (finding_points): read from its exposure, set
    # once the tenants are known (posture.finding_rows, FindingSerializer).
    FindingField("risk", "exposure"),
    FindingField("cluster", "cluster__name", csv=6, sarif="cluster"),
    FindingField("subject_kind", "subject_kind", csv=7, search=True),
    FindingField("subject_namespace", "subject_namespace", csv=8, search=True),
    FindingField("subject_name", "subject_name", csv=9, search=True),
    FindingField("title", "title", csv=10, search=True),
    FindingField("evidence", "evidence", csv=14, csv_cell=_json_cell, sarif="evidence"),
    FindingField("remediation", "check_id", derive=check_remediation),
    FindingField("mappings", "check_id", derive=check_mappings, csv=13, csv_cell=_joined(" ")),
    FindingField("first_seen", "first_seen", when=True, csv=11, sarif="firstSeen"),
    FindingField("last_seen", "last_seen", when=True, csv=12, sarif="lastSeen"),
    FindingField("resolved_at", "resolved_at", when=True),
    FindingField("accepted_reason", "accepted_reason"),
    FindingField("accepted_until", "accepted_until", when=True),
    # When the risk was accepted (null: not accepted, or before it was recorded).
    FindingField("accepted_at", "accepted_at", when=True),
    FindingField("ticket_url", "ticket_url"),
    FindingField("owner", "owner__username"),
)

API_FIELDS = [field.name for field in FINDING_FIELDS]
# What values() reads for a row, each once (`check_id` feeds three fields).
VALUE_COLUMNS = tuple(dict.fromkeys(f.source for f in FINDING_FIELDS if f.source))
CSV_FIELDS = tuple(sorted((f for f in FINDING_FIELDS if f.csv), key=lambda f: f.csv))
CSV_COLUMNS = [field.name for field in CSV_FIELDS]
SARIF_FIELDS = tuple(f for f in FINDING_FIELDS if f.sarif)
# The stored columns the search matches (model names: the presenter hides by them).
SEARCHED = tuple(f.source for f in FINDING_FIELDS if f.search and f.source)
