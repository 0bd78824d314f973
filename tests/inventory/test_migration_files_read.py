"""Migration inventory.0036: a sync run that kept how many snapshot files it read among its
change counts keeps it in its own field, its change counts left as they were otherwise.
Run with Django's migration executor: back to 0035, old rows, forward."""

from __future__ import annotations

import pytest

from inventory.models import SyncRun
from inventory.sync_summary import sync_run_summary
from tests.migration_steps import migrate, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BEFORE = [("inventory", "0035_seal_command_line_credentials")]
NODES = {"created": 2, "updated": 0, "deleted": 0}


@pytest.fixture
def old_apps():
    apps = migrate(BEFORE)
    yield apps
    migrate_to_latest()


def test_the_count_moves_out_of_the_change_counts(old_apps):
    cluster = old_apps.get_model("inventory", "Cluster").objects.create(name="lab")
    runs = old_apps.get_model("inventory", "SyncRun").objects
    from_files = runs.create(
        cluster=cluster,
        source="snapshots/lab",
        status="succeeded",
        counts={"nodes": 2},
        changes={"nodes": NODES, "drift_events": 0, "files_read": 7},
    )
    live = runs.create(
        cluster=cluster, source="kubeconfig", status="succeeded", changes={"nodes": NODES}
    )

    migrate_to_latest()

    moved = SyncRun.objects.get(pk=from_files.pk)
    assert moved.files_read == 7
    assert moved.changes == {"nodes": NODES, "drift_events": 0}
    assert "nodes 2 from 7 files" in sync_run_summary(moved)
    untouched = SyncRun.objects.get(pk=live.pk)
    assert untouched.files_read is None
    assert untouched.changes == {"nodes": NODES}
    assert "from" not in sync_run_summary(untouched)
