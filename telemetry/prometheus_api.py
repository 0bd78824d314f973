"""Read the DCGM metrics of a time range from a Prometheus HTTP API (`/api/v1/query_range`) into
GpuSamples, with the label rules of `telemetry.dcgm`. Every request goes through the guarded
fetcher (`gpuposture.base.fetch`: https to public addresses unless the host is allow-listed),
because the Prometheus URL is typed in by a user and must not reach inside our network."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

from gpuposture.base.fetch import FetchError, shown_url
from gpuposture.base.fetch import fetch_json as guarded_fetch_json
from telemetry.dcgm import METRIC_FIELDS, Reading, Skipped, merge_readings, read_series
from telemetry.samples import GpuSample

MAX_POINTS_PER_SERIES = 11_000  # Prometheus refuses more itself ("exceeded maximum resolution")
MAX_SAMPLES = 5_000_000  # all metrics, all series: bounds memory (~1 GB of readings at most)
_SHOWN_ERROR = 300  # characters of a server's error text quoted in ours

FetchJson = Callable[..., object]


class PrometheusError(Exception):
    """A range query refused, failed or answered with something unreadable."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"{url}: {reason}")
        self.url, self.reason = url, reason


def query_range_samples(
    base_url: str,
    *,
    start: datetime,
    end: datetime,
    step_seconds: int = 60,
    fetch_json: FetchJson = guarded_fetch_json,
    headers: Mapping[str, str] | None = None,
    match: Mapping[str, str] | None = None,
    skipped: Skipped | None = None,
) -> list[GpuSample]:
    """The GPU samples Prometheus at `base_url` holds between `start` and `end` (aware
    datetimes), one point per `step_seconds`. `headers` (e.g. Authorization) go to every request.
    `match` (label -> value) keeps only the series with those labels: one cluster's, where one
    Prometheus holds several. A metric Prometheus does not have is skipped; anything else
    unexpected is PrometheusError. A value no GPU can report is left out, counted in `skipped`."""
    url = _endpoint(base_url)
    params = _range_params(url, start, end, step_seconds)  # checked before any request
    selector = _selector(match or {})
    readings: list[Reading] = []
    room = MAX_SAMPLES  # points still allowed, over all metrics
    skipped = skipped or Skipped()
    for metric in METRIC_FIELDS:
        query = {"query": metric + selector, **params}
        answer = _ask(url, metric, query, fetch_json, headers)
        found, room = _matrix_readings(url, metric, answer, room, skipped)
        readings.extend(found)
    return merge_readings(readings)


_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def parse_matchers(text: str) -> dict[str, str]:
    """`cluster=prod-east,region=eu` as label -> value. ValueError, saying why, for anything
    else: the labels become a PromQL selector, so each name must be a label name."""
    found: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, equals, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not equals or not _LABEL_NAME.fullmatch(name) or name.startswith("__"):
            raise ValueError(
                f"not a label matcher: {part!r} (write LABEL=VALUE, e.g. cluster=prod-east)"
            )
        found[name] = value
    return found


def _selector(match: Mapping[str, str]) -> str:
    """`{cluster="prod-east"}`: each value quoted as a PromQL string, so none can close it."""
    if not match:
        return ""
    for name in match:
        if not _LABEL_NAME.fullmatch(name) or name.startswith("__"):
            raise ValueError(f"not a label name: {name!r}")
    # A JSON string is a valid PromQL one (Go's escapes: \\, \", \n, \uXXXX).
    quoted = (
        f"{name}={json.dumps(value, ensure_ascii=False)}" for name, value in sorted(match.items())
    )
    return "{" + ",".join(quoted) + "}"


def _endpoint(base_url: str) -> str:
    parts = urlsplit(base_url.strip())
    if parts.query or parts.fragment:
        raise PrometheusError(
            _shown(base_url.strip()), "the Prometheus base URL must not carry a query or fragment"
        )
    # A path prefix (Prometheus behind /prometheus) is kept; the API lives under it. User info
    # is left for the guard to refuse, and kept out of our messages by _shown.
    return base_url.strip().rstrip("/") + "/api/v1/query_range"


def _range_params(url: str, start: datetime, end: datetime, step_seconds: int) -> dict[str, str]:
    for name, value in (("start", start), ("end", end)):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"{name} must be timezone-aware")
    if start >= end:
        raise PrometheusError(_shown(url), f"the range is empty: start {start} >= end {end}")
    if step_seconds < 1:
        raise PrometheusError(_shown(url), f"step must be at least 1 s, not {step_seconds}")
    seconds = (end - start).total_seconds()
    if seconds / step_seconds > MAX_POINTS_PER_SERIES:
        least = math.ceil(seconds / MAX_POINTS_PER_SERIES)
        raise PrometheusError(
            _shown(url),
            f"{seconds:.0f} s at a {step_seconds} s step is more than {MAX_POINTS_PER_SERIES:,} "
            f"points per series (Prometheus's limit); use a step of at least {least} s",
        )
    return {"start": _rfc3339(start), "end": _rfc3339(end), "step": str(step_seconds)}


