"""Findings as the API's JSON rows, read with `values()` instead of model instances and a
ModelSerializer: the findings list and export are the API's busiest paths, and building 50
models with their tenant and cluster, then walking DRF's fields for each, cost three times
the query. The rows are exactly FindingSerializer's (tests/posture/test_finding_rows.py
compares them field by field); the serializer stays the schema and the detail view's."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import QuerySet
from rest_framework.fields import DateTimeField

from posture.models import FindingTenant
from posture.redaction import HiddenScope, redact, redact_text
from posture.rules import CHECKS

_DATETIME = DateTimeField()

COLUMNS = (
    "id", "check_id", "severity", "status", "cluster__name", "subject_kind",
    "subject_namespace", "subject_name", "title", "evidence", "first_seen", "last_seen",
    "resolved_at", "accepted_reason", "accepted_until",
)  # fmt: skip


def finding_values(queryset: QuerySet) -> QuerySet:
    """The columns a row needs, in one query (the cluster joined; the tenants are read for the
    rows' ids by finding_rows, in one more)."""
    return queryset.values(*COLUMNS)


class PagedFindingValues:
    """What a paginator pages: a slice reads `finding_values()` rows, while the count stays
    the plain queryset's (counting the values() query would join the cluster for every
    finding)."""

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
    iso = _DATETIME.to_representation  # as the serializer writes them (None stays None)
    values = list(values)
    tenants = tenant_slugs([v["id"] for v in values])
    rows = []
    for v in values:
        rows.append(
            {
                "id": v["id"],
                "check": v["check_id"],
                "severity": v["severity"],
                "status": v["status"],
                "tenants": visible_slugs(tenants.get(v["id"], ()), scope),
                "cluster": v["cluster__name"],
                "subject_kind": v["subject_kind"],
                "subject_namespace": v["subject_namespace"],
                "subject_name": v["subject_name"],
                "title": redact_text(v["title"], scope),
                "evidence": redact(v["evidence"], scope),
                "remediation": check_remediation(v["check_id"]),
                "mappings": check_mappings(v["check_id"]),
                "first_seen": iso(v["first_seen"]),
                "last_seen": iso(v["last_seen"]),
                "resolved_at": iso(v["resolved_at"]),
                "accepted_reason": v["accepted_reason"],
                "accepted_until": iso(v["accepted_until"]),
            }
        )
    return rows


def tenant_slugs(finding_ids: list[int]) -> dict[int, list[str]]:
    """finding id -> the slugs of the tenants it affects: one query per 900 findings (one
    for a page)."""
    found: dict[int, list[str]] = {}
    for start in range(0, len(finding_ids), 900):  # under SQLite's limit on parameters
        links = FindingTenant.objects.filter(finding_id__in=finding_ids[start : start + 900])
        for finding_id, slug in links.values_list("finding_id", "tenant__slug"):
            found.setdefault(finding_id, []).append(slug)
    return found


def visible_slugs(slugs: Iterable[str], scope: HiddenScope | None) -> list[str]:
    """Sorted slugs less those `scope` hides: a tenant viewer sees only their own tenants."""
    hidden = scope.tenants if scope else frozenset()
    return sorted(s for s in slugs if s not in hidden)


def check_remediation(check_id: str) -> str:
    check = CHECKS.get(check_id)
    return check.remediation if check else ""


def check_mappings(check_id: str) -> list[str]:
    check = CHECKS.get(check_id)
    return list(check.mappings) if check else []
