"""A sync whose lease ran out while it read (a slow server, a long Retry-After) and that
another sync took over applies nothing: the other read later, and applying the older read after
it would bring back what it saw deleted. The server's Retry-After wait is capped below the
lease, so one slow answer alone cannot lose it."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.models import Cluster, SyncRun
from inventory.services import SyncError, cluster_sync
from inventory.sources.files import SnapshotFileSource
from inventory.sources.kube_retry import RETRY_AFTER_CAP_SECONDS, CappedRetry
from posture.models import Finding
from tests.conftest import world_snapshot_path

pytestmark = pytest.mark.django_db


class TakenOverWhileReading(SnapshotFileSource):
    """Reads the world as it was, while another worker takes the cluster's expired lease."""

    def __init__(self, paths, cluster: Cluster) -> None:
        super().__init__(paths)
        self.cluster = cluster

    def read(self, progress):
        objects = super().read(progress)
        Cluster.objects.filter(pk=self.cluster.pk).update(
            sync_lock_token="another-worker",
            sync_lock_until=timezone.now() + timedelta(minutes=5),
        )
        return objects


def test_a_read_whose_lease_was_taken_over_is_not_applied(small_world, tmp_path):
    older = json.loads(world_snapshot_path().read_text())
    newest = {p for p in small_world.pods.values_list("namespace", "name")}
    # The other sync already applied a world without one of these pods; ours still has it.
    gone = small_world.pods.order_by("pk").first()
    gone.delete()
    findings = sorted(Finding.objects.values_list("pk", "status", "last_seen"))
    path = tmp_path / "older.json"
    path.write_text(json.dumps(older))

    with pytest.raises(SyncError) as raised:
        cluster_sync(cluster=small_world, source=TakenOverWhileReading([path], small_world))

    assert "another sync of this cluster took over" in str(raised.value)
    run = SyncRun.objects.filter(cluster=small_world).order_by("-pk").first()
    assert run.status == "failed" and "nothing of this read was applied" in run.error
    stored = set(small_world.pods.values_list("namespace", "name"))
    assert stored == newest - {(gone.namespace, gone.name)}  # the deleted pod stays deleted
    assert sorted(Finding.objects.values_list("pk", "status", "last_seen")) == findings
    small_world.refresh_from_db()
    assert small_world.sync_lock_token == "another-worker"  # the holder's lease untouched


class Answer:
    def __init__(self, retry_after: str | None) -> None:
        self.headers = {"Retry-After": retry_after} if retry_after is not None else {}


@pytest.mark.parametrize(
    "header, waited",
    [("400", RETRY_AFTER_CAP_SECONDS), ("5", 5.0), ("0", 0.0), (None, None)],
)
def test_a_servers_retry_after_is_waited_up_to_the_cap(header, waited, settings):
    assert CappedRetry(1, redirect=None).get_retry_after(Answer(header)) == waited
    # Well within the sync lease as configured (300 s by default): one wait cannot lose it.
    assert RETRY_AFTER_CAP_SECONDS * 4 <= settings.GPUPOSTURE_SYNC_LEASE_SECONDS
