"""Ingesting telemetry (the command, the beat task, a Prometheus pull) rolls up the complete
hours it touched, so the utilisation page and API show them at once, not after beat's roll-up."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from telemetry.models import GpuUsageHourly, TelemetrySource
from telemetry.services import samples_ingest, telemetry_rollup
from telemetry.tasks import read_telemetry_sources
from tests.conftest import api_client
from tests.test_fetch import local_server
from tests.test_telemetry import UUID, make_exclusive, series

pytestmark = pytest.mark.django_db
LABELS = (
    f'gpu="0",UUID="{UUID}",modelName="NVIDIA A100",Hostname="gpu-ts-1",'
    'exported_namespace="team-alpha",exported_pod="trainer-0"'
)


def this_hour() -> datetime:
    return timezone.now().astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def exporter_text(start: datetime, minutes: int, step: int = 5) -> str:
    """DCGM-Exporter text whose lines carry their own timestamps (as a saved scrape does)."""
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    for m in range(0, minutes + 1, step):
        ms = int((start + timedelta(minutes=m)).timestamp() * 1000)
        lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{LABELS}}} 60 {ms}")
    return "\n".join(lines) + "\n"


def alpha_hours(user) -> float:
    data = api_client(user).get("/api/v1/utilisation/?days=7").json()
    return sum(row["gpu_hours"] for row in data["tenant_days"] if row["tenant"] == "alpha")


def test_the_command_rolls_up_what_it_ingested_and_the_page_shows_it(
    small_world, personas, tmp_path
):
    make_exclusive()
    start = this_hour() - timedelta(hours=3)
    scrape = tmp_path / "scrape.txt"
    scrape.write_text(exporter_text(start, 120))
    out = io.StringIO()
    call_command("ingest_dcgm", str(scrape), cluster="lab", stdout=out)
    assert "25 samples for lab (25 tenant); 3 complete hour(s) rolled up" in out.getvalue()
    # Two hours at 5-minute steps, and the default 30 s for the last sample.
    lead = personas["security_lead"]
    assert alpha_hours(lead) == pytest.approx(2.0 + 0.5 / 60, abs=0.001)
    page = Client()
    page.force_login(lead)
    html = page.get("/utilisation/?days=7").content.decode()
    assert "hours-chart" in html and "alpha" in html


def test_the_beat_read_rolls_up_the_hours_it_read(small_world, personas, settings):
    make_exclusive()
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = ["127.0.0.1"]
    text = exporter_text(this_hour() - timedelta(hours=2), 60).encode()
    with local_server({"/metrics": text}) as server:
        TelemetrySource.objects.create(
            cluster=small_world, kind="exporter", url=server.url("/metrics")
        )
        assert read_telemetry_sources() == {"read": 1, "failed": 0}
    assert alpha_hours(personas["security_lead"]) == pytest.approx(1.0 + 0.5 / 60, abs=0.001)


def test_a_prometheus_pull_rolls_up_the_hours_it_pulled(small_world, personas, settings):
    make_exclusive()
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = ["127.0.0.1"]
    start = int((this_hour() - timedelta(hours=2)).timestamp())
    labels = {
        "Hostname": "gpu-ts-1",
        "gpu": "0",
        "UUID": UUID,
        "modelName": "NVIDIA A100",
        "exported_namespace": "team-alpha",
        "exported_pod": "trainer-0",
    }
    values = [[start + 300 * i, "57"] for i in range(13)]  # one hour at 5-minute steps
    answer = {
        "status": "success",
        "data": {"resultType": "matrix", "result": [{"metric": labels, "values": values}]},
    }
    with local_server({"/api/v1/query_range": json.dumps(answer).encode()}) as server:
        call_command(
            "ingest_dcgm",
            cluster="lab",
            prometheus=server.url(""),
            since="3h",
            stdout=io.StringIO(),
        )
    assert alpha_hours(personas["security_lead"]) == pytest.approx(1.0 + 0.5 / 60, abs=0.001)


def test_a_backfill_before_the_last_roll_up_is_rolled_up_too(small_world, personas, tmp_path):
    make_exclusive()
    now_hour = this_hour()
    recent = series(
        now_hour - timedelta(hours=2), 55, busy=50, namespace="team-alpha", pod="trainer-0"
    )
    samples_ingest(cluster=small_world, samples=recent)
    telemetry_rollup()  # beat has rolled up to two hours ago
    before = alpha_hours(personas["security_lead"])
    scrape = tmp_path / "late.txt"
    scrape.write_text(exporter_text(now_hour - timedelta(hours=5), 60))
    call_command("ingest_dcgm", str(scrape), cluster="lab", stdout=io.StringIO())
    # Beat would never look before the last hour it rolled; the ingest rolled these itself.
    assert alpha_hours(personas["security_lead"]) == pytest.approx(
        before + 1.0 + 0.5 / 60, abs=0.001
    )


def test_the_hour_under_way_is_left_to_beat(small_world, tmp_path):
    scrape = tmp_path / "now.txt"
    scrape.write_text(exporter_text(this_hour(), 0))
    out = io.StringIO()
    call_command("ingest_dcgm", str(scrape), cluster="lab", stdout=out)
    assert "0 complete hour(s) rolled up" in out.getvalue()
    assert not GpuUsageHourly.objects.filter(hour__gte=this_hour()).exists()
