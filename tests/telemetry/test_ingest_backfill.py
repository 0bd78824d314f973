"""Readings older than a device's latest stored sample are new data when they are not stored:
a Prometheus backfill after a file ingest, a second source, reads out of order. Busy ones, or
ones held by others, re-score the cluster at once as later ones do (ATTR-001 opens without
`manage.py score`); what is stored already, read again, still does not."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from inventory.models import Pod
from telemetry import services
from telemetry.services import exporter_text_ingest, samples_ingest
from tests.telemetry.test_ingest_rescore import committed, exporter_text, runs  # noqa: F401
from tests.test_telemetry import make_exclusive, open_findings, series

pytestmark = pytest.mark.django_db


@pytest.fixture
def idle_now(small_world, committed):  # noqa: F811
    """The small world's GPU, whole, no pod on it, reporting idle now from a file ingest."""
    make_exclusive()
    Pod.objects.filter(node__name="gpu-ts-1").exclude(namespace="gpu-operator").delete()
    with committed():
        exporter_text_ingest(
            cluster=small_world,
            text=exporter_text(2, namespace="", pod=""),
            read_at=timezone.now(),
            under_way=False,
        )
    assert not open_findings("ATTR-001")
    return timezone.now()


def _prometheus(samples, monkeypatch, committed) -> int:  # noqa: F811
    """An `ingest_dcgm --prometheus` bringing these samples; how many scores it caused."""
    monkeypatch.setattr(services, "query_range_samples", lambda *a, **k: samples)
    before = runs()
    with committed():
        call_command(
            "ingest_dcgm",
            "--prometheus",
            "http://prom.invalid",
            "--since",
            "1h",
            cluster="lab",
            stdout=io.StringIO(),
        )
    return runs() - before


def test_backfilled_busy_readings_open_attr_001_without_a_score(
    idle_now,
    monkeypatch,
    committed,  # noqa: F811
):
    busy = series(idle_now - timedelta(minutes=40), 20, busy=95, step=1)
    assert _prometheus(busy, monkeypatch, committed) == 1
    (finding,) = open_findings("ATTR-001")
    assert finding.subject_name == "gpu-ts-1"


def test_backfilled_readings_read_again_or_idle_do_not_re_score(
    small_world,
    idle_now,
    monkeypatch,
    committed,  # noqa: F811
):
    busy = series(idle_now - timedelta(minutes=40), 20, busy=95, step=1)
    samples_ingest(cluster=small_world, samples=busy)  # stored already: a read overlapping
    assert _prometheus(busy, monkeypatch, committed) == 0
    idle = series(idle_now - timedelta(minutes=50), 5, busy=2, step=1)
    assert _prometheus(idle, monkeypatch, committed) == 0  # idle, by the same (no) holder


def test_backfilled_readings_of_another_holder_re_score(idle_now, monkeypatch, committed):  # noqa: F811
    held = series(
        idle_now - timedelta(minutes=30), 5, busy=2, step=1, namespace="beta-prod", pod="x-0"
    )
    assert _prometheus(held, monkeypatch, committed) == 1
