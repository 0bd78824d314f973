"""After a score that rewrote many findings, the database has planner statistics for the scored
tables: the pages read right after a first score are planned from the real sizes (issue 18)."""

from __future__ import annotations

import pytest
from django.db import connection

from posture.services import SCORED_TABLES, posture_evaluate, statistics_refresh

pytestmark = pytest.mark.django_db


def analysed(table: str) -> bool:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE name = 'sqlite_stat1'")
            if cursor.fetchone() is None:
                return False
            cursor.execute("SELECT COUNT(*) FROM sqlite_stat1 WHERE tbl = %s", [table])
            return cursor.fetchone()[0] > 0
        # ANALYZE sets reltuples (-1 for a table never analysed) in this transaction.
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [table])
        return cursor.fetchone()[0] >= 0


def forget_statistics() -> None:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE name = 'sqlite_stat1'")
            if cursor.fetchone() is not None:
                cursor.execute("DELETE FROM sqlite_stat1")
        else:
            tables = [m._meta.db_table for m in SCORED_TABLES]
            cursor.execute("UPDATE pg_class SET reltuples = -1 WHERE relname = ANY(%s)", [tables])


def test_a_first_score_leaves_statistics_for_the_findings_and_their_links(small_world):
    assert analysed("posture_finding")
    assert analysed("posture_findingtenant")


def test_a_score_that_changed_little_does_not_analyse_again(small_world):
    forget_statistics()
    posture_evaluate()  # nothing changed: every finding still open
    assert not analysed("posture_finding")


def test_the_threshold_is_a_tenth_of_the_live_findings(small_world):
    forget_statistics()
    statistics_refresh({"opened": 9, "still_open": 91})
    assert not analysed("posture_finding")
    statistics_refresh({"opened": 10, "still_open": 90})
    assert analysed("posture_finding")
