"""Ingesting telemetry (the command, the beat task, a Prometheus pull) rolls up the hours it
touched, so the utilisation page and API show them at once, not after beat's roll-up. The hour
under way is rolled from the samples so far and shown partial; beat's read of a source leaves
it to beat's roll-up (every 15 min), which takes it too."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from telemetry.models import GpuUsageHourly, TelemetrySource
from telemetry.rollup import telemetry_rollup
from telemetry.services import samples_ingest
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


@pytest.fixture
def mid_hour():
    """Twenty minutes into this hour: a test about the hour under way must not see it end."""
    with time_machine.travel(this_hour() + timedelta(minutes=20), tick=True):
        yield


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
    assert "25 samples for lab (25 tenant); 3 hour(s) rolled up" in out.getvalue()
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


def test_the_hour_under_way_is_rolled_at_ingest_and_shown_partial(
    small_world, personas, tmp_path, mid_hour
):
    make_exclusive()
    scrape = tmp_path / "now.txt"
    scrape.write_text(exporter_text(this_hour(), 0))  # one sample at the top of this hour
    out = io.StringIO()
    call_command("ingest_dcgm", str(scrape), cluster="lab", stdout=out)
    assert "1 hour(s) rolled up" in out.getvalue()
    assert GpuUsageHourly.objects.filter(hour=this_hour()).exists()
    lead = personas["security_lead"]
    data = api_client(lead).get("/api/v1/utilisation/?days=7").json()
    assert data["partial_from"].startswith(this_hour().strftime("%Y-%m-%dT%H:00:00"))
    (today,) = [row for row in data["tenant_days"] if row["tenant"] == "alpha"]
    assert today["partial"] is True and today["gpu_hours"] == pytest.approx(0.5 / 60, abs=1e-4)
    # A later ingest in the same hour rolls it again: the hour grows, it is not counted twice.
    scrape.write_text(exporter_text(this_hour(), 10))
    call_command("ingest_dcgm", str(scrape), cluster="lab", stdout=io.StringIO())
    assert alpha_hours(lead) == pytest.approx((10 + 0.5) / 60, abs=1e-4)
    page = Client()
    page.force_login(lead)
    html = page.get("/utilisation/?days=7").content.decode()
    assert "data-partial" in html and f"since {this_hour():%H:%M} UTC" in html


def test_complete_days_are_not_partial_and_no_note_without_today(small_world, personas):
    make_exclusive()
    day_before = this_hour() - timedelta(days=2)
    samples_ingest(
        cluster=small_world,
        samples=series(day_before, 55, busy=50, namespace="team-alpha", pod="trainer-0"),
    )
    telemetry_rollup()
    lead = personas["security_lead"]
    rows = api_client(lead).get("/api/v1/utilisation/?days=7").json()["tenant_days"]
    assert rows and not any(row["partial"] for row in rows)
    page = Client()
    page.force_login(lead)
    assert "data-partial" not in page.get("/utilisation/?days=7").content.decode()


def test_beat_reads_leave_the_hour_under_way_to_beats_roll_up(
    small_world, personas, settings, mid_hour
):
    """Re-rolling the hour on each read (every minute) would cost up to an hour's roll-up a
    minute on a large fleet; beat's roll-up (every 15 min) takes it."""
    make_exclusive()
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = ["127.0.0.1"]
    with local_server({"/metrics": exporter_text(this_hour(), 0).encode()}) as server:
        TelemetrySource.objects.create(
            cluster=small_world, kind="exporter", url=server.url("/metrics")
        )
        assert read_telemetry_sources() == {"read": 1, "failed": 0}
    assert not GpuUsageHourly.objects.filter(hour__gte=this_hour()).exists()
    telemetry_rollup()
    assert alpha_hours(personas["security_lead"]) == pytest.approx(0.5 / 60, abs=1e-4)
