"""GPU-hours from attributed samples: weighting, per tenant and day, chargeback, top GPUs, idle."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from telemetry.attribution import Attributed, attribute
from telemetry.samples import GpuSample
from telemetry.usage import (
    ChargebackRow,
    UsageRow,
    chargeback,
    idle_allocated,
    mig_slices,
    top_gpus,
    usage_by_tenant_day,
    weighted,
)

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
OWNERS = {"team-a": "alpha", "team-b": "beta", "team-c": "gamma"}
PLATFORM = frozenset({"kube-system", "gpu-operator"})
SHARED = ("ts-node",)
S30 = timedelta(seconds=30)


def at(offset: timedelta = timedelta(0), *, ns="team-a", pod="p", **kw) -> Attributed:
    """One attributed sample; host "n1", GPU "GPU-1" and 50 % busy unless given."""
    fields = {"hostname": "n1", "gpu": "0", "uuid": "GPU-1", "util": 50.0, **kw}
    s = GpuSample(time=fields.pop("time", T0) + offset, namespace=ns, pod=pod, **fields)
    [a] = attribute([s], owners=OWNERS, shared_nodes=SHARED, platform=PLATFORM)
    return a


def run(count: int, *, start=timedelta(0), step=S30, **kw) -> list[Attributed]:
    """`count` samples of one series, `step` apart."""
    return [at(start + i * step, **kw) for i in range(count)]


def hours(pairs) -> list[float]:
    return [pytest.approx(h) for _, h in pairs]


# --- weighted ------------------------------------------------------------------------------


def test_each_sample_stands_until_the_next_and_the_last_for_the_default():
    assert hours(weighted(run(3))) == [30 / 3600] * 3


def test_gap_is_capped_at_max_gap():
    samples = [at(), at(timedelta(minutes=20)), at(timedelta(minutes=20, seconds=10))]
    assert hours(weighted(samples)) == [5 / 60, 10 / 3600, 30 / 3600]


def test_gap_of_exactly_max_gap_counts_in_full():
    assert hours(weighted([at(), at(timedelta(minutes=5))])) == [5 / 60, 30 / 3600]


def test_custom_interval_and_gap():
    samples = [at(), at(timedelta(minutes=3))]
    got = weighted(samples, default_interval=timedelta(minutes=1), max_gap=timedelta(minutes=2))
    assert hours(got) == [2 / 60, 1 / 60]


def test_series_are_device_namespace_and_pod():
    # pod p ends and q starts on the same GPU: p's last sample keeps the default only
    samples = [at(), at(timedelta(minutes=1), pod="q"), at(timedelta(minutes=2), pod="q")]
    assert hours(weighted(samples)) == [30 / 3600, 1 / 60, 30 / 3600]


def test_one_gpu_shared_by_k_pods_counts_one_gpu_hour_per_hour():
    # time-sliced node: the exporter copies one value onto each of 3 pods, every 30 s for 1 h
    pods = [("a", "team-a"), ("b", "team-b"), ("c", "team-c")]
    samples = [a for p, ns in pods for a in run(120, hostname="ts-node", pod=p, ns=ns)]
    got = weighted(samples)
    assert {a.confidence for a, _ in got} == {"shared"}
    assert hours(got) == [30 / 3600 / 3] * 360
    assert sum(h for _, h in got) == pytest.approx(1.0)  # wall time, not 3 GPU-hours
    rows = usage_by_tenant_day(samples)
    assert [(r.tenant, r.gpu_hours, r.confidence) for r in rows] == [
        (t, pytest.approx(1 / 3), "shared") for t in ("alpha", "beta", "gamma")
    ]


def test_split_also_when_node_not_registered_as_shared():
    # the shared-node list is stale: two pods on one "exclusive" GPU still make one GPU's time
    got = weighted([at(pod="a"), at(pod="b", ns="team-b")])
    assert {a.confidence for a, _ in got} == {"exact"}
    assert sum(h for _, h in got) == pytest.approx(30 / 3600)


def test_split_only_among_series_present_at_that_time():
    samples = [at(pod="a"), at(pod="b"), at(S30, pod="a")]
    # a@0 (until a@30, shared with b), b@0 (last: default, shared with a), a@30 (alone)
    assert hours(weighted(samples)) == [15 / 3600, 15 / 3600, 30 / 3600]


def test_no_split_across_gpus_or_mig_instances():
    samples = [
        at(uuid="GPU-1"),
        at(uuid="GPU-2", pod="b"),
        at(uuid="GPU-3", gi_id="1", gi_profile="3g.40gb", pod="c"),
        at(uuid="GPU-3", gi_id="2", gi_profile="3g.40gb", pod="d"),
    ]
    assert hours(weighted(samples)) == [30 / 3600] * 4


def test_weighted_is_deterministic_and_sorted():
    samples = run(5) + run(5, uuid="GPU-0", pod="z") + run(5, pod="b", ns="team-b")
    shuffled = samples[:]
    random.Random(7).shuffle(shuffled)
    got = weighted(shuffled)
    assert got == weighted(samples)
    assert [a.sample.uuid for a, _ in got][:5] == ["GPU-0"] * 5


def test_weighted_empty():
    assert weighted([]) == []


# --- usage_by_tenant_day -------------------------------------------------------------------


def test_whole_gpu_hours_and_busy_hours():
    samples = run(120, util=40.0) + run(120, uuid="GPU-2", util=None, gr_active=0.9)
    assert usage_by_tenant_day(samples) == [
        UsageRow(date(2024, 5, 1), "alpha", pytest.approx(2.0), 0.0, pytest.approx(1.3), "exact")
    ]


def test_busy_none_counts_zero():
    [row] = usage_by_tenant_day(run(120, util=None))
    assert row.gpu_hours == pytest.approx(1.0)
    assert row.busy_gpu_hours == 0.0


@pytest.mark.parametrize(
    ("profile", "slices"),
    [
        ("3g.40gb", 3),
        ("1g.10gb", 1),
        ("1g.10gb+me", 1),
        ("7g.80gb", 7),
        ("2g.20gb", 2),
        ("4g.20gb", 4),
        ("", 1),
        ("weird", 1),
        ("0g.5gb", 1),
    ],
)
def test_mig_slices(profile, slices):
    assert mig_slices(profile) == slices


def test_mig_samples_count_slice_hours_not_gpu_hours():
    samples = run(120, gi_id="1", gi_profile="3g.40gb") + run(
        120, gi_id="7", gi_profile="1g.10gb+me", pod="q"
    )
    [row] = usage_by_tenant_day(samples)
    assert (row.gpu_hours, row.busy_gpu_hours) == (0.0, None)  # no utilisation for MIG
    assert row.mig_slice_hours == pytest.approx(4.0)


def test_day_is_the_utc_date_of_the_sample():
    late = T0.replace(hour=23, minute=59)
    rows = usage_by_tenant_day(run(4, time=late))  # 23:59:00 .. 00:00:30
    assert [(r.day, r.gpu_hours) for r in rows] == [
        (date(2024, 5, 1), pytest.approx(60 / 3600)),
        (date(2024, 5, 2), pytest.approx(60 / 3600)),
    ]


def test_day_of_a_non_utc_time_is_converted():
    # 00:30 on 2 May in Paris (UTC+2 in summer) is 22:30 on 1 May UTC
    paris = datetime(2024, 5, 2, 0, 30, tzinfo=ZoneInfo("Europe/Paris"))
    [row] = usage_by_tenant_day([at(time=paris)])
    assert row.day == date(2024, 5, 1)


def test_rows_per_tenant_platform_unattributed_with_worst_confidence():
    samples = [
        at(pod="a"),
        at(uuid="GPU-2", pod=""),  # alpha without pod label: confidence none
        at(uuid="GPU-3", ns="team-b", pod="b"),
        at(uuid="GPU-4", ns="kube-system", pod="x"),
        at(uuid="GPU-5", ns="", pod=""),
        at(hostname="ts-node", ns="team-b", pod="c"),
    ]
    rows = usage_by_tenant_day(samples)
    assert [(r.tenant, r.confidence) for r in rows] == [
        ("alpha", "none"),
        ("beta", "shared"),
        ("platform", "exact"),
        ("unattributed", "none"),
    ]
    seconds = [60, 60, 30, 30]
    assert [r.gpu_hours for r in rows] == [pytest.approx(s / 3600) for s in seconds]


def test_rows_sorted_by_day_then_tenant():
    day2 = timedelta(days=1)
    samples = [at(day2, ns="team-b"), at(day2), at(ns="team-b", uuid="GPU-9"), at(uuid="GPU-8")]
    rows = usage_by_tenant_day(samples)
    assert [(r.day.day, r.tenant) for r in rows] == [
        (1, "alpha"),
        (1, "beta"),
        (2, "alpha"),
        (2, "beta"),
    ]


# --- chargeback ----------------------------------------------------------------------------


def test_chargeback_totals_per_tenant():
    d1, d2 = date(2024, 5, 1), date(2024, 5, 2)
    rows = [
        UsageRow(d1, "alpha", 2.0, 3.0, 1.0, "exact"),
        UsageRow(d2, "alpha", 1.5, 0.0, 0.5, "shared"),
        UsageRow(d1, "beta", 0.0, 7.0, None, "exact"),
        UsageRow(d2, "platform", 0.25, 0.0, 0.0, "none"),
    ]
    assert chargeback(reversed(rows)) == [
        ChargebackRow("alpha", 3.5, 3.0, 1.5, 2),
        ChargebackRow("beta", 0.0, 7.0, None, 1),  # MIG alone: busy unknown
        ChargebackRow("platform", 0.25, 0.0, 0.0, 1),
    ]


def test_chargeback_from_usage_rows_and_empty():
    rows = usage_by_tenant_day(run(120) + run(120, start=timedelta(days=1), pod="q"))
    [total] = chargeback(rows)
    assert (total.tenant, total.days) == ("alpha", 2)
    assert total.gpu_hours == pytest.approx(2.0)
    assert chargeback([]) == []


# --- top_gpus ------------------------------------------------------------------------------


def test_top_gpus_by_busy_hours_then_hours():
    samples = (
        run(120, uuid="GPU-low", util=5.0, model="L40S")  # 0.05 busy hours
        + run(120, uuid="GPU-high", util=90.0, model="H100")
        + run(60, uuid="GPU-tie-short", util=20.0)  # 0.1 busy hours over 0.5 h
        # the same busy hours, then half an hour without a busy value: 0.1 over 1 h
        + run(60, uuid="GPU-tie-long", util=20.0, hostname="n2")
        + run(60, start=timedelta(minutes=30), uuid="GPU-tie-long", util=None, hostname="n2")
        + run(120, uuid="GPU-unknown", util=None, ns="kube-system")
    )
    top = top_gpus(samples)
    assert [g.device[1] for g in top] == [
        "GPU-high",
        "GPU-tie-long",
        "GPU-tie-short",
        "GPU-low",
        "GPU-unknown",
    ]
    assert top[0].model == "H100"
    assert top[0].hours == pytest.approx(1.0)
    assert top[0].mean_busy == pytest.approx(90.0)
    assert top[-1].mean_busy is None
    assert top[-1].tenants == ("platform",)
    assert [g.device[1] for g in top_gpus(samples, n=2)] == ["GPU-high", "GPU-tie-long"]


def test_top_gpus_time_weighted_mean_and_tenants():
    # 1 h at 80 % then 5 min gap-capped sample at 20 %: the long stretch dominates
    samples = run(120, util=80.0) + [at(timedelta(hours=2), util=20.0, ns="team-b", pod="q")]
    [gpu] = top_gpus(samples)
    assert gpu.tenants == ("alpha", "beta")
    assert gpu.mean_busy == pytest.approx((80 * 3600 + 20 * 30) / (3600 + 30))


# --- idle_allocated ------------------------------------------------------------------------


def test_idle_gpu_held_long_enough_under_threshold():
    [idle] = idle_allocated(run(240, util=2.0))  # 2 h at 2 %
    assert (idle.day, idle.device, idle.tenant) == (date(2024, 5, 1), ("n1", "GPU-1", ""), "alpha")
    assert idle.hours == pytest.approx(2.0)
    assert idle.mean_busy == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("samples", "kw"),
    [
        (run(240, util=10.0), {}),  # over the threshold
        (run(240, util=5.0), {}),  # exactly the threshold is not under it
        (run(60, util=2.0), {}),  # 0.5 h: under min_hours
        (run(240, util=2.0, ns="kube-system"), {}),  # the platform's, not a tenant allocation
        (run(240, util=None), {}),  # no busy value: no evidence of idleness
        (run(240, util=8.0), {"threshold": 7.0}),
        (run(240, util=2.0), {"min_hours": 3.0}),
    ],
)
def test_not_idle(samples, kw):
    assert idle_allocated(samples, **kw) == []


def test_idle_thresholds_are_configurable():
    assert len(idle_allocated(run(240, util=8.0), threshold=10.0)) == 1
    assert len(idle_allocated(run(60, util=2.0), min_hours=0.4)) == 1


def test_idle_is_per_day():
    # 1.5 h either side of midnight: neither day reaches 2 h
    samples = run(360, util=1.0, time=T0.replace(hour=22, minute=30))
    assert idle_allocated(samples, min_hours=2.0) == []
    assert [i.day.day for i in idle_allocated(samples, min_hours=1.4)] == [1, 2]


def test_idle_mean_is_time_weighted_per_tenant_and_device():
    samples = run(120, util=1.0) + run(12, start=timedelta(hours=1), util=60.0)  # 1 h + 6 min
    assert idle_allocated(samples) == []  # (1*3600 + 60*360) / 3960 = 6.4 %
    busy_beta = run(240, util=90.0, uuid="GPU-2", ns="team-b", pod="q")
    assert [i.tenant for i in idle_allocated(run(240, util=1.0) + busy_beta)] == ["alpha"]
