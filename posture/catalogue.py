"""The check catalogue as pages and API show it: metadata, open findings, exemptions, and
findings grouped by framework control."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Count
from django.utils import timezone

from gpuposture.base.finding_status import status_q
from posture.models import SEVERITY_ORDER, CheckExemption, Finding, PostureRun
from posture.rules import CHECKS


def open_counts(user) -> dict[str, int]:
    rows = (
        Finding.objects.visible_to(user)
        .filter(status_q(Finding.Status.OPEN, timezone.now()))
        .values("check_id")
        .annotate(n=Count("id"))
    )
    return {row["check_id"]: row["n"] for row in rows}


def open_by_severity(user) -> dict[str, dict[str, int]]:
    """Open findings per check and severity (one grouped query): a finding may be rated other
    than its check's default (Check.severity_rule), and the pages say so."""
    rows = (
        Finding.objects.visible_to(user)
        .filter(status_q(Finding.Status.OPEN, timezone.now()))  # a lapsed acceptance: open
        .values("check_id", "severity")
        .annotate(n=Count("id"))
    )
    found: dict[str, dict[str, int]] = defaultdict(dict)
    for row in rows:
        found[row["check_id"]][row["severity"]] = row["n"]
    return found


def _severities(default: str, counts: dict[str, int]) -> dict[str, Any]:
    ordered = sorted(counts.items(), key=lambda item: SEVERITY_ORDER.get(item[0], 9))
    return {
        "open_findings": sum(counts.values()),
        "open_by_severity": ordered,
        "rated_otherwise": sum(n for severity, n in ordered if severity != default),
    }


def catalogue(user) -> list[dict[str, Any]]:
    severities = open_by_severity(user)
    exempted = last_exempted_counts()
    return [
        {
            "id": check.id,
            "title": check.title,
            "severity": check.severity,
            "scope": check.scope,
            "rationale": check.rationale,
            "remediation": check.remediation,
            "mappings": list(check.mappings),
            "severity_rule": check.severity_rule,
            **_severities(check.severity, severities.get(check.id, {})),
            "exempted_last_run": exempted.get(check.id, 0),
        }
        for check in sorted(CHECKS.values(), key=lambda c: c.id)
    ]


def last_exempted_counts() -> dict[str, int]:
    run = PostureRun.objects.filter(finished_at__isnull=False).order_by("-started_at").first()
    return dict((run.counts or {}).get("exempted", {})) if run else {}


def check_exemptions(user, check_id: str) -> list[CheckExemption]:
    return list(
        CheckExemption.objects.visible_to(user).filter(check_id=check_id).select_related("cluster")
    )


def by_control(user) -> list[dict[str, Any]]:
    """Open findings per framework control (a finding counts under each of its mappings)."""
    counts = open_counts(user)
    controls: dict[str, dict[str, Any]] = defaultdict(lambda: {"checks": [], "open_findings": 0})
    for check in CHECKS.values():
        for mapping in check.mappings:
            entry = controls[mapping]
            entry["checks"].append(check.id)
            entry["open_findings"] += counts.get(check.id, 0)
    return [
        {
            "control": control,
            "framework": control.split(":")[0],
            **entry,
            "checks": sorted(entry["checks"]),
        }
        for control, entry in sorted(controls.items())
    ]
