"""The overview's per-tenant counts of open findings by severity (a query of their own)."""

from __future__ import annotations

from collections import Counter

import pytest

from posture.models import Finding
from posture.overview import overview_rows

pytestmark = pytest.mark.django_db


def expected(slug: str) -> dict[str, int]:
    found = Counter(
        Finding.objects.affecting(tenant__slug=slug)
        .filter(status="open")
        .values_list("severity", flat=True)
    )
    return {sev: found.get(sev, 0) for sev in ("critical", "high", "medium", "low")}


def test_each_row_counts_the_open_findings_that_affect_its_tenant(small_world, personas):
    rows = {r.tenant_slug: r for r in overview_rows(personas["security_lead"])}
    assert {"alpha", "beta"} <= set(rows)
    for slug in ("alpha", "beta"):
        assert rows[slug].open_counts == expected(slug)
        assert sum(rows[slug].open_counts.values()) > 0
        assert rows[slug].risk is not None and rows[slug].grade


def test_an_accepted_finding_leaves_the_counts(small_world, personas):
    finding = Finding.objects.affecting(tenant__slug="beta").filter(status="open").first()
    before = overview_rows(personas["security_lead"])
    Finding.objects.filter(pk=finding.pk).update(status="accepted")
    after = {r.tenant_slug: r for r in overview_rows(personas["security_lead"])}
    was = next(r for r in before if r.tenant_slug == "beta").open_counts
    assert after["beta"].open_counts[finding.severity] == was[finding.severity] - 1


def test_a_tenant_viewer_gets_only_its_own_row(small_world, personas):
    rows = overview_rows(personas["viewer_beta"])
    assert [r.tenant_slug for r in rows] == ["beta"]
    assert rows[0].open_counts == expected("beta")
