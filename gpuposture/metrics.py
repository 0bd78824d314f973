"""/metrics: the app's own Prometheus metrics, plus gauges read from the database at scrape
time. Wiring, not an app module: it reads inventory, posture and tenants models, which
gpuposture.base (the lowest layer) may not import."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import DatabaseError
from django.db.models import Count, Max, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client.core import GaugeMetricFamily

from gpuposture.base.finding_status import status_q
from gpuposture.base.metrics import bearer_matches, exposition, unauthorised_response
from inventory.models import Cluster, SyncRun
from posture.currency import clusters_currency_all
from posture.models import Finding, Severity
from tenants.models import Tenant

logger = logging.getLogger(__name__)


class DatabaseCollector:
    """Gauges computed from the database on each scrape (four queries). The operator's token
    sees everything: no per-user scoping applies here."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily(
            "gpuposture_database_up", "1 when the database answered this scrape's queries."
        )
        try:
            families = list(self._families())
        except DatabaseError:
            logger.exception("Metrics: the database did not answer")
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families

    def _families(self) -> Iterator[GaugeMetricFamily]:
        last_sync = GaugeMetricFamily(
            "gpuposture_last_successful_sync_timestamp_seconds",
            "Unix time a cluster's last successful sync finished (0: never).",
            labels=["cluster"],
        )
        clusters = Cluster.objects.annotate(
            last_ok=Max(
                "sync_runs__finished_at", filter=Q(sync_runs__status=SyncRun.Status.SUCCEEDED)
            )
        ).values_list("name", "last_ok")
        for name, last_ok in clusters.order_by("name"):
            last_sync.add_metric([name], last_ok.timestamp() if last_ok else 0)
        yield last_sync

        open_findings = GaugeMetricFamily(
            "gpuposture_open_findings", "Findings open now, by severity.", labels=["severity"]
        )
        counts = dict(
            # Open as shown: an acceptance past its expiry counts before a re-score.
            Finding.objects.filter(status_q(Finding.Status.OPEN, timezone.now()))
            .values_list("severity")
            .annotate(n=Count("id"))
            .order_by()
        )
        for severity in Severity.values:
            open_findings.add_metric([severity], counts.get(severity, 0))
        yield open_findings

        yield GaugeMetricFamily(
            "gpuposture_tenants", "Tenants registered.", value=Tenant.objects.count()
        )
        yield from _currency_families()


def _currency_families() -> Iterator[GaugeMetricFamily]:
    """Per cluster: how old its inventory is, whether it is stale and why, and whether a
    re-score is pending (posture.currency, the rule the pages' banners show; one query)."""
    families = {
        "age": GaugeMetricFamily(
            "gpuposture_cluster_last_good_sync_age_seconds",
            "Seconds since the cluster's last successful sync finished (absent: never).",
            labels=["cluster"],
        ),
        "stale": GaugeMetricFamily(
            "gpuposture_cluster_stale",
            "1 when the last sync failed or the last good one is older than twice the interval.",
            labels=["cluster"],
        ),
        "failed": GaugeMetricFamily(
            "gpuposture_cluster_last_sync_failed",
            "1 when the cluster's newest finished sync failed.",
            labels=["cluster"],
        ),
        "pending": GaugeMetricFamily(
            "gpuposture_cluster_rescore_pending",
            "1 while a re-score of the cluster waits in its debounce window or the queue.",
            labels=["cluster"],
        ),
    }
    for c in clusters_currency_all().clusters:
        if c.freshness.age_seconds is not None:
            families["age"].add_metric([c.name], round(c.freshness.age_seconds, 3))
        families["stale"].add_metric([c.name], int(c.freshness.stale))
        families["failed"].add_metric([c.name], int(c.freshness.failed))
        families["pending"].add_metric([c.name], int(c.pending))
    yield from families.values()


@login_not_required  # it has its own authentication: the metrics bearer token
@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text exposition, for `Authorization: Bearer <GPUPOSTURE_METRICS_TOKEN>` only;
    without a configured token the endpoint does not exist."""
    token = settings.GPUPOSTURE_METRICS_TOKEN
    if not token:
        raise Http404("Metrics are disabled.")
    if not bearer_matches(request.headers.get("Authorization"), token):
        return unauthorised_response()
    body, content_type = exposition([DatabaseCollector()])
    return HttpResponse(body, content_type=content_type)
