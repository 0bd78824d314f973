"""ATTR-001 on sparse samples: every sample over a span longer than the window shows the GPU
busy with no workload, but they lie further apart than the gap over which continuity is
judged (ingests minutes apart, a slow scrape). The product still reports it, critical as a
dense run is, and says continuity was not observed. Guards: a sample held by a pod or
idle inside the span, or one sample alone, never fires."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from inventory.models import Pod
from posture.models import Finding
from posture.services import posture_evaluate
from telemetry.hijack import unexplained_busy
from telemetry.samples import GpuSample
from telemetry.services import samples_ingest
from tests.test_telemetry import UUID, make_exclusive

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def at(minutes: float, busy: float | None = 100.0, **kw) -> GpuSample:
    fields = {"hostname": "n1", "gpu": "0", "uuid": "GPU-1", **kw}
    return GpuSample(time=T0 + timedelta(minutes=minutes), util=busy, **fields)


def nobody(_: GpuSample) -> bool:
    return False


# --- the pure decision ---------------------------------------------------------------------


def test_three_ingests_ten_minutes_apart_over_nineteen_minutes_are_reported_not_continuous():
    [h] = unexplained_busy([at(0), at(10), at(19)], held=nobody)
    assert (h.start, h.end, h.continuous) == (T0, T0 + timedelta(minutes=19), False)
    assert (h.sample_count, h.largest_gap) == (3, timedelta(minutes=10))
    assert (h.mean_busy, h.peak_busy) == (100.0, 100.0)


def test_samples_45_minutes_apart_over_89_minutes_are_reported():
    [h] = unexplained_busy([at(0), at(45), at(89)], held=nobody)
    assert (h.sample_count, h.largest_gap, h.continuous) == (3, timedelta(minutes=45), False)


def test_one_sample_alone_never_fires():
    assert unexplained_busy([at(0)], held=nobody) == []


def test_sparse_span_of_the_window_or_less_does_not_fire():
    assert unexplained_busy([at(0), at(10), at(15)], held=nobody) == []  # strictly longer


def test_a_pod_holding_the_gpu_at_one_sample_inside_the_span_does_not_fire():
    found = unexplained_busy(
        [at(0), at(10), at(19)], held=lambda s: s.time == T0 + timedelta(minutes=10)
    )
    assert found == []


def test_an_idle_sample_inside_the_span_does_not_fire():
    assert unexplained_busy([at(0), at(10, busy=3.0), at(19)], held=nobody) == []
    assert unexplained_busy([at(0), at(10, busy=None), at(19)], held=nobody) == []


def test_dense_runs_stay_continuous_and_hide_the_sparse_span_of_their_gpu():
    dense = [at(m / 2) for m in range(0, 34)]  # 0 .. 16.5 min every 30 s
    [h] = unexplained_busy([*dense, at(30), at(45)], held=nobody)
    # One GPU is one finding: the observed run, not a span that says less.
    assert h.continuous and (h.start, h.end) == (T0, T0 + timedelta(minutes=16.5))
    assert (h.sample_count, h.largest_gap) == (34, timedelta(seconds=30))


def test_short_dense_runs_apart_make_one_sparse_span():
    first = [at(m / 2) for m in range(0, 11)]  # 0 .. 5 min
    second = [at(12 + m / 2) for m in range(0, 11)]  # 12 .. 17 min
    [h] = unexplained_busy(first + second, held=nobody)
    assert (h.continuous, h.sample_count, h.largest_gap) == (False, 22, timedelta(minutes=7))


def test_sparse_spans_on_two_devices_are_each_reported():
    samples = [at(m, uuid=u, gpu=g) for m in (0, 10, 19) for g, u in (("0", "A"), ("1", "B"))]
    found = unexplained_busy(samples, held=nobody)
    assert [(h.uuid, h.continuous) for h in found] == [("A", False), ("B", False)]


# --- the finding ---------------------------------------------------------------------------


def _ingest_each(cluster, minutes_ago: tuple[int, ...], busy: float = 100.0, **labels) -> None:
    """One ingest per sample, as a user running ingest_dcgm now and then."""
    now = timezone.now()
    base = {"hostname": "gpu-ts-1", "gpu": "0", "uuid": UUID, "model": "NVIDIA A100"} | labels
    for ago in minutes_ago:
        sample = GpuSample(time=now - timedelta(minutes=ago), util=busy, **base)
        samples_ingest(cluster=cluster, samples=[sample])


def _attr001() -> list[Finding]:
    return list(Finding.objects.filter(check_id="ATTR-001", status="open"))


@pytest.fixture
def unheld_node(small_world):
    """The small world's node with whole GPUs and no GPU pod on it."""
    make_exclusive()
    Pod.objects.filter(node__name="gpu-ts-1").exclude(namespace="gpu-operator").delete()
    return small_world


@pytest.mark.django_db
def test_sparse_busy_gpu_with_no_workload_is_a_critical_finding_saying_continuity_unseen(
    unheld_node,
):
    _ingest_each(unheld_node, (20, 10, 1))
    posture_evaluate()
    (finding,) = _attr001()
    assert finding.severity == "critical" and finding.subject_name == "gpu-ts-1"
    evidence = finding.evidence
    assert (evidence["sample_count"], evidence["largest_gap_minutes"]) == (3, 10.0)
    assert evidence["continuity"].startswith("not observed: all 3 samples from ")
    assert evidence["minutes"] == 19 and len(evidence["samples"]) == 3
    assert "in all 3 samples, up to 10.0 min apart" in finding.title


@pytest.mark.django_db
def test_dense_busy_gpu_stays_critical_with_continuity_observed(unheld_node):
    now = timezone.now()
    base = {"hostname": "gpu-ts-1", "gpu": "0", "uuid": UUID, "model": "NVIDIA A100"}
    samples = [
        GpuSample(time=now - timedelta(minutes=m), util=97.0, **base) for m in range(18, -1, -3)
    ]
    samples_ingest(cluster=unheld_node, samples=samples)
    posture_evaluate()
    (finding,) = _attr001()
    assert finding.severity == "critical"
    assert finding.evidence["continuity"].startswith("observed")
    assert finding.evidence["largest_gap_minutes"] == 3.0


@pytest.mark.django_db
def test_sparse_samples_of_a_scheduled_pod_are_no_finding(small_world):
    make_exclusive()
    _ingest_each(small_world, (20, 10, 1), namespace="team-alpha", pod="trainer-0")
    posture_evaluate()
    assert not _attr001()


@pytest.mark.django_db
def test_one_ingested_busy_sample_is_no_finding(unheld_node):
    _ingest_each(unheld_node, (1,))
    posture_evaluate()
    assert not _attr001()
