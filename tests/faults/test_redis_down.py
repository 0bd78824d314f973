"""Redis down: the pages still serve, a sync or an import asked for is refused at once with
a message that says what to do (the refusal kept on the run), the last good inventory stays;
when Redis is back the same web process queues again and a worker runs the sync."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from django.test import Client
from kombu import pools

from gpuposture.celery import app as celery_app
from inventory.models import BulletinImport, SyncRun
from inventory.services import cluster_sync
from tests.conftest import api_client
from tests.faults.switch import TcpSwitch
from tests.workers import REDIS, Worker, new_queue, wait_for

pytestmark = [pytest.mark.broker, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

REFUSED = "The task queue is unreachable; the sync was not started. Try again when Redis is back."
QUICKLY = 10.0  # seconds: a request that queues must answer well before a proxy gives up


def _reset_celery_connections() -> None:
    # The app keeps its broker pool, routing (amqp) and result backend from the first use;
    # drop them so the next publish reads the conf set by this test.
    # kombu keeps one pool per broker URL for the whole process: close and forget them all,
    # or the next test on the same URL (the conftest's memory://) is handed a closed pool.
    pools.reset()
    celery_app._pool = None
    celery_app.__dict__.pop("amqp", None)
    celery_app._backend_cache = None
    celery_app._local.__dict__.pop("backend", None)


@pytest.fixture
def redis_switch() -> Iterator[tuple[TcpSwitch, str]]:
    """This process publishes to Redis through a switch the test cuts and restores (the
    conftest's eager mode is turned off here, as in production); yields (switch, queue)."""
    queue = new_queue()
    switch = TcpSwitch(REDIS).up()
    url = f"redis://127.0.0.1:{switch.port}/15"
    conf = celery_app.conf
    keys = ("task_always_eager", "broker_url", "result_backend", "task_default_queue")
    saved = {key: conf[key] for key in keys}
    conf.update(task_always_eager=False, broker_url=url, result_backend=url)
    conf.update(task_default_queue=queue)
    _reset_celery_connections()
    try:
        yield switch, queue
    finally:
        conf.update(saved)
        _reset_celery_connections()
        switch.down()


def timed(call):
    started = time.monotonic()
    response = call()
    return response, time.monotonic() - started


def test_with_redis_down_pages_serve_and_a_sync_is_refused_then_queued_when_back(
    live_cluster, personas, redis_switch
):
    cluster, _api = live_cluster
    switch, queue = redis_switch
    good = cluster_sync(cluster=cluster)  # the last good inventory, synced in-process
    nodes, pods = cluster.nodes.count(), cluster.pods.count()
    assert good.status == "succeeded" and nodes and pods
    switch.down()

    page = Client()
    page.force_login(personas["platform_engineer"])
    for url in ("/", "/nodes/", "/findings/", "/clusters/live/", "/bulletins/", "/healthz"):
        response, seconds = timed(lambda url=url: page.get(url))
        assert response.status_code == 200, url
        assert seconds < QUICKLY, url

    response, seconds = timed(lambda: page.post("/clusters/live/sync/", follow=True))
    assert seconds < QUICKLY
    assert response.status_code == 200
    assert REFUSED in response.content.decode()
    refused_on_page = SyncRun.objects.filter(cluster=cluster).latest("pk")
    assert refused_on_page.status == "failed" and refused_on_page.error == REFUSED

    api = api_client(personas["platform_engineer"])
    response, seconds = timed(lambda: api.post("/api/v1/clusters/live/sync/"))
    assert seconds < QUICKLY
    assert response.status_code == 503
    assert response.json()["detail"] == REFUSED
    assert response.json()["run"]["status"] == "failed"
    assert response["Retry-After"] == "30"
    assert SyncRun.objects.get(pk=response.json()["run"]["id"]).error == REFUSED

    # Nothing was queued and nothing was lost: the inventory is the last good one.
    cluster.refresh_from_db()
    assert (cluster.nodes.count(), cluster.pods.count()) == (nodes, pods)
    assert cluster.sync_lock_token == ""
    runs = SyncRun.objects.filter(cluster=cluster).order_by("pk")
    assert list(runs.values_list("status", flat=True)) == ["succeeded", "failed", "failed"]

    switch.up()  # Redis is back; this process reconnects by itself
    response, seconds = timed(lambda: api.post("/api/v1/clusters/live/sync/"))
    assert seconds < QUICKLY
    assert response.status_code == 202, response.json()
    queued = response.json()["id"]
    worker = Worker(queue).start()
    try:
        wait_for(
            lambda: SyncRun.objects.get(pk=queued).status == "succeeded",
            90,
            "the sync queued after Redis came back to run on a worker",
        )
    except AssertionError:
        raise AssertionError(f"worker log:\n{worker.stop()}") from None
    finally:
        worker.stop()
    assert (cluster.nodes.count(), cluster.pods.count()) == (nodes, pods)


def test_with_redis_down_a_url_import_is_refused_and_recorded(personas, redis_switch):
    switch, _queue = redis_switch
    switch.down()
    api = api_client(personas["security_lead"])
    urls = ["https://vendor.example/csaf/provider-metadata.json"]
    response, seconds = timed(lambda: api.post("/api/v1/bulletins/", {"urls": urls}, format="json"))
    assert seconds < QUICKLY
    assert response.status_code == 503
    detail = response.json()["detail"]
    assert detail == REFUSED.replace("the sync", "the import")
    record = BulletinImport.objects.get(pk=response.json()["import"]["id"])
    assert (record.status, record.error, record.sources) == ("failed", detail, urls)

    page = Client()
    page.force_login(personas["security_lead"])
    response, seconds = timed(
        lambda: page.post("/bulletins/import/", {"urls": urls[0]}, follow=True)
    )
    assert seconds < QUICKLY
    assert response.status_code == 200
    assert detail in response.content.decode()
    assert BulletinImport.objects.filter(status="failed", error=detail).count() == 2


def test_with_redis_down_a_patch_sla_change_is_saved_and_the_rescore_waits(personas, redis_switch):
    switch, _queue = redis_switch
    switch.down()
    lead = api_client(personas["security_lead"])
    response, seconds = timed(
        lambda: lead.patch("/api/v1/patch-sla/", {"critical": 3}, format="json")
    )
    assert seconds < QUICKLY
    assert response.status_code == 200
    rows = {row["severity"]: row["days"] for row in lead.get("/api/v1/patch-sla/").json()}
    assert rows["critical"] == 3
