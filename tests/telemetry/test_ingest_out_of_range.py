"""A DCGM-Exporter page with a utilisation no GPU can report (-50 %, 250 %, 1e308 %) is
ingested without that value: the command says how many it skipped and why, and the
utilisation API's busy GPU-hours, busiest GPUs and chargeback count only the real readings
(before, -50 booked negative busy hours and 1e308 an 8e303 % GPU)."""

from __future__ import annotations

import io
import math
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from telemetry.models import GpuReading, TelemetrySource
from telemetry.tasks import read_telemetry_sources
from tests.conftest import api_client
from tests.telemetry.test_ingest_rollup import LABELS
from tests.test_fetch import local_server
from tests.test_telemetry import make_exclusive

pytestmark = pytest.mark.django_db


def numbers(value: object, path: str = "") -> list[tuple[str, float]]:
    """Every number in a decoded JSON answer, with where it is."""
    if isinstance(value, dict):
        return [n for k, v in value.items() for n in numbers(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [n for i, v in enumerate(value) for n in numbers(v, f"{path}[{i}]")]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [(path, float(value))]
    return []


def page(bad: str) -> str:
    """Five readings of gpu-ts-1's GPU 0 at 5-minute steps, three hours ago: 50 % but the
    second, `bad`."""
    start = timezone.now().astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    start -= timedelta(hours=3)
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    for minute, util in ((0, "50"), (5, bad), (10, "50"), (15, "50"), (20, "50")):
        ms = int((start + timedelta(minutes=minute)).timestamp() * 1000)
        lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{LABELS}}} {util} {ms}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("bad", ["-50", "250", "1e308"])
def test_a_utilisation_no_gpu_can_report_is_skipped_said_and_not_booked(
    small_world, personas, tmp_path, bad
):
    make_exclusive()
    scrape = tmp_path / "scrape.txt"
    scrape.write_text(page(bad))
    out, err = io.StringIO(), io.StringIO()
    call_command("ingest_dcgm", str(scrape), cluster="lab", stdout=out, stderr=err)
    assert "5 samples for lab" in out.getvalue()  # the GPU reported five times
    assert "1 value(s) skipped" in out.getvalue()
    assert "skipped 1 value(s)" in err.getvalue()
    assert "1 DCGM_FI_DEV_GPU_UTIL outside 0-100 %" in err.getvalue()
    assert sorted(GpuReading.objects.values_list("util", flat=True), key=str) == [50.0] * 4 + [None]

    answer = api_client(personas["security_lead"]).get("/api/v1/utilisation/?days=7").json()
    for path, value in numbers(answer):
        assert math.isfinite(value) and value >= 0, (path, value)
    (day,) = [row for row in answer["tenant_days"] if row["tenant"] == "alpha"]
    # Held 20 minutes and the last sample's default 30 s; busy at 50 % for the 15.5 minutes
    # of the real readings, none for the 5 minutes of the skipped one.
    assert day["gpu_hours"] == pytest.approx(20.5 / 60, abs=0.001)
    assert day["busy_gpu_hours"] == pytest.approx(0.5 * 15.5 / 60, abs=0.001)
    (charged,) = [row for row in answer["chargeback"] if row["tenant"] == "alpha"]
    assert charged["busy_gpu_hours"] == pytest.approx(day["busy_gpu_hours"])
    (gpu,) = answer["top_gpus"]
    assert gpu["busy"] == pytest.approx(day["busy_gpu_hours"], abs=0.001)


def test_a_clean_page_says_nothing_was_skipped(small_world, tmp_path):
    stamp = int(datetime.now(UTC).timestamp() * 1000)
    scrape = tmp_path / "scrape.txt"
    scrape.write_text(f"DCGM_FI_DEV_GPU_UTIL{{{LABELS}}} 100 {stamp}\n")
    out, err = io.StringIO(), io.StringIO()
    call_command("ingest_dcgm", str(scrape), cluster="lab", stdout=out, stderr=err)
    assert "skipped" not in out.getvalue() + err.getvalue()


def test_the_beat_read_of_a_source_logs_what_it_skipped(small_world, settings, caplog):
    make_exclusive()
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = ["127.0.0.1"]
    with local_server({"/metrics": page("250").encode()}) as server:
        TelemetrySource.objects.create(
            cluster=small_world, kind="exporter", url=server.url("/metrics")
        )
        assert read_telemetry_sources() == {"read": 1, "failed": 0}
    assert TelemetrySource.objects.get().last_error == ""  # read, as it was
    assert GpuReading.objects.filter(util=None).count() == 1
    said = [r.getMessage() for r in caplog.records if r.name == "telemetry.services"]
    assert said == ["telemetry of lab: skipped 1 DCGM_FI_DEV_GPU_UTIL outside 0-100 %"]
