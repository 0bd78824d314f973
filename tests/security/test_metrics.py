"""The app's own Prometheus metrics at /metrics: token-protected, bounded labels, request
latency, task durations and failures, and database gauges (last successful sync per cluster)."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from celery.signals import worker_ready
from prometheus_client.parser import text_string_to_metric_families

from gpuposture.celery import app as celery_app

TOKEN = "metrics-token-for-tests-0123456789"
AUTH = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}


@celery_app.task(name="tests.security.explode")
def explode() -> None:
    raise RuntimeError("this task always fails")


@pytest.fixture
def metrics_token(settings):
    settings.GPUPOSTURE_METRICS_TOKEN = TOKEN
    return TOKEN


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of an exposition, keyed by (name, labels)."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape(client) -> str:
    response = client.get("/metrics", **AUTH)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    return response.content.decode()


def value(text: str, name: str, **labels: str) -> float | None:
    return samples(text).get((name, frozenset(labels.items())))


# --- protection -------------------------------------------------------------------------------
@pytest.mark.django_db
def test_without_a_configured_token_metrics_do_not_exist(client, settings, personas):
    settings.GPUPOSTURE_METRICS_TOKEN = None
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", **AUTH).status_code == 404
    client.force_login(personas["security_lead"])  # not even for a signed-in user
    assert client.get("/metrics").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token", f"Token {TOKEN}", f"Basic {TOKEN}", "Bearer", f"Bearer {TOKEN}x"],
)
def test_wrong_or_missing_token_is_401(client, metrics_token, authorization):
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    response = client.get("/metrics", **headers)
    assert response.status_code == 401  # not a redirect to the login page
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert b"gpuposture_" not in response.content


@pytest.mark.django_db
def test_a_session_is_not_enough(client, metrics_token, personas):
    client.force_login(personas["security_lead"])
    assert client.get("/metrics").status_code == 401


# --- content ----------------------------------------------------------------------------------
@pytest.mark.django_db
def test_database_gauges(client, metrics_token, small_world):
    from inventory.models import Cluster, SyncRun
    from posture.models import Finding
    from tenants.models import Tenant

    Cluster.objects.create(name="never-synced")
    last_ok = SyncRun.objects.filter(cluster=small_world, status="succeeded").latest("finished_at")
    text = scrape(client)

    assert value(text, "gpuposture_database_up") == 1
    assert value(
        text, "gpuposture_last_successful_sync_timestamp_seconds", cluster="lab"
    ) == pytest.approx(last_ok.finished_at.timestamp())
    assert (
        value(text, "gpuposture_last_successful_sync_timestamp_seconds", cluster="never-synced")
        == 0
    )
    for severity in ("critical", "high", "medium", "low"):
        expected = Finding.objects.filter(status="open", severity=severity).count()
        assert value(text, "gpuposture_open_findings", severity=severity) == expected
    assert (
        sum(
            value(text, "gpuposture_open_findings", severity=s)
            for s in ("critical", "high", "medium", "low")
        )
        == Finding.objects.filter(status="open").count()
        > 0
    )
    assert value(text, "gpuposture_tenants") == Tenant.objects.count() > 0


@pytest.mark.django_db
def test_request_latency_is_labelled_by_route_name_never_by_path(
    client, metrics_token, small_world, personas
):
    from inventory.models import Node

    node = Node.objects.filter(cluster=small_world).first()
    client.force_login(personas["auditor"])
    before = scrape(client)
    labels = {"method": "GET", "route": "node-detail", "status": "2xx"}
    count = "gpuposture_http_request_duration_seconds_count"
    start = value(before, count, **labels) or 0

    assert client.get(f"/nodes/{small_world.name}/{node.name}/").status_code == 200
    assert client.get("/no-such-page/at/all/").status_code == 404
    assert client.get("/api/v1/findings/").status_code == 200
    text = scrape(client)

    assert value(text, count, **labels) == start + 1
    assert value(text, count, method="GET", route="unmatched", status="4xx") >= 1
    assert value(text, count, method="GET", route="api:finding-list", status="2xx") >= 1
    assert f"/nodes/{small_world.name}/" not in text
    assert node.name not in text
    assert "no-such-page" not in text


@pytest.mark.django_db
def test_task_durations_and_failures(client, metrics_token, small_world):
    from posture.tasks import score

    before = scrape(client)
    duration = "gpuposture_task_duration_seconds_count"
    failures = "gpuposture_task_failures_total"
    scored = value(before, duration, task="posture.tasks.score") or 0
    failed = value(before, failures, task="tests.security.explode") or 0

    score.delay()
    with pytest.raises(RuntimeError):
        explode.delay()
    text = scrape(client)

    assert value(text, duration, task="posture.tasks.score") == scored + 1
    assert (value(text, failures, task="posture.tasks.score") or 0) == (
        value(before, failures, task="posture.tasks.score") or 0
    )
    assert value(text, failures, task="tests.security.explode") == failed + 1
    assert value(text, duration, task="tests.security.explode") >= 1


# --- the worker's own endpoint ----------------------------------------------------------------
def fetch(url: str, token: str | None) -> tuple[int, str]:
    request = urllib.request.Request(url)  # noqa: S310 - 127.0.0.1 only
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_worker_serves_its_metrics_only_with_the_token(settings):
    settings.GPUPOSTURE_METRICS_TOKEN = TOKEN
    settings.GPUPOSTURE_WORKER_METRICS_PORT = 0  # not configured: nothing served
    assert [server for _, server in worker_ready.send(sender=None)] == [None]

    with pytest.raises(RuntimeError):
        explode.delay()
    settings.GPUPOSTURE_WORKER_METRICS_ADDR = "127.0.0.1"
    settings.GPUPOSTURE_WORKER_METRICS_PORT = free_port()
    [(_, server)] = worker_ready.send(sender=None)
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        assert fetch(url, None)[0] == 401
        assert fetch(url, "wrong")[0] == 401
        status, text = fetch(url, TOKEN)
        assert status == 200
        assert value(text, "gpuposture_task_failures_total", task="tests.security.explode") >= 1
    finally:
        server.shutdown()
        server.server_close()


def test_worker_without_a_token_serves_nothing(settings):
    settings.GPUPOSTURE_METRICS_TOKEN = None
    settings.GPUPOSTURE_WORKER_METRICS_PORT = free_port()
    assert [server for _, server in worker_ready.send(sender=None)] == [None]


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