def _rfc3339(moment: datetime) -> str:
    spec = "microseconds" if moment.microsecond else "seconds"
    return moment.astimezone(UTC).isoformat(timespec=spec).replace("+00:00", "Z")


def _ask(
    url: str,
    metric: str,
    params: Mapping[str, str],
    fetch_json: FetchJson,
    headers: Mapping[str, str] | None,
) -> Mapping[str, object]:
    """The `data` of a successful answer, or PrometheusError saying what came back."""
    shown = _shown(url)
    try:
        answer = fetch_json(url, params=params, headers=headers)
    except FetchError as exc:  # refused by the guard, HTTP error, not JSON, too large, too slow
        raise PrometheusError(shown, f"{metric}: {exc.reason}") from exc
    if not isinstance(answer, dict):
        raise PrometheusError(shown, f"{metric}: the answer is not a JSON object")
    if answer.get("status") == "error":
        kind, error = answer.get("errorType", "?"), str(answer.get("error", ""))[:_SHOWN_ERROR]
        raise PrometheusError(shown, f"{metric}: Prometheus answered {kind}: {error}")
    data = answer.get("data")
    if answer.get("status") != "success" or not isinstance(data, dict):
        raise PrometheusError(shown, f"{metric}: not a Prometheus API answer")
    if data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        raise PrometheusError(shown, f"{metric}: expected a matrix, got {data.get('resultType')}")
    return data


NUL_LABEL = "in a series whose label holds a NUL byte (\\u0000)"


def _matrix_readings(
    url: str, metric: str, data: Mapping[str, object], room: int, skipped: Skipped
) -> tuple[list[Reading], int]:
    """The readings of one answer, and the room left after its points."""
    metric_field = METRIC_FIELDS[metric]
    found: list[Reading] = []
    for item in data["result"]:
        labels, values = _series_parts(url, metric, item)
        room -= len(values)  # counted before reading them: the bound is on memory
        if room < 0:
            raise PrometheusError(
                _shown(url),
                f"more than {MAX_SAMPLES:,} samples; narrow the range or use a larger step",
            )
        if any("\x00" in v for v in labels.values()):
            # No exporter writes one (pod, namespace and node names cannot hold it) and
            # PostgreSQL cannot store it: a series scraped from elsewhere, left out and said.
            skipped.series(metric, len(values), NUL_LABEL)
            continue
        series = read_series(labels)
        if series is None:
            continue
        for point in values:
            time, value = _point(url, metric, point)
            found.append(
                Reading(metric_field, series, time, skipped.value(metric, metric_field, value))
            )
    return found, room


def _series_parts(url: str, metric: str, item: object) -> tuple[dict[str, str], list[object]]:
    labels = item.get("metric") if isinstance(item, dict) else None
    values = item.get("values") if isinstance(item, dict) else None
    if (
        not isinstance(labels, dict)
        or not all(isinstance(v, str) for v in labels.values())
        or not isinstance(values, list)
    ):
        raise PrometheusError(_shown(url), f"{metric}: a series without metric labels or values")
    return labels, values


def _point(url: str, metric: str, point: object) -> tuple[datetime, float]:
    """[<unix seconds>, "<value>"] as an aware datetime and a number (NaN, Inf too)."""
    stamp: object  # untrusted JSON, checked below: a non-pair raises and is caught
    text: object
    try:
        stamp, text = point
        if isinstance(stamp, bool) or not isinstance(stamp, int | float):
            raise TypeError("the timestamp is not a number")
        if not isinstance(text, str):
            raise TypeError("the value is not a string")
        return datetime.fromtimestamp(stamp, UTC), float(text)
    except (TypeError, ValueError, OverflowError, OSError) as exc:
        raise PrometheusError(_shown(url), f"{metric}: bad point {point!r:.80}: {exc}") from exc


def _shown(url: str) -> str:
    """`url` for messages: without user info, query or fragment (fetch.shown_url)."""
    return shown_url(url)


_DURATION = re.compile(r"(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
_UNITS = ("weeks", "days", "hours", "minutes", "seconds")


def parse_duration(text: str) -> timedelta:
    """A duration as Prometheus writes them, largest unit first: "90s", "15m", "2h", "7d",
    "1w", "1h30m". ValueError for anything else, or zero."""
    match = _DURATION.fullmatch(text.strip())
    if not text.strip() or match is None:
        raise ValueError(
            f"not a duration: {text!r} (write a number and a unit, largest first: "
            f"90s, 15m, 2h, 7d, 1w or 1h30m)"
        )
    try:
        amounts = zip(_UNITS, match.groups(), strict=True)
        delta = timedelta(**{unit: int(n) for unit, n in amounts if n})
    except OverflowError as exc:
        raise ValueError(f"duration too long: {text!r}") from exc
    if delta <= timedelta(0):
        raise ValueError(f"duration must be longer than zero: {text!r}")
    return delta
