"""Findings as the API's JSON rows, read with `values()` instead of model instances and a
ModelSerializer: the findings list and export are the API's busiest paths, and building 50
models with their tenant and cluster, then walking DRF's fields for each, cost three times
the query. The rows are exactly FindingSerializer's (tests/posture/test_finding_rows.py
compares them field by field); the serializer stays the schema and the detail view's."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from posture.redaction import HiddenScope, redact, redact_text
from posture.rules import CHECKS

COLUMNS = (
    "id", "check_id", "severity", "status", "tenant__slug", "cluster__name", "subject_kind",
    "subject_namespace", "subject_name", "title", "evidence", "first_seen", "last_seen",
    "resolved_at", "accepted_reason", "accepted_until",
)  # fmt: skip


def finding_values(queryset: QuerySet) -> QuerySet:
    """The columns a row needs, in one query (tenant and cluster joined)."""
    return queryset.values(*COLUMNS)


class PagedFindingValues:
    """What a paginator pages: a slice reads `finding_values()` rows, while the count stays
    the plain queryset's (counting the values() query would join tenant and cluster for
    every finding: 9 ms instead of 1 on 20,000)."""

    def __init__(self, queryset: QuerySet) -> None:
        self.queryset = queryset
        self.ordered = queryset.ordered

    def count(self) -> int:
        return self.queryset.count()

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, window: slice) -> list[dict[str, Any]]:
        return list(finding_values(self.queryset[window]))


def finding_rows(values: Iterable[Mapping[str, Any]], scope: HiddenScope | None) -> list[dict]:
    """API rows from `finding_values()`, with other tenants hidden as `scope` says."""
    zone = timezone.get_current_timezone()
    rows = []
    for v in values:
        check = CHECKS.get(v["check_id"])
        rows.append(
            {
                "id": v["id"],
                "check": v["check_id"],
                "severity": v["severity"],
                "status": v["status"],
                "tenant": v["tenant__slug"],
                "cluster": v["cluster__name"],
                "subject_kind": v["subject_kind"],
                "subject_namespace": v["subject_namespace"],
                "subject_name": v["subject_name"],
                "title": redact_text(v["title"], scope),
                "evidence": redact(v["evidence"], scope),
                "remediation": check.remediation if check else "",
                "mappings": list(check.mappings) if check else [],
                "first_seen": _iso(v["first_seen"], zone),
                "last_seen": _iso(v["last_seen"], zone),
                "resolved_at": _iso(v["resolved_at"], zone),
                "accepted_reason": v["accepted_reason"],
                "accepted_until": _iso(v["accepted_until"], zone),
            }
        )
    return rows


def _iso(value: datetime | None, zone: Any) -> str | None:
    """As DRF's DateTimeField writes it: ISO 8601 in the current zone, UTC as "Z"."""
    if value is None:
        return None
    text = value.astimezone(zone).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text
