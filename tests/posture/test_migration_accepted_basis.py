"""Migration posture.0024: Finding.accepted_basis, backfilled for accepted STACK-001..003/-005
rows from what they list at the upgrade (CVEs, the highest fix per component, severity); null
for other checks and for rows not accepted. Run with Django's migration executor."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.migration_steps import migrate, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BEFORE = [("posture", "0023_finding_tenant_exposure")]
AFTER = [("posture", "0024_finding_accepted_basis")]
T = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def old_apps():
    apps = migrate(BEFORE)
    yield apps
    migrate_to_latest()


def test_accepted_bulletin_rows_keep_what_they_list(old_apps):
    Finding = old_apps.get_model("posture", "Finding")  # noqa: N806
    cluster = old_apps.get_model("inventory", "Cluster").objects.create(name="lab")
    driver = [
        {"component": "driver", "cves": ["CVE-2"], "fixed_version": "550.144.03"},
        {"component": "driver", "cves": ["CVE-1"], "fixed_version": "550.163.01"},
        {"component": "driver", "cves": [], "advisory_id": "ADV-9", "fixed_version": None},
    ]

    def finding(name: str, check: str, status: str, evidence: dict) -> int:
        return Finding.objects.create(
            check_id=check, cluster=cluster, subject_kind="Node", subject_name=name,
            fingerprint=name, title=name, severity="high", status=status, evidence=evidence,
            first_seen=T, last_seen=T, accepted_until=T + timedelta(days=30),
        ).pk  # fmt: skip

    stack = finding("s", "STACK-001", "accepted", {"exposures": driver})
    late = finding("l", "STACK-005", "accepted", {"late_exposures": driver[:1]})
    still_open = finding("o", "STACK-001", "open", {"exposures": driver})
    drift = finding("d", "DRIFT-003", "accepted", {"changes": []})
    apps = migrate(AFTER)
    rows = dict(apps.get_model("posture", "Finding").objects.values_list("pk", "accepted_basis"))
    assert rows[stack] == {
        "cves": ["ADV-9", "CVE-1", "CVE-2"],
        "fixes": {"driver": "550.163.01"},
        "severity": "high",
    }
    assert rows[late] == {"cves": ["CVE-2"], "fixes": {"driver": "550.144.03"}, "severity": "high"}
    assert (rows[still_open], rows[drift]) == (None, None)
