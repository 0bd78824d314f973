"""DCGM-Exporter text into GpuSamples: the real captures read in place, our MIG sample, the label
rules, timestamps, and the refusals. No database, no network."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from telemetry import dcgm
from telemetry.dcgm import DcgmError, Series, parse_exporter_text, read_series
from telemetry.samples import GpuSample
from tests.realworld import realworld

DATA = Path(__file__).resolve().parent.parent / "data"
SCRAPED = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
T4_A = "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e"
T4_B = "GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5"
H100_0 = "GPU-5f2c8e41-7a3d-4b9e-9c12-3e8d6f0a1b27"
H100_1 = "GPU-b81d4c90-2e6f-4a57-8d3b-91c0e7a24f6d"


def parse(text: str, scraped_at: datetime = SCRAPED) -> list[GpuSample]:
    return parse_exporter_text(text, scraped_at=scraped_at)


def all_series(text: str) -> list[Series | None]:
    """read_series over every sample of every metric, not only the three we keep."""
    families = text_string_to_metric_families(text)
    return [read_series(s.labels) for family in families for s in family.samples]


# --- real captures (DataDog integrations-core fixtures; see ../shared/realworld/dcgm) ---


def test_real_capture_names_three_machines_and_only_the_a10g_has_a_pod():
    text = realworld("dcgm", "datadog-dcgm-metrics.txt").read_text()
    series = all_series(text)
    machines = {(s.hostname, s.uuid, s.model) for s in series if s}
    assert machines == {
        ("424773df46e0", T4_A, "Tesla T4"),
        ("551bdf382151", T4_B, "Tesla T4"),
        ("ip-11111", "GPU-abc", "NVIDIA A10G"),
    }
    attributed = {(s.hostname, s.namespace, s.pod, s.container) for s in series if s and s.pod}
    assert attributed == {("ip-11111", "ray-llm", "ray-1111111", "ray-worker")}
    assert series.count(None) == 14  # the label-less dummy metrics name no GPU
    assert all(s.gi_id == "" and s.gi_profile == "" for s in series if s)  # no MIG labels


def test_real_capture_gives_a_sample_per_machine_and_none_from_the_dummy_metrics():
    text = realworld("dcgm", "datadog-dcgm-metrics.txt").read_text()
    samples = parse(text)
    # Only the first T4 carries our three metrics; the others are there through other DCGM
    # fields (no values), and only the A10G names its pod. The file's GR_ENGINE_ACTIVE is a
    # label-less dummy, so it gives gr_active to no one.
    assert [(s.hostname, s.uuid, s.model) for s in samples] == [
        ("424773df46e0", T4_A, "Tesla T4"),
        ("551bdf382151", T4_B, "Tesla T4"),
        ("ip-11111", "GPU-abc", "NVIDIA A10G"),
    ]
    first, second, a10g = samples
    assert (first.util, first.fb_used_mib, first.gr_active) == (0.0, 0.0, None)
    assert (second.util, second.fb_used_mib) == (None, None)
    assert (a10g.namespace, a10g.pod, a10g.container) == ("ray-llm", "ray-1111111", "ray-worker")
    assert all(s.time == SCRAPED and s.gr_active is None for s in samples)


def test_real_label_remap_capture_is_attributed_to_its_pod():
    text = realworld("dcgm", "datadog-dcgm-label_remap.txt").read_text()
    [sample] = parse(text)
    assert (sample.uuid, sample.hostname, sample.model) == (T4_A, "424773df46e0", "Tesla T4")
    assert (sample.namespace, sample.pod, sample.container) == ("foo", "bar", "baz")
    assert (sample.util, sample.gr_active, sample.fb_used_mib) == (0.0, None, None)


# --- our MIG sample (tests/data/dcgm-mig.txt) ---


def test_mig_sample_has_three_instances_with_the_pods_using_them():
    samples = parse((DATA / "dcgm-mig.txt").read_text())
    rows = [
        (s.gpu, s.uuid, s.gi_id, s.gi_profile, s.namespace, s.pod, s.container) for s in samples
    ]
    assert rows == [
        ("0", H100_0, "1", "3g.40gb", "team-alpha", "train-llm-7d9f8b6c4-q2x7z", "trainer"),
        ("0", H100_0, "2", "2g.20gb", "beta-jobs", "notebook-beta-0", "jupyter"),
        ("0", H100_0, "3", "1g.10gb", "team-alpha", "infer-alpha-5c6b7d9f8-x2k9p", "server"),
        ("1", H100_1, "", "", "", "", ""),
    ]
    assert {s.hostname for s in samples} == {"gpu-h100-07"}
    assert {s.model for s in samples} == {"NVIDIA H100 80GB HBM3"}
    assert all(s.time == SCRAPED for s in samples)


def test_mig_sample_values():
    samples = parse((DATA / "dcgm-mig.txt").read_text())
    values = [(s.util, s.gr_active, s.fb_used_mib) for s in samples]
    assert values == [
        (None, 0.873412, 31744.0),  # no GPU_UTIL on a MIG instance
        (None, 0.052108, 6130.0),
        (None, 0.310977, 8190.0),
        (0.0, 0.0, 0.0),
    ]
    assert samples[0].busy == pytest.approx(87.3412)  # from the graphics engine, not GPU_UTIL
    assert [s.device for s in samples][:2] == [
        ("gpu-h100-07", H100_0, "1"),
        ("gpu-h100-07", H100_0, "2"),
    ]


# --- label rules ---

BASE = {"Hostname": "n1", "gpu": "0", "UUID": "GPU-1"}


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({}, ("", "", "")),
        ({"namespace": "a", "pod": "p", "container": "c"}, ("a", "p", "c")),
        (
            {"exported_namespace": "a", "exported_pod": "p", "namespace": "ops", "pod": "exp"},
            ("a", "p", ""),
        ),
        # Each label is renamed by the scrape on its own: container was not, so it is kept.
        ({"exported_pod": "p", "pod": "exp", "container": "c"}, ("", "p", "c")),
        ({"exported_pod": "", "pod": "p"}, ("", "p", "")),  # empty is absent in Prometheus
        # dcgm-exporter --kubernetes-use-old-namespace, read directly ...
        ({"pod_namespace": "a", "pod_name": "p", "container_name": "c"}, ("a", "p", "c")),
        # ... and after a scrape, which adds its own plain labels (the exporter's pod).
        (
            {
                "pod_namespace": "a",
                "pod_name": "p",
                "container_name": "c",
                "namespace": "gpu-operator",
                "pod": "nvidia-dcgm-exporter-x1",
                "container": "nvidia-dcgm-exporter",
            },
            ("a", "p", "c"),
        ),
    ],
)
def test_pod_labels_prefer_the_exported_spelling(extra, expected):
    series = read_series({**BASE, **extra})
    assert series is not None
    assert (series.namespace, series.pod, series.container) == expected


@pytest.mark.parametrize(
    ("labels", "names_a_gpu"),
    [
        ({}, False),
        ({"Hostname": "n1", "namespace": "a"}, False),
        ({"UUID": "GPU-1"}, True),
        ({"gpu": "3"}, True),
    ],
)
def test_a_series_needs_a_uuid_or_a_gpu_index(labels, names_a_gpu):
    assert (read_series(labels) is not None) is names_a_gpu


def test_model_and_profile_do_not_split_a_series():
    one = read_series({**BASE, "modelName": "A", "GPU_I_PROFILE": "1g.10gb"})
    other = read_series({**BASE, "modelName": "B"})
    assert one == other and hash(one) == hash(other)


# --- values and times ---


def test_metrics_of_one_series_and_instant_merge_and_line_timestamps_win():
    text = (
        '# HELP DCGM_FI_DEV_GPU_UTIL\nDCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1"} 40 1700000000123\n'
        'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-1"} 512 1700000000123\n'
        'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-1"} 1024 1700000060000\n'
        'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",UUID="GPU-1"} 0.5\n'
    )
    stamped = datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)
    samples = parse(text)
    assert [(s.time, s.util, s.fb_used_mib, s.gr_active) for s in samples] == [
        (stamped, 40.0, 512.0, None),
        (stamped + timedelta(seconds=59.877), None, 1024.0, None),
        (SCRAPED, None, None, 0.5),
    ]
    assert all(s.time.tzinfo is UTC for s in samples)


def test_scraped_at_is_converted_to_utc_and_must_be_aware():
    paris = timezone(timedelta(hours=1))
    [sample] = parse('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 1\n', datetime(2025, 3, 1, 13, tzinfo=paris))
    assert sample.time == SCRAPED and sample.time.tzinfo is UTC
    with pytest.raises(ValueError, match="timezone-aware"):
        parse('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 1\n', datetime(2025, 3, 1, 13))


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-Inf"])
def test_non_finite_values_are_none(value):
    [sample] = parse(f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="GPU-1"}} {value}\n')
    assert sample.util is None


def test_a_metric_declared_as_a_counter_is_still_read():
    text = '# TYPE DCGM_FI_DEV_FB_USED counter\nDCGM_FI_DEV_FB_USED{gpu="0"} 7\n'
    assert [s.fb_used_mib for s in parse(text)] == [7.0]


def test_a_repeated_series_keeps_its_first_value():
    text = (
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",job="a"} 10\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",job="b"} 90\n'
    )
    assert [s.util for s in parse(text)] == [10.0]


def test_order_is_by_node_then_gpu_index_as_a_number_whatever_the_input_order():
    lines = [
        f'DCGM_FI_DEV_GPU_UTIL{{Hostname="{host}",gpu="{gpu}",UUID="GPU-{host}-{gpu}"}} 1'
        for host, gpu in [("b", "0"), ("a", "10"), ("a", "2"), ("a", "0")]
    ]
    expected = [("a", "0"), ("a", "2"), ("a", "10"), ("b", "0")]
    for text in ("\n".join(lines), "\n".join(reversed(lines))):
        assert [(s.hostname, s.gpu) for s in parse(text)] == expected


# --- refusals ---


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('# HELP x\nDCGM_FI_DEV_GPU_UTIL{gpu="0"} busy\n', "line 2"),
        ('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 1\nthis is not exporter text\n', "line 2"),
        ('DCGM_FI_DEV_GPU_UTIL{gpu="0" 1\n', "line 1"),
        ('DCGM_FI_DEV_GPU_UTIL{gpu="0",gpu="1"} 1\n', "line 1"),
        ("# TYPE DCGM_FI_DEV_GPU_UTIL sometimes\n", "line 1"),
        ('\n\nDCGM_FI_DEV_GPU_UTIL{gpu="0"} 1 soon\n', "line 3"),
    ],
)
def test_malformed_text_is_refused_saying_where(text, where):
    with pytest.raises(DcgmError) as refused:
        parse(text)
    assert str(refused.value).startswith(f"{where}: ")


def test_a_timestamp_out_of_range_is_refused():
    with pytest.raises(DcgmError, match="DCGM_FI_DEV_GPU_UTIL: timestamp out of range"):
        parse('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 1 99999999999999999999\n')


def test_text_over_50_mb_is_refused():
    with pytest.raises(DcgmError, match="larger than 50 MB"):
        parse("#" * (50 * 1024 * 1024 + 1))


def test_the_size_guard_counts_bytes_not_characters(monkeypatch):
    monkeypatch.setattr(dcgm, "MAX_TEXT_BYTES", 1024 * 1024)
    comment = "# " + "é" * (600 * 1024) + "\n"  # 600 K characters, 1.2 MB
    with pytest.raises(DcgmError, match="larger than 1 MB"):
        parse(comment)
    assert parse(comment[: 400 * 1024] + "\n") == []


def test_finite_or_none():
    assert dcgm.finite_or_none(1.5) == 1.5
    assert dcgm.finite_or_none(math.nan) is None


# --- values no GPU can report ---


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("DCGM_FI_DEV_GPU_UTIL{labels} -50", "DCGM_FI_DEV_GPU_UTIL outside 0-100 %"),
        ("DCGM_FI_DEV_GPU_UTIL{labels} 250", "DCGM_FI_DEV_GPU_UTIL outside 0-100 %"),
        ("DCGM_FI_DEV_GPU_UTIL{labels} 1e308", "DCGM_FI_DEV_GPU_UTIL outside 0-100 %"),
        ("DCGM_FI_DEV_GPU_UTIL{labels} NaN", "DCGM_FI_DEV_GPU_UTIL not a finite number"),
        ("DCGM_FI_PROF_GR_ENGINE_ACTIVE{labels} 1.5", "outside the ratio 0-1"),
        ("DCGM_FI_PROF_GR_ENGINE_ACTIVE{labels} -0.1", "outside the ratio 0-1"),
        ("DCGM_FI_DEV_FB_USED{labels} -1", "DCGM_FI_DEV_FB_USED outside 0-1 PiB (MiB used)"),
        ("DCGM_FI_DEV_FB_USED{labels} 9223372036854775792", "outside 0-1 PiB"),  # DCGM's blank
    ],
)
def test_a_value_no_gpu_can_report_is_left_out_and_counted(line, why):
    """Not clamped: a -50 % or 1e308 % GPU booked negative or absurd busy GPU-hours. The
    GPU still reported, so its sample stays (without the value) beside the good one."""
    labels = '{gpu="0",UUID="GPU-1",Hostname="n1"}'
    skipped = dcgm.Skipped()
    text = 'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-2",Hostname="n1"} 42\n'
    text += line.replace("{labels}", labels) + "\n"
    samples = dcgm.parse_exporter_text(text, scraped_at=SCRAPED, skipped=skipped)
    assert [(s.gpu, s.util, s.gr_active, s.fb_used_mib) for s in samples] == [
        ("0", None, None, None),
        ("1", 42.0, None, None),
    ]
    assert skipped.total == 1
    assert skipped.describe().startswith("1 DCGM_") and why in skipped.describe()


def test_the_ends_of_each_range_are_kept_and_nothing_is_counted():
    text = (
        'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 0\nDCGM_FI_DEV_GPU_UTIL{gpu="1"} 100\n'
        'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0"} 0\nDCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1"} 1\n'
        'DCGM_FI_DEV_FB_USED{gpu="0"} 0\nDCGM_FI_DEV_FB_USED{gpu="1"} 196608\n'
        'DCGM_FI_DEV_SM_CLOCK{gpu="0"} -5\n'  # a field we keep no value of judges nothing
    )
    skipped = dcgm.Skipped()
    samples = dcgm.parse_exporter_text(text, scraped_at=SCRAPED, skipped=skipped)
    assert [(s.util, s.gr_active, s.fb_used_mib) for s in samples] == [
        (0.0, 0.0, 0.0),
        (100.0, 1.0, 196608.0),
    ]
    assert (skipped.total, skipped.describe()) == (0, "")
