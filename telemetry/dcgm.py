"""Read a DCGM-Exporter page (Prometheus text format) into GpuSamples. PURE: no Django, no network.

The label rules live here and `prometheus_api` reuses them, so a scraped page and a Prometheus
range query describe a GPU the same way: `read_series` says which series a set of labels names,
`merge_readings` folds the per-metric values of one series and instant into one GpuSample.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from prometheus_client.parser import text_fd_to_metric_families

from telemetry.samples import GpuSample

# The exporter metrics we read, and the GpuSample field each one fills; the rest are ignored.
METRIC_FIELDS: Mapping[str, str] = {
    "DCGM_FI_DEV_GPU_UTIL": "util",  # percent 0-100; not reported on MIG instances
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gr_active",  # ratio 0-1; reported on MIG instances too
    "DCGM_FI_DEV_FB_USED": "fb_used_mib",
}
MAX_TEXT_BYTES = 50 * 1024 * 1024  # a node with 8 GPUs x 7 MIG instances is well under 1 MB
_SHOWN_LINE = 120  # characters of an offending line quoted in an error


class DcgmError(ValueError):
    """Exporter text that cannot be read; the message says where and why."""


@dataclass(frozen=True)
class Series:
    """What one exporter series measures and for whom. Equality and hashing use the identity
    fields only: `model` and `gi_profile` describe the device, they do not split a series."""

    hostname: str
    gpu: str
    uuid: str
    gi_id: str
    namespace: str
    pod: str
    container: str
    model: str = field(default="", compare=False)
    gi_profile: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)  # slots: a range query may hold millions
class Reading:
    """One value of one metric for one series at one instant."""

    field: str  # a GpuSample field, from METRIC_FIELDS
    series: Series
    time: datetime  # timezone-aware
    value: float | None


PRESENCE = ""  # Reading.field of a DCGM metric we keep no value of


def read_series(labels: Mapping[str, str]) -> Series | None:
    """The series `labels` name, or None when they name no GPU (neither UUID nor gpu: the
    label-less dummy metrics some exporters emit)."""
    uuid, gpu = labels.get("UUID", ""), labels.get("gpu", "")
    if not uuid and not gpu:
        return None
    return Series(
        hostname=labels.get("Hostname", ""),
        gpu=gpu,
        uuid=uuid,
        gi_id=labels.get("GPU_I_ID", ""),
        namespace=_pod_label(labels, "namespace"),
        pod=_pod_label(labels, "pod"),
        container=_pod_label(labels, "container"),
        model=labels.get("modelName", ""),
        gi_profile=labels.get("GPU_I_PROFILE", ""),
    )


# The spelling dcgm-exporter writes with `--kubernetes-use-old-namespace` (1.x names, still
# an option in 3.x/4.x): `pod_name`, `pod_namespace`, `container_name`.
OLD_POD_LABELS: Mapping[str, str] = {
    "pod": "pod_name",
    "namespace": "pod_namespace",
    "container": "container_name",
}


def _pod_label(labels: Mapping[str, str], name: str) -> str:
    # A Prometheus scrape that attaches its own namespace/pod target labels renames the
    # exporter's conflicting ones to exported_*; the plain ones then name the exporter's pod.
    # The old spelling conflicts with no target label, so a scrape keeps it and still adds
    # its own plain `namespace`/`pod` (the exporter's): the old one names the workload.
    # Each label is renamed on its own, so each is chosen on its own. Empty means absent.
    old = OLD_POD_LABELS[name]
    for key in (f"exported_{name}", f"exported_{old}", old, name):
        if value := labels.get(key):
            return value
    return ""


def finite_or_none(value: float) -> float | None:
    """A metric value, or None for NaN and +-Inf (no meaning as a percent, ratio or MiB)."""
    return value if math.isfinite(value) else None


# What a GPU can report for each field we keep, and how a value outside is said. Outside, the
# exporter read nothing real (-50 %, 1e308 %, DCGM's blank sentinels from 2**31 - 16 up): the
# value is dropped and counted, never clamped (a clamped 100 % still books a busy GPU-hour
# nobody used). 2**30 MiB (1 PiB) of framebuffer is far beyond any GPU.
VALID_RANGES: Mapping[str, tuple[float, float, str]] = {
    "util": (0.0, 100.0, "outside 0-100 %"),
    "gr_active": (0.0, 1.0, "outside the ratio 0-1"),
    "fb_used_mib": (0.0, 2.0**30, "outside 0-1 PiB (MiB used)"),
}


@dataclass
class Skipped:
    """Values read but not kept, counted by metric and why, for the ingest to say."""

    counts: dict[tuple[str, str], int] = field(default_factory=dict)

    def value(self, metric: str, metric_field: str, value: float) -> float | None:
        """`value` when a GPU can report it as `metric_field`, else None (the GPU still
        reported: its sample stays, without this value), counted."""
        low, high, why = VALID_RANGES[metric_field]
        if finite_or_none(value) is None:
            why = "not a finite number"
        elif low <= value <= high:
            return value
        self.counts[(metric, why)] = self.counts.get((metric, why), 0) + 1
        return None

    def series(self, metric: str, values: int, why: str) -> None:
        """A whole series left out (its `values` counted): its labels name no GPU an exporter
        could report."""
        self.counts[(metric, why)] = self.counts.get((metric, why), 0) + values

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def describe(self) -> str:
        """How many of each metric and why: "2 DCGM_FI_DEV_GPU_UTIL outside 0-100 %, ..."."""
        return ", ".join(f"{n} {metric} {why}" for (metric, why), n in sorted(self.counts.items()))


def merge_readings(readings: Iterable[Reading]) -> list[GpuSample]:
    """One GpuSample per (series, instant), in a stable order. A metric seen twice for the same
    series and instant (two scrape jobs of one exporter) keeps its first value."""
    merged: dict[tuple[Series, datetime], dict[str, float | None]] = {}
    described: dict[Series, Series] = {}  # the first spelling of model/gi_profile seen
    for reading in readings:
        described.setdefault(reading.series, reading.series)
        values = merged.setdefault((reading.series, reading.time), {})
        if reading.field != PRESENCE:
            values.setdefault(reading.field, reading.value)
    samples = [
        _sample(described[series], time, values) for (series, time), values in merged.items()
    ]
    return sorted(samples, key=_order)


def _sample(series: Series, time: datetime, values: Mapping[str, float | None]) -> GpuSample:
    return GpuSample(
        time=time,
        hostname=series.hostname,
        gpu=series.gpu,
        uuid=series.uuid,
        model=series.model,
        gi_id=series.gi_id,
        gi_profile=series.gi_profile,
        namespace=series.namespace,
        pod=series.pod,
        container=series.container,
        **values,
    )


def _order(sample: GpuSample) -> tuple[object, ...]:
    # uuid and container last only to make ties impossible, so the order never depends on input.
    return (
        sample.hostname,
        _natural(sample.gpu),
        _natural(sample.gi_id),
        sample.namespace,
        sample.pod,
        sample.time,
        sample.uuid,
        sample.container,
    )


def _natural(text: str) -> tuple[int, int, str]:
    """Indexes as numbers ("2" before "10"), anything else after them, as text."""
    return (0, int(text), "") if text.isdigit() else (1, 0, text)


def parse_exporter_text(
    text: str, *, scraped_at: datetime, skipped: Skipped | None = None
) -> list[GpuSample]:
    """The GPU samples in a DCGM-Exporter page. A line's own timestamp wins over `scraped_at`
    (the instant the page was read, timezone-aware). Raises DcgmError on unreadable text.
    A value no GPU can report is left out of its sample and counted in `skipped`."""
    if scraped_at.tzinfo is None or scraped_at.utcoffset() is None:
        raise ValueError("scraped_at must be timezone-aware")
    _check_size(text)
    default_time = scraped_at.astimezone(UTC)
    return merge_readings(_readings(text, default_time, skipped or Skipped()))


def _check_size(text: str) -> None:
    # Characters are at most 4 bytes: encode only when the count alone cannot decide.
    limit = MAX_TEXT_BYTES
    if len(text) > limit or (len(text) * 4 > limit and len(text.encode("utf-8")) > limit):
        raise DcgmError(f"exporter text is larger than {limit // (1024 * 1024)} MB")


def _readings(text: str, default_time: datetime, skipped: Skipped) -> Iterator[Reading]:
    lines = _CountedLines(text)
    try:
        # text_fd_to_metric_families, not text_string_..., only to count lines: it reads the
        # lines one at a time, so when it fails the count is the line it failed on. It
        # tolerates `# NOTE` comments and text-less `# HELP` lines as they are.
        for family in text_fd_to_metric_families(lines):
            metric_field = METRIC_FIELDS.get(family.name)
            if metric_field is None and family.name.startswith("DCGM_FI_"):
                # Any other DCGM field still says this GPU (and the pod on it) is there: an
                # exporter configured without GPU_UTIL must not look like a silent node.
                metric_field = PRESENCE
            if metric_field is None:
                continue
            for sample in family.samples:
                # A family declared `counter` has its samples renamed to `<name>_total`.
                if sample.name not in (family.name, f"{family.name}_total"):
                    continue
                series = read_series(sample.labels)
                if series is None:
                    continue
                time = default_time
                if sample.timestamp is not None:
                    time = _utc(float(sample.timestamp), family.name)
                value = None  # a presence value is never kept: nothing to judge
                if metric_field != PRESENCE:
                    value = skipped.value(family.name, metric_field, float(sample.value))
                yield Reading(metric_field, series, time, value)
    except DcgmError:
        raise
    except (ValueError, IndexError) as exc:  # IndexError: the parser slices strings unguarded
        raise DcgmError(lines.describe(exc)) from exc


def _utc(seconds: float, metric: str) -> datetime:
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError) as exc:
        # No line number: the parser hands a family over only after reading past its lines.
        raise DcgmError(f"{metric}: timestamp out of range: {seconds * 1000:.0f} ms") from exc


class _CountedLines:
    """The lines of `text`, split as the parser's own StringIO splits them (at line feeds only),
    remembering how many have been handed out and the last one."""

    def __init__(self, text: str) -> None:
        self._text = text
        self.count = 0
        self.last = ""

    def __iter__(self) -> Iterator[str]:
        for line in io.StringIO(self._text):
            self.count, self.last = self.count + 1, line
            yield line

    def describe(self, exc: Exception) -> str:
        reason = (str(exc) or "not valid Prometheus text format")[:_SHOWN_LINE]
        if not self.count:
            return reason
        line = self.last.strip()
        if len(line) > _SHOWN_LINE:
            line = line[:_SHOWN_LINE] + "..."
        return f"line {self.count}: {reason}: {line!r}"
