"""Staleness: the rule (a table, no database), the banner on the overview, a tenant's page and
the cluster page, what a tenant viewer sees of it, and the per-cluster lines of /metrics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.utils import timezone

from inventory.freshness import cluster_freshness
from inventory.models import SyncRun
from posture.models import PostureRun
from tenants.models import Tenant
from tests.conftest import world_snapshot_path

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
AUTH_ERROR = (
    "HTTP 401 from https://10.0.0.1:6443/api/v1/namespaces/beta-prod/pods: Unauthorized "
    "(the service account token expired).\nresponse body: {...}"
)


@pytest.mark.parametrize(
    ("interval", "age_minutes", "status", "stale", "failed", "reason"),
    [
        (60, 30, "succeeded", False, False, ""),
        (60, 120, "succeeded", False, False, ""),  # exactly twice the interval: not yet
        (60, 121, "succeeded", True, False, "no successful sync for 2 h (expected every 60 min)"),
        (15, 45, "succeeded", True, False, "no successful sync for 45 min (expected every 15 min)"),
        (0, 60 * 24 * 30, "succeeded", False, False, ""),  # manual syncs only: never by age
        (60, 10, "failed", True, True, "the last sync failed: HTTP 401 from https://10.0.0.1"),
        (0, None, "failed", True, True, "the last sync failed: HTTP 401 from https://10.0.0.1"),
        (60, None, None, False, False, ""),  # never synced, nothing tried: nothing to warn of
    ],
)
def test_the_staleness_rule(interval, age_minutes, status, stale, failed, reason):
    last_good = NOW - timedelta(minutes=age_minutes) if age_minutes is not None else None
    result = cluster_freshness(
        now=NOW,
        interval_minutes=interval,
        last_good_at=last_good,
        last_status=status,
        last_error=AUTH_ERROR if status == "failed" else "",
    )
    assert (result.stale, result.failed) == (stale, failed)
    assert result.reason.startswith(reason)
    assert "\n" not in result.reason  # the first line of the error only
    assert not result.reason.endswith(".")  # the banner ends the sentence itself
    if age_minutes is not None:
        assert result.age_seconds == age_minutes * 60


@pytest.mark.parametrize(
    ("interval", "registered_minutes", "stale", "reason"),
    [
        # Registered 3 days ago, never read: 72 syncs missed (a kubeconfig that never worked).
        (
            60,
            3 * 24 * 60,
            True,
            "never synced successfully since it was registered 3 d ago (expected every 60 min)",
        ),
        (60, 121, True, "never synced successfully since it was registered 2 h ago"),
        (60, 90, False, ""),  # the first sync is not due twice over yet
        (0, 30 * 24 * 60, False, ""),  # snapshot-only, synced by hand: never by age
    ],
)
def test_a_scheduled_cluster_never_synced_is_judged_from_its_registration(
    interval, registered_minutes, stale, reason
):
    result = cluster_freshness(
        now=NOW,
        interval_minutes=interval,
        last_good_at=None,
        last_status=None,
        registered_at=NOW - timedelta(minutes=registered_minutes),
    )
    assert (result.stale, result.failed) == (stale, False)
    assert result.reason.startswith(reason)
    assert result.age_seconds is None  # no good sync: no age of one (the metric stays absent)


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (
            "the snapshot could not be read: /srv/gpuposture/var/snapshots/lab.json: not JSON",
            "the last sync failed: the snapshot could not be read: lab.json: not JSON",
        ),
        (
            "no .json/.yaml files in /srv/drop/lab/",
            "the last sync failed: no .json/.yaml files in lab/",
        ),
        # A URL's path and a Kubernetes API path say what failed, and no file on the server.
        (
            AUTH_ERROR,
            "the last sync failed: HTTP 401 from https://10.0.0.1:6443/api/v1/namespaces/",
        ),
        (
            "list /apis/resource.k8s.io/v1/resourceclaims: HTTP 403",
            "the last sync failed: list /apis/resource.k8s.io/v1/resourceclaims: HTTP 403",
        ),
    ],
)
def test_a_failed_sync_names_a_server_file_without_its_directories(error, reason):
    """The banner is read by every reader of the cluster, tenant viewers too: the server's
    file layout is none of theirs (the cluster page's sync runs keep the whole error)."""
    result = cluster_freshness(
        now=NOW, interval_minutes=60, last_good_at=None, last_status="failed", last_error=error
    )
    assert result.reason.startswith(reason)
    assert "/srv" not in result.reason


@pytest.fixture
def scheduled(small_world):
    """The small world's cluster re-reads its snapshot every hour."""
    small_world.snapshot_paths = [str(world_snapshot_path())]
    small_world.sync_interval_minutes = 60
    small_world.save()
    return small_world


def failed_sync(cluster, error: str = AUTH_ERROR) -> SyncRun:
    return SyncRun.objects.create(
        cluster=cluster,
        source="kubeconfig",
        status=SyncRun.Status.FAILED,
        trigger="schedule",
        finished_at=timezone.now(),
        error=error,
    )


PAGES = ("/", "/tenants/alpha/", "/clusters/lab/")


@pytest.mark.django_db
def test_a_fresh_cluster_shows_no_banner_and_the_last_score(scheduled, personas, client):
    scored = PostureRun.objects.get().finished_at
    client.force_login(personas["security_lead"])
    for page in PAGES:
        html = client.get(page).content.decode()
        assert "data-stale-cluster" not in html, page
        assert "re-scoring" not in html, page
        assert f"Last scored {scored:%Y-%m-%d %H:%M:%S} UTC" in html, page


@pytest.mark.django_db
def test_a_cluster_not_synced_for_twice_its_interval_is_stale(scheduled, personas, client):
    with time_machine.travel(timezone.now() + timedelta(hours=3)):
        client.force_login(personas["security_lead"])  # a session of that time
        for page in PAGES:
            html = client.get(page).content.decode()
            assert 'data-stale-cluster="lab"' in html, page
            assert "no successful sync for 3 h (expected every 60 min)" in html, page
            assert "Last good sync 3 h ago" in html, page


@pytest.mark.django_db
def test_a_failed_last_sync_shows_its_reason_at_once(scheduled, personas, client):
    failed_sync(scheduled)
    client.force_login(personas["security_lead"])
    for page in PAGES:
        html = client.get(page).content.decode()
        assert 'data-stale-cluster="lab"' in html, page
        assert "the last sync failed: HTTP 401" in html and "beta-prod" in html, page


@pytest.mark.django_db
def test_a_tenant_viewer_sees_the_banner_without_other_tenants_names(scheduled, personas, client):
    failed_sync(scheduled)
    client.force_login(personas["viewer_alpha"])
    for page in ("/", "/tenants/alpha/", "/clusters/lab/"):
        html = client.get(page).content.decode()
        assert 'data-stale-cluster="lab"' in html, page
        assert "the last sync failed: HTTP 401" in html, page
        assert "beta-prod" not in html and "Beta Corp" not in html, page


@pytest.mark.django_db
def test_a_tenant_page_shows_only_the_tenants_clusters(scheduled, personas, client):
    from inventory.sync import cluster_get_or_create

    other = cluster_get_or_create(name="far-away")  # no pods of alpha's
    failed_sync(other, "HTTP 503 from https://far-away.example:6443/version")
    client.force_login(personas["security_lead"])
    assert 'data-stale-cluster="far-away"' in client.get("/").content.decode()
    assert 'data-stale-cluster="far-away"' not in client.get("/tenants/alpha/").content.decode()


def registered_unread(name: str = "dr-site", days: int = 3):
    """A cluster registered with a kubeconfig and a 60-minute interval `days` ago, never read."""
    from inventory.models import Cluster

    cluster = Cluster.objects.create(
        name=name, source=Cluster.Source.KUBECONFIG, kubeconfig_path="/nowhere/dr-site.yaml"
    )
    Cluster.objects.filter(pk=cluster.pk).update(created_at=timezone.now() - timedelta(days=days))
    return cluster


@pytest.mark.django_db
def test_a_cluster_registered_days_ago_and_never_synced_is_stale(
    scheduled, personas, client, settings
):
    registered_unread()
    client.force_login(personas["security_lead"])
    html = client.get("/").content.decode()
    assert 'data-stale-cluster="dr-site"' in html
    assert "never synced successfully since it was registered 3 d ago" in html
    assert 'data-stale-cluster="lab"' not in html  # read an hour ago: fresh
    settings.GPUPOSTURE_METRICS_TOKEN = "scrape-token-for-tests"
    text = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-for-tests").content
    assert 'gpuposture_cluster_stale{cluster="dr-site"} 1.0' in text.decode()
    assert 'gpuposture_cluster_last_sync_failed{cluster="dr-site"} 0.0' in text.decode()
    assert 'gpuposture_cluster_last_good_sync_age_seconds{cluster="dr-site"}' not in text.decode()


@pytest.mark.django_db
def test_a_cluster_registered_minutes_ago_is_not_stale_yet(scheduled, personas, client):
    registered_unread(days=0)
    client.force_login(personas["security_lead"])
    assert 'data-stale-cluster="dr-site"' not in client.get("/").content.decode()


@pytest.mark.django_db
def test_a_failed_cluster_where_a_tenant_runs_nothing_but_has_findings_shows_on_its_page(
    scheduled, personas, client
):
    """alpha's group may patch nodes on `far-away` (K8S-003), where alpha runs no pod: its
    score rests on that cluster's inventory, so its page says when that went stale."""
    from inventory.sync import cluster_get_or_create
    from posture.models import Finding

    other = cluster_get_or_create(name="far-away")
    failed_sync(other, "HTTP 503 from https://far-away.example:6443/version")
    finding = Finding.objects.create(
        check_id="K8S-003",
        severity="high",
        cluster=other,
        subject_kind="ClusterRoleBinding",
        subject_name="alpha-node-labeler",
        fingerprint="far-away-k8s-003",
        title="group:alpha-devs may patch nodes",
        first_seen=timezone.now(),
        last_seen=timezone.now(),
    )
    finding.tenants.add(Tenant.objects.get(slug="alpha"))
    for persona in ("security_lead", "viewer_alpha"):
        client.force_login(personas[persona])
        html = client.get("/tenants/alpha/").content.decode()
        assert 'data-stale-cluster="far-away"' in html, persona
        assert "the last sync failed: HTTP 503" in html, persona
    client.force_login(personas["security_lead"])
    html = client.get("/tenants/beta/").content.decode()
    assert 'data-stale-cluster="far-away"' not in html  # beta has nothing there

    finding.status = Finding.Status.ACCEPTED  # an accepted risk still rests on that cluster
    finding.save()
    assert 'data-stale-cluster="far-away"' in client.get("/tenants/alpha/").content.decode()
    finding.status = Finding.Status.RESOLVED  # gone: alpha's score no longer reads far-away
    finding.save()
    assert 'data-stale-cluster="far-away"' not in client.get("/tenants/alpha/").content.decode()


@pytest.mark.django_db
def test_metrics_expose_staleness_and_pending_rescores_per_cluster(scheduled, client, settings):
    from posture.models import ClusterScoreState

    settings.GPUPOSTURE_METRICS_TOKEN = "scrape-token-for-tests"
    auth = {"HTTP_AUTHORIZATION": "Bearer scrape-token-for-tests"}
    text = client.get("/metrics", **auth).content.decode()
    assert 'gpuposture_cluster_stale{cluster="lab"} 0.0' in text
    assert 'gpuposture_cluster_last_sync_failed{cluster="lab"} 0.0' in text
    assert 'gpuposture_cluster_rescore_pending{cluster="lab"} 0.0' in text
    age = next(
        line
        for line in text.splitlines()
        if line.startswith('gpuposture_cluster_last_good_sync_age_seconds{cluster="lab"}')
    )
    assert 0 <= float(age.split()[-1]) < 600

    failed_sync(scheduled)
    ClusterScoreState.objects.update_or_create(
        cluster=scheduled, defaults={"pending_since": timezone.now()}
    )
    text = client.get("/metrics", **auth).content.decode()
    assert 'gpuposture_cluster_stale{cluster="lab"} 1.0' in text
    assert 'gpuposture_cluster_last_sync_failed{cluster="lab"} 1.0' in text
    assert 'gpuposture_cluster_rescore_pending{cluster="lab"} 1.0' in text
    assert client.get("/metrics").status_code == 401  # the same token rule as before
