"""A DCGM ingest re-scores the cluster it feeds (DESIGN §5: every change that can move a score
re-scores at once): the file and Prometheus paths of `ingest_dcgm` and beat's source reads. A
node whose first samples arrive no longer has an open ATTR-003 ("no telemetry") until someone
runs `manage.py score`. Beat reads every few minutes, so only samples that can move a check
re-score: a new or silent device, a busy reading, a GPU with other holders; idle readings of
the devices already reporting do not."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from posture.models import PostureRun
from telemetry import services
from telemetry.samples import GpuSample
from telemetry.services import exporter_text_ingest
from tests.test_telemetry import UUID, open_findings

pytestmark = pytest.mark.django_db


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """Run a change as a request would: its on-commit work (the re-score) runs at the end."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def exporter_text(util: float, *, namespace: str = "team-alpha", pod: str = "trainer-0") -> str:
    """A DCGM-Exporter page for the small world's GPU node, one GPU."""
    labels = (
        f'gpu="0",UUID="{UUID}",device="nvidia0",modelName="NVIDIA A100",Hostname="gpu-ts-1",'
        f'namespace="{namespace}",pod="{pod}",container="main"'
    )
    return (
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {util}\n"
        "# TYPE DCGM_FI_DEV_FB_USED gauge\n"
        f"DCGM_FI_DEV_FB_USED{{{labels}}} 1024\n"
    )


def attr3_open_on(node: str) -> bool:
    return any(f.subject_name == node for f in open_findings("ATTR-003"))


def runs() -> int:
    return PostureRun.objects.count()


def test_ingesting_a_file_closes_the_nodes_attr_003_without_a_score(
    small_world, committed, tmp_path
):
    assert attr3_open_on("gpu-ts-1")  # synced and scored, no sample yet
    path = tmp_path / "metrics.txt"
    path.write_text(exporter_text(5))
    before = runs()
    with committed():
        call_command("ingest_dcgm", str(path), cluster="lab", stdout=io.StringIO())
    assert not attr3_open_on("gpu-ts-1")
    assert runs() == before + 1


def test_a_prometheus_ingest_re_scores_too(small_world, committed, monkeypatch):
    now = timezone.now()
    samples = [
        GpuSample(
            time=now - timedelta(minutes=m),
            hostname="gpu-ts-1",
            gpu="0",
            uuid=UUID,
            model="NVIDIA A100",
            util=3.0,
            namespace="team-alpha",
            pod="trainer-0",
        )
        for m in (10, 5, 0)
    ]
    monkeypatch.setattr(services, "query_range_samples", lambda *a, **k: samples)
    out = io.StringIO()
    with committed():
        call_command(
            "ingest_dcgm", "--prometheus", "http://prom.invalid", cluster="lab", stdout=out
        )
    assert not attr3_open_on("gpu-ts-1")


def test_only_readings_that_can_move_a_check_re_score(small_world, committed):
    now = timezone.now()

    def read(minutes_ago: int, util: float, **holder) -> int:
        """One beat read of the exporter page; how many scores it caused."""
        before = runs()
        with committed():
            exporter_text_ingest(
                cluster=small_world,
                text=exporter_text(util, **holder),
                read_at=now - timedelta(minutes=minutes_ago),
                under_way=False,
            )
        return runs() - before

    assert read(30, 5) == 1  # the cluster's first samples: ATTR-003 closes
    assert read(25, 5) == 0  # the same GPU, idle, the same pod: nothing to judge anew
    assert read(20, 5) == 0
    assert read(15, 90) == 1  # busy: whether a pod holds it is for the checks (ATTR-001)
    assert read(10, 5) == 0
    # Another tenant on the GPU: a handover LEAK-001 weighs.
    assert read(5, 5, namespace="beta-prod", pod="inference-0") == 1
    assert read(0, 5, namespace="beta-prod", pod="inference-0") == 0
    # The same reading again (a read overlapping the last): stored already, nothing new.
    assert read(0, 5, namespace="beta-prod", pod="inference-0") == 0


def test_a_node_speaking_again_after_a_silence_re_scores(small_world, committed, settings):
    settings.GPUPOSTURE_SILENT_NODE_MINUTES = 60
    now = timezone.now()
    exporter_text_ingest(
        cluster=small_world, text=exporter_text(5), read_at=now - timedelta(hours=3)
    )
    call_command("score", stdout=io.StringIO())
    assert attr3_open_on("gpu-ts-1")  # quiet for three hours: silent
    with committed():
        exporter_text_ingest(cluster=small_world, text=exporter_text(5), read_at=now)
    assert not attr3_open_on("gpu-ts-1")
