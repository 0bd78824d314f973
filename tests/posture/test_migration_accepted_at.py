"""Migration posture.0022: Finding.accepted_at, backfilled for accepted rows from the audit
log (an `accept` event's time; a `carry` event: the earliest of its sources' acceptances),
else null. Run with Django's migration executor: back to 0021, rows and events, forward."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from audit.services import audit_record
from tests.migration_steps import migrate, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BEFORE = [("posture", "0021_drift_one_per_subject")]
AFTER = [("posture", "0022_finding_accepted_at")]
T = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def old_apps():
    apps = migrate(BEFORE)
    yield apps
    migrate_to_latest()


def event(pk: int, action: str, at: datetime, **after) -> None:
    with time_machine.travel(at, tick=False):
        audit_record(
            actor="test", action=action, object_type="posture.finding", object_id=pk, after=after
        )


def test_accepted_rows_get_the_time_of_the_acceptance_the_log_records(old_apps):
    Finding = old_apps.get_model("posture", "Finding")  # noqa: N806
    cluster = old_apps.get_model("inventory", "Cluster").objects.create(name="lab")

    def finding(name: str, status: str) -> int:
        return Finding.objects.create(
            check_id="DRIFT-003", cluster=cluster, subject_kind="Node", subject_name=name,
            fingerprint=name, title=name, severity="low", status=status,
            first_seen=T, last_seen=T, accepted_until=T + timedelta(days=30),
        ).pk  # fmt: skip

    accepted, carried, unknown, reopened = (
        finding(n, s)
        for n, s in (("a", "accepted"), ("c", "accepted"), ("u", "accepted"), ("r", "open"))
    )
    src1, src2 = finding("s1", "resolved"), finding("s2", "resolved")
    event(accepted, "accept", T - timedelta(days=3))
    event(accepted, "accept", T - timedelta(days=1))  # accepted again: the latest counts
    event(src1, "accept", T - timedelta(days=5))
    event(src2, "accept", T - timedelta(days=2))
    event(carried, "carry", T, from_findings=[src1, src2])
    event(reopened, "accept", T - timedelta(days=1))
    apps = migrate(AFTER)
    rows = dict(apps.get_model("posture", "Finding").objects.values_list("pk", "accepted_at"))
    assert rows[accepted] == T - timedelta(days=1)
    assert rows[carried] == T - timedelta(days=5)  # the earliest of the acceptances carried
    assert rows[unknown] is None  # no event says: unknown, kept as before
    assert rows[reopened] is None  # not accepted now
