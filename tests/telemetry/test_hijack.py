"""ATTR-001 (busy GPU with no scheduled workload) and ATTR-003 (GPU node without telemetry)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from telemetry.hijack import (
    Hijack,
    SilentNode,
    explained_by_count,
    silent_nodes,
    unexplained_busy,
)
from telemetry.samples import GpuSample

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def m(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def s(minutes: float, busy: float | None = 90.0, **kw) -> GpuSample:
    fields = {"hostname": "n1", "gpu": "0", "uuid": "GPU-1", **kw}
    return GpuSample(time=m(minutes), util=busy, **fields)


def every(start: float, end: float, busy: float | None = 90.0, **kw) -> list[GpuSample]:
    """Samples each 30 s from `start` to `end` minutes, both included."""
    return [s(start + i / 2, busy, **kw) for i in range(int((end - start) * 2) + 1)]


def nobody(_: GpuSample) -> bool:
    return False


def spans(found: list[Hijack]) -> list[tuple[datetime, datetime]]:
    return [(h.start, h.end) for h in found]


# --- unexplained_busy: the window's edges ---------------------------------------------------


def test_run_just_under_the_window_is_not_a_finding():
    assert unexplained_busy(every(0, 14.5), held=nobody) == []


def test_run_of_exactly_the_window_is_not_a_finding():
    assert unexplained_busy(every(0, 15), held=nobody) == []  # strictly longer is required


def test_run_just_over_the_window_is_a_finding():
    [h] = unexplained_busy(every(0, 15.5), held=nobody)
    assert (h.device, h.hostname, h.uuid, h.gi_id) == (("n1", "GPU-1", ""), "n1", "GPU-1", "")
    assert (h.start, h.end) == (m(0), m(15.5))
    assert (h.mean_busy, h.peak_busy) == (90.0, 90.0)


def test_held_gpu_is_not_a_finding():
    assert unexplained_busy(every(0, 60), held=lambda _: True) == []


def test_pod_started_mid_window_leaves_the_unheld_part_under_the_window():
    # busy for 20 min; a pod holds the GPU from minute 10: only 9.5 min are unexplained
    found = unexplained_busy(every(0, 20), held=lambda x: x.time >= m(10))
    assert found == []


def test_pod_ended_then_busy_for_longer_than_the_window():
    found = unexplained_busy(every(0, 30), held=lambda x: x.time < m(5))
    assert spans(found) == [(m(5), m(30))]


def test_gap_longer_than_max_gap_splits_the_run():
    samples = every(0, 10) + every(16, 26)  # 6 min without data in between
    # No continuous run over the window: the span is reported, its continuity not observed
    # (tests/telemetry/test_sparse_hijack.py).
    [h] = unexplained_busy(samples, held=nobody)
    assert not h.continuous and h.largest_gap == timedelta(minutes=6)
    assert unexplained_busy(every(0, 5) + every(11, 14), held=nobody) == []  # a 14 min span


def test_gap_of_exactly_max_gap_keeps_the_run():
    samples = every(0, 10) + every(15, 25)
    assert spans(unexplained_busy(samples, held=nobody)) == [(m(0), m(25))]


def test_dip_to_the_threshold_splits_the_run():
    samples = every(0, 10) + [s(10.5, 20.0)] + every(11, 25)  # 20 % is not above 20 %
    assert unexplained_busy(samples, held=nobody) == []
    samples = every(0, 10) + [s(10.5, 20.5)] + every(11, 25)
    assert spans(unexplained_busy(samples, held=nobody)) == [(m(0), m(25))]


def test_sample_without_busy_value_splits_the_run():
    samples = every(0, 10) + [s(10.5, None)] + every(11, 25)
    assert unexplained_busy(samples, held=nobody) == []


def test_two_runs_on_one_device_both_reported_in_order():
    samples = every(0, 20) + every(20.5, 22, busy=1.0) + every(22.5, 40)
    assert spans(unexplained_busy(samples, held=nobody)) == [(m(0), m(20)), (m(22.5), m(40))]


def test_threshold_window_and_gap_are_configurable():
    samples = every(0, 3, busy=50.0) + every(4, 6, busy=50.0)
    assert unexplained_busy(samples, held=nobody) == []
    found = unexplained_busy(
        samples,
        held=nobody,
        threshold=40.0,
        window=timedelta(minutes=5),
        max_gap=timedelta(minutes=1),
    )
    assert spans(found) == [(m(0), m(6))]
    assert unexplained_busy(samples, held=nobody, threshold=50.0, window=timedelta(0)) == []


# --- unexplained_busy: values and evidence --------------------------------------------------


def test_mean_peak_and_profiling_metric():
    samples = [s(i, None, gr_active=0.3 + i / 100) for i in range(21)]  # 30 % .. 50 %
    [h] = unexplained_busy(samples, held=nobody)
    assert round(h.mean_busy, 6) == 40.0
    assert round(h.peak_busy, 6) == 50.0


def test_evidence_capped_at_twenty_spread_from_first_to_last():
    [h] = unexplained_busy(every(0, 60), held=nobody)  # 121 points
    times = [t for t, _ in h.evidence]
    assert len(times) == 20
    assert (times[0], times[-1]) == (m(0), m(60))
    assert times == sorted(set(times))
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert max(gaps) - min(gaps) <= timedelta(seconds=30)  # evenly spread


def test_short_run_keeps_every_point_as_evidence():
    [h] = unexplained_busy(every(0, 3, busy=75.0), held=nobody, window=timedelta(minutes=1))
    assert h.evidence == tuple((m(i / 2), 75.0) for i in range(7))


def test_run_of_exactly_twenty_points_keeps_them_all():
    [h] = unexplained_busy(every(0, 9.5), held=nobody, window=timedelta(minutes=1))
    assert len(h.evidence) == 20


def test_pod_label_variants_count_once_per_timestamp_with_max_busy():
    # the exporter emits the device once per mapped pod: a stale label at 10 %, one at 80 %
    samples = every(0, 20, busy=10.0, namespace="old", pod="gone") + every(0, 20, busy=80.0)
    [h] = unexplained_busy(samples, held=nobody)
    assert len(h.evidence) == 20
    assert {v for _, v in h.evidence} == {80.0}
    assert h.mean_busy == 80.0


def test_any_variant_held_holds_the_device():
    samples = every(0, 20, namespace="team-a", pod="train") + every(0, 20, busy=95.0)
    assert unexplained_busy(samples, held=lambda x: x.pod == "train") == []


def test_devices_are_separate_and_sorted():
    samples = (
        every(0, 20, uuid="GPU-2")
        + every(0, 10, uuid="GPU-1")  # too short on its own
        + every(0, 20, uuid="GPU-1", gi_id="3", gi_profile="3g.40gb")
        + every(0, 20, hostname="n0", uuid="", gpu="1")  # no UUID: the index stands in
    )
    shuffled = samples[:]
    random.Random(3).shuffle(shuffled)
    found = unexplained_busy(shuffled, held=nobody)
    assert [h.device for h in found] == [("n0", "1", ""), ("n1", "GPU-1", "3"), ("n1", "GPU-2", "")]
    assert found == unexplained_busy(samples, held=nobody)


def test_no_samples_no_findings():
    assert unexplained_busy([], held=nobody) == []


# --- explained_by_count: nodes whose exporter names no pod ----------------------------------


def test_busy_gpus_no_more_than_the_pods_hold_are_explained_by_count():
    samples = [
        s(0, uuid="GPU-1"),
        s(0, uuid="GPU-2"),
        s(0, 5.0, uuid="GPU-3"),  # idle: not counted
        s(5, uuid="GPU-1"),
        s(5, uuid="GPU-2"),
        s(5, uuid="GPU-3"),  # a third busy GPU: more than the pods hold
        s(0, hostname="n2"),  # a node not judged by count
    ]
    assert explained_by_count(samples, {"n1": 2}, threshold=20.0) == {("n1", m(0))}


def test_busy_gpus_scraped_seconds_apart_count_together():
    samples = [s(0, uuid="GPU-1"), s(0.25, uuid="GPU-2"), s(5, uuid="GPU-1")]
    assert explained_by_count(samples, {"n1": 1}, threshold=20.0) == {("n1", m(5))}
    assert explained_by_count(samples, {"n1": 2}, threshold=20.0) == {
        ("n1", m(0)),
        ("n1", m(0.25)),
        ("n1", m(5)),
    }


def test_mig_instances_count_one_each():
    samples = [s(0, gi_id="1"), s(0, gi_id="2"), s(0, gi_id="3")]
    assert explained_by_count(samples, {"n1": 3}, threshold=20.0) == {("n1", m(0))}
    assert explained_by_count(samples, {"n1": 2}, threshold=20.0) == set()


# --- silent_nodes -----------------------------------------------------------------------------


def test_silent_nodes():
    now = m(120)
    last = {
        "fresh": m(119),
        "edge": m(60),  # exactly one window old: still within it
        "stale": m(59.5),
        "none": None,
        "cpu-node": m(0),  # not a GPU node: ignored
    }
    nodes = ["stale", "fresh", "edge", "never", "none", "stale"]
    assert silent_nodes(last, nodes, now=now) == [
        SilentNode("never", None),
        SilentNode("none", None),
        SilentNode("stale", m(59.5)),
    ]


def test_silent_nodes_window_is_configurable():
    last = {"a": m(0)}
    assert silent_nodes(last, ["a"], now=m(30), window=timedelta(minutes=10)) == [
        SilentNode("a", m(0))
    ]
    assert silent_nodes(last, ["a"], now=m(30)) == []
    assert silent_nodes(last, [], now=m(30)) == []


def test_a_pod_that_ran_to_an_end_counts_until_a_sync_saw_it_finished():
    t0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    busy = [
        GpuSample(time=t0 + timedelta(minutes=m), hostname="n1", gpu=g, uuid=f"GPU-{g}", util=90)
        for m in (0, 10)
        for g in ("0", "1")
    ]
    ended = {"n1": [(t0 + timedelta(minutes=5), 1)]}
    explained = explained_by_count(busy, {"n1": 1}, threshold=20, ended=ended)
    assert explained == {("n1", t0)}  # two busy, two held; after the sync, one held
