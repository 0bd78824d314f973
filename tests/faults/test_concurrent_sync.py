"""Two syncs of one cluster at once cannot corrupt it: the lease (one conditional UPDATE)
lets exactly one run, the other is told the cluster is busy, and the inventory is exactly
what the API server holds, with no duplicate rows. A dead worker's lease is taken over once
it expires, and the dead worker can no longer release or renew the new holder's lease."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable

import pytest
from django.db import connections
from django.db.models import Count

from inventory.models import Cluster, SyncRun
from inventory.services import SyncBusy, cluster_sync
from inventory.sync import sync_run_start
from inventory.sync_lease import (
    cluster_lock_acquire,
    cluster_lock_release,
    cluster_lock_renew,
    lease_remaining_seconds,
)
from tests.conftest import load_json
from tests.workers import wait_for

# Real transactions: each thread has its own database connection, as two workers would.
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def at_once(*calls: Callable[[], object]) -> list[object]:
    """Run the calls in threads released together; each outcome is a result or the
    exception raised."""
    barrier = threading.Barrier(len(calls))
    outcomes: list[object] = [None] * len(calls)

    def run(index: int, call: Callable[[], object]) -> None:
        try:
            barrier.wait(timeout=30)
            outcomes[index] = call()
        except Exception as exc:  # noqa: BLE001 - the outcome under test
            outcomes[index] = exc
        finally:
            connections.close_all()  # this thread's connection; a leak would block teardown

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a sync did not finish within 120 s"
    return outcomes


def sync_of(pk: int) -> Callable[[], object]:
    # Each "worker" loads its own copy of the cluster, as a task does from its id.
    return lambda: cluster_sync(cluster=Cluster.objects.get(pk=pk), trigger="schedule")


def world(items: list[dict]) -> tuple[set[str], set[tuple[str, str]]]:
    nodes = {i["metadata"]["name"] for i in items if i["kind"] == "Node"}
    pods = {
        (i["metadata"]["namespace"], i["metadata"]["name"]) for i in items if i["kind"] == "Pod"
    }
    return nodes, pods


def stored(cluster: Cluster) -> tuple[set[str], set[tuple[str, str]]]:
    return (
        set(cluster.nodes.values_list("name", flat=True)),
        set(cluster.pods.values_list("namespace", "name")),
    )


def assert_no_duplicates(cluster: Cluster) -> None:
    for rows, key in (
        (cluster.nodes, ["name"]),
        (cluster.pods, ["namespace", "name"]),
        (cluster.kube_objects, ["kind", "namespace", "name"]),
    ):
        twice = rows.values(*key).annotate(n=Count("id")).filter(n__gt=1)
        assert not twice.exists(), list(twice)


def assert_lease_free(cluster: Cluster) -> None:
    cluster.refresh_from_db()
    assert (cluster.sync_lock_token, cluster.sync_lock_until) == ("", None)


def test_two_syncs_at_once_one_runs_the_other_is_busy_and_the_inventory_is_whole(live_cluster):
    cluster, api = live_cluster
    items = copy.deepcopy(load_json("small-cluster.json")["items"])
    api.delay("/api/v1/pods", 2)  # the winner still holds the lease when the other asks

    outcomes = at_once(sync_of(cluster.pk), sync_of(cluster.pk))

    runs = [o for o in outcomes if isinstance(o, SyncRun)]
    busy = [o for o in outcomes if isinstance(o, SyncBusy)]
    assert (len(runs), len(busy)) == (1, 1), outcomes
    assert "another sync of live is running" in str(busy[0])
    assert list(SyncRun.objects.filter(cluster=cluster).values_list("pk", "status")) == [
        (runs[0].pk, "succeeded")
    ]
    assert stored(cluster) == world(items)
    assert_no_duplicates(cluster)
    assert_lease_free(cluster)

    # A second round, on a changed world: one pod gone. The result is the new world exactly.
    gone = next(i for i in items if i["metadata"].get("name") == "batch-done")
    items.remove(gone)
    api.replace_objects(copy.deepcopy(items))
    outcomes = at_once(sync_of(cluster.pk), sync_of(cluster.pk))

    assert sorted(type(o).__name__ for o in outcomes) == ["SyncBusy", "SyncRun"], outcomes
    statuses = SyncRun.objects.filter(cluster=cluster).order_by("pk").values_list("status")
    assert [s for (s,) in statuses] == ["succeeded", "succeeded"]
    assert stored(cluster) == world(items)
    assert ("beta-prod", "batch-done") not in stored(cluster)[1]
    assert_no_duplicates(cluster)
    assert_lease_free(cluster)


def test_a_dead_workers_lease_is_taken_over_once_it_expires(live_cluster, settings):
    cluster, _api = live_cluster
    settings.GPUPOSTURE_SYNC_LEASE_SECONDS = 2
    dead_token = cluster_lock_acquire(cluster=cluster)  # a worker took the lease, then died
    assert dead_token
    dead_run = sync_run_start(cluster=cluster, source="kubeconfig", trigger="schedule")

    with pytest.raises(SyncBusy):
        cluster_sync(cluster=cluster)
    assert cluster.nodes.count() == 0  # the refused sync wrote nothing

    wait_for(lambda: lease_remaining_seconds(cluster=cluster) == 0, 15, "the lease to expire")
    run = cluster_sync(cluster=cluster)

    assert run.status == "succeeded"
    dead_run.refresh_from_db()
    assert dead_run.status == "failed" and dead_run.error.startswith("interrupted")
    assert stored(cluster) == world(load_json("small-cluster.json")["items"])
    assert_no_duplicates(cluster)
    assert_lease_free(cluster)

    # The dead worker wakes up late: it can neither free nor extend a lease it lost.
    holder = cluster_lock_acquire(cluster=cluster)
    cluster_lock_release(cluster=cluster, token=dead_token)
    cluster_lock_renew(cluster=cluster, token=dead_token)
    cluster.refresh_from_db()
    assert cluster.sync_lock_token == holder
    assert cluster_lock_acquire(cluster=cluster) is None
    cluster_lock_release(cluster=cluster, token=holder)
    assert_lease_free(cluster)
