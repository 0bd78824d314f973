"""Range queries against a Prometheus HTTP API served by the test on 127.0.0.1, through the
guarded fetcher; answer shapes through a stand-in fetch_json; duration parsing."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from gpuposture.base.fetch import FetchError
from telemetry import prometheus_api
from telemetry.dcgm import Skipped
from telemetry.prometheus_api import PrometheusError, parse_duration, query_range_samples
from telemetry.samples import GpuSample

START = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
END = START + timedelta(minutes=2)
TIMES = [START.timestamp() + 60 * i for i in range(3)]  # the three points of START..END
WHOLE = {
    "Hostname": "gpu-a100-01",
    "gpu": "0",
    "UUID": "GPU-0a1b",
    "modelName": "NVIDIA A100-SXM4-40GB",
    "exported_namespace": "team-alpha",
    "exported_pod": "train-0",
    "exported_container": "trainer",
    "namespace": "gpu-operator",  # the exporter's own pod, added by the scrape
    "pod": "nvidia-dcgm-exporter-abcde",
    "instance": "10.0.0.5:9400",
    "job": "dcgm",
}
MIG = {
    "Hostname": "gpu-a100-01",
    "gpu": "1",
    "UUID": "GPU-2c3d",
    "GPU_I_ID": "2",
    "GPU_I_PROFILE": "1g.5gb",
}


def matrix(metric: str = "", *series: tuple[dict[str, str], list[str]]) -> dict[str, object]:
    result: list[dict[str, object]] = [
        {
            "metric": {"__name__": metric, **labels},
            "values": [[t, v] for t, v in zip(TIMES, values, strict=True)],
        }
        for labels, values in series
    ]
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}


ANSWERS: dict[str, object] = {  # what the fake Prometheus holds, by query
    metric: matrix(metric, *series)
    for metric, series in [
        ("DCGM_FI_DEV_GPU_UTIL", [(WHOLE, ["10", "20", "NaN"])]),
        ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", [(WHOLE, ["0.1", "0.2", "0.3"]), (MIG, ["0", "0", "1"])]),
        ("DCGM_FI_DEV_FB_USED", [(WHOLE, ["100", "200", "300"])]),
    ]
}


@dataclass
class FakePrometheus:
    """Answers /api/v1/query_range with `answers[query]` (a JSON-able object, or (status, bytes));
    records each request's path, query parameters and headers."""

    answers: dict[str, object]
    seen: list[tuple[str, dict[str, str], dict[str, str]]] = field(default_factory=list)
    port: int = 0

    def base_url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


def _handler(fake: FakePrometheus) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
            parts = urlsplit(self.path)
            params = {k: v[0] for k, v in parse_qs(parts.query).items()}
            fake.seen.append((parts.path, params, dict(self.headers)))
            answer = fake.answers.get(params.get("query", ""), matrix())
            status, body = answer if isinstance(answer, tuple) else (200, json.dumps(answer))
            body = body if isinstance(body, bytes) else body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass  # quiet test output

    return Handler


@pytest.fixture
def prometheus(settings) -> Iterator[FakePrometheus]:
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = ["127.0.0.1"]
    fake = FakePrometheus(dict(ANSWERS))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    fake.port = httpd.server_address[1]
    # A short poll interval: shutdown() waits for the loop to notice, 0.5 s by default.
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        httpd.shutdown()
        httpd.server_close()


def query(url: str, **kwargs: object) -> list[GpuSample]:
    return query_range_samples(url, **{"start": START, "end": END, **kwargs})


# --- against the local server ---


def test_three_metrics_over_three_points_merge_into_samples(prometheus):
    samples = query(prometheus.base_url())
    at = [START + timedelta(minutes=i) for i in range(3)]
    whole = [s for s in samples if s.gpu == "0"]
    assert [(s.time, s.util, s.gr_active, s.fb_used_mib) for s in whole] == [
        (at[0], 10.0, 0.1, 100.0),
        (at[1], 20.0, 0.2, 200.0),
        (at[2], None, 0.3, 300.0),
    ]
    assert {(s.namespace, s.pod, s.container) for s in whole} == {
        ("team-alpha", "train-0", "trainer")
    }
    assert {(s.hostname, s.uuid, s.model) for s in whole} == {
        ("gpu-a100-01", "GPU-0a1b", "NVIDIA A100-SXM4-40GB")
    }
    mig = [s for s in samples if s.gpu == "1"]
    assert [(s.gi_id, s.gi_profile, s.gr_active, s.util, s.pod) for s in mig] == [
        ("2", "1g.5gb", 0.0, None, ""),
        ("2", "1g.5gb", 0.0, None, ""),
        ("2", "1g.5gb", 1.0, None, ""),
    ]
    assert len(samples) == 6 and all(s.time.tzinfo is UTC for s in samples)


def test_a_value_no_gpu_can_report_is_left_out_and_counted(prometheus):
    prometheus.answers["DCGM_FI_DEV_GPU_UTIL"] = matrix(
        "DCGM_FI_DEV_GPU_UTIL", (WHOLE, ["-50", "250", "NaN"])
    )
    skipped = Skipped()
    samples = query(prometheus.base_url(), skipped=skipped)
    assert [s.util for s in samples if s.gpu == "0"] == [None, None, None]
    assert skipped.describe() == (
        "1 DCGM_FI_DEV_GPU_UTIL not a finite number, 2 DCGM_FI_DEV_GPU_UTIL outside 0-100 %"
    )


def test_a_series_whose_label_holds_a_nul_byte_is_left_out_and_counted(prometheus):
    """No exporter writes a NUL (PostgreSQL could not store it): a series scraped from
    elsewhere with one in its pod label is left out and said, the others read as before."""
    poisoned = {**WHOLE, "gpu": "3", "exported_pod": "train\x00-0"}
    prometheus.answers["DCGM_FI_DEV_GPU_UTIL"] = matrix(
        "DCGM_FI_DEV_GPU_UTIL", (WHOLE, ["10", "20", "30"]), (poisoned, ["99", "99", "99"])
    )
    skipped = Skipped()
    samples = query(prometheus.base_url(), skipped=skipped)
    assert {s.gpu for s in samples} == {"0", "1"}
    assert [s.util for s in samples if s.gpu == "0"] == [10.0, 20.0, 30.0]
    assert skipped.describe() == (
        "3 DCGM_FI_DEV_GPU_UTIL in a series whose label holds a NUL byte (\\u0000)"
    )


def test_the_server_sees_one_range_query_per_metric(prometheus):
    query(prometheus.base_url("/prometheus/"), step_seconds=60)
    assert [(path, params) for path, params, _ in prometheus.seen] == [
        (
            "/prometheus/api/v1/query_range",
            {
                "query": metric,
                "start": "2025-03-01T12:00:00Z",
                "end": "2025-03-01T12:02:00Z",
                "step": "60",
            },
        )
        for metric in (
            "DCGM_FI_DEV_GPU_UTIL",
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            "DCGM_FI_DEV_FB_USED",
        )
    ]


def test_headers_reach_every_request(prometheus):
    query(prometheus.base_url(), headers={"Authorization": "Bearer t0ken"})
    assert [headers["Authorization"] for _, _, headers in prometheus.seen] == ["Bearer t0ken"] * 3


def test_a_metric_prometheus_does_not_have_is_fine(prometheus):
    del prometheus.answers["DCGM_FI_PROF_GR_ENGINE_ACTIVE"]  # the server answers an empty matrix
    samples = query(prometheus.base_url())
    assert [(s.util, s.gr_active, s.fb_used_mib) for s in samples] == [
        (10.0, None, 100.0),
        (20.0, None, 200.0),
        (None, None, 300.0),
    ]


def test_an_error_answer_is_raised_with_its_type_and_message(prometheus):
    prometheus.answers["DCGM_FI_DEV_FB_USED"] = {
        "status": "error",
        "errorType": "bad_data",
        "error": 'invalid parameter "query": parse error',
    }
    with pytest.raises(PrometheusError) as refused:
        query(prometheus.base_url())
    message = str(refused.value)
    assert message.startswith(prometheus.base_url("/api/v1/query_range: DCGM_FI_DEV_FB_USED"))
    assert 'Prometheus answered bad_data: invalid parameter "query": parse error' in message


def test_an_http_error_status_is_a_prometheus_error(prometheus):
    # Prometheus sends its error answers with 4xx/5xx; the guarded fetcher reports the status
    # only (it does not hand back the body), so that is what we can say.
    body = b'{"status":"error","errorType":"bad_data","error":"x"}'
    prometheus.answers["DCGM_FI_DEV_GPU_UTIL"] = (400, body)
    with pytest.raises(PrometheusError, match="DCGM_FI_DEV_GPU_UTIL: HTTP 400 Bad Request"):
        query(prometheus.base_url())


def test_a_non_json_answer_is_a_prometheus_error(prometheus):
    prometheus.answers["DCGM_FI_DEV_GPU_UTIL"] = (200, b"<html>login</html>")
    with pytest.raises(PrometheusError, match="DCGM_FI_DEV_GPU_UTIL: not JSON"):
        query(prometheus.base_url())


def test_without_the_allow_list_a_loopback_prometheus_is_refused(prometheus, settings):
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = []
    with pytest.raises(PrometheusError, match="plain http is refused") as refused:
        query(prometheus.base_url())
    assert isinstance(refused.value.__cause__, FetchError)
    with pytest.raises(PrometheusError, match="127.0.0.1 \\(loopback address\\)"):
        query(f"https://127.0.0.1:{prometheus.port}")
    assert prometheus.seen == []


def test_credentials_in_the_url_are_refused_and_not_echoed(prometheus):
    with pytest.raises(PrometheusError) as refused:
        query(f"http://admin:s3cret@127.0.0.1:{prometheus.port}")
    assert "s3cret" not in str(refused.value) and "admin" not in str(refused.value)
    assert prometheus.seen == []


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"end": START + timedelta(days=12)}, "more than 11,000 points per series"),
        ({"end": START}, "the range is empty"),
        ({"end": START - timedelta(hours=1)}, "the range is empty"),
        ({"step_seconds": 0}, "step must be at least 1 s"),
    ],
)
def test_unbounded_ranges_are_refused_before_any_request(prometheus, kwargs, reason):
    with pytest.raises(PrometheusError, match=reason):
        query(prometheus.base_url(), **kwargs)
    assert prometheus.seen == []


def test_the_point_limit_is_prometheus_own():
    # 11,000 steps of 60 s is exactly the limit: accepted (here by a stand-in that answers empty).
    end = START + timedelta(seconds=60 * 11_000)
    assert query("https://prom.example", end=end, fetch_json=lambda *a, **k: matrix()) == []
    with pytest.raises(PrometheusError, match="use a step of at least 61 s"):
        query("https://prom.example", end=end + timedelta(seconds=60))


def test_too_many_samples_in_total_stop_the_read(prometheus, monkeypatch):
    monkeypatch.setattr(prometheus_api, "MAX_SAMPLES", 5)  # GPU_UTIL 3, GR_ENGINE 3 + 3
    with pytest.raises(PrometheusError, match="more than 5 samples"):
        query(prometheus.base_url())
    assert [params["query"] for _, params, _ in prometheus.seen] == [
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    ]


def test_naive_datetimes_are_a_programming_error():
    with pytest.raises(ValueError, match="start must be timezone-aware"):
        query("https://prom.example", start=datetime(2025, 3, 1))


# --- answer shapes, through a stand-in fetch_json ---


def _answering(answer: object):
    return lambda url, *, params=None, headers=None: answer


def _data(**data: object) -> dict[str, object]:
    return {"status": "success", "data": {"resultType": "matrix", "result": [], **data}}


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ([], "the answer is not a JSON object"),
        ({"status": "success"}, "not a Prometheus API answer"),
        ({"status": "warning", "data": {}}, "not a Prometheus API answer"),
        (_data(resultType="vector"), "expected a matrix, got vector"),
        (_data(result={}), "expected a matrix"),
        (_data(result=[{"values": []}]), "a series without metric labels or values"),
        (_data(result=[{"metric": {"gpu": 0}, "values": []}]), "without metric labels"),
        (_data(result=[{"metric": {"gpu": "0"}, "values": [[1, "2", 3]]}]), "bad point"),
        (_data(result=[{"metric": {"gpu": "0"}, "values": [["1", "2"]]}]), "not a number"),
        (_data(result=[{"metric": {"gpu": "0"}, "values": [[1, 2]]}]), "not a string"),
        (_data(result=[{"metric": {"gpu": "0"}, "values": [[1, "busy"]]}]), "bad point"),
        (_data(result=[{"metric": {"gpu": "0"}, "values": [[1e20, "1"]]}]), "bad point"),
    ],
)
def test_answers_of_the_wrong_shape_are_refused(answer, reason):
    with pytest.raises(PrometheusError, match=reason):
        query("https://prom.example", fetch_json=_answering(answer))


def test_series_naming_no_gpu_are_skipped():
    answer = _data(result=[{"metric": {"__name__": "x"}, "values": [[1, "1"]]}])
    assert query("https://prom.example", fetch_json=_answering(answer)) == []


def test_a_base_url_with_a_query_is_refused():
    with pytest.raises(PrometheusError, match="must not carry a query"):
        query("https://prom.example/?token=x", fetch_json=_answering(_data()))


# --- durations ---


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("15m", timedelta(minutes=15)),
        ("2h", timedelta(hours=2)),
        ("7d", timedelta(days=7)),
        ("1w", timedelta(weeks=1)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("1d2h3m4s", timedelta(days=1, hours=2, minutes=3, seconds=4)),
        (" 2h ", timedelta(hours=2)),
    ],
)
def test_parse_duration(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "not a duration"),
        ("90", "not a duration"),
        ("1.5h", "not a duration"),
        ("h", "not a duration"),
        ("30m1h", "not a duration"),  # largest unit first, as Prometheus writes them
        ("15M", "not a duration"),
        ("-5m", "not a duration"),
        ("15ms", "not a duration"),
        ("1h 30m", "not a duration"),
        ("0s", "longer than zero"),
        ("999999999999d", "too long"),
    ],
)
def test_parse_duration_refuses(text, reason):
    with pytest.raises(ValueError, match=reason):
        parse_duration(text)


# --- one cluster's series out of a Prometheus that holds several ---


def test_a_match_selects_one_clusters_series(prometheus):
    """A Thanos or Mimir holding every cluster's DCGM metrics: `--match cluster=prod-east`
    asks only for that cluster's series (Prometheus answers the selector; we send it)."""
    selected = 'DCGM_FI_DEV_GPU_UTIL{cluster="prod-east",region="eu"}'
    prometheus.answers = {selected: ANSWERS["DCGM_FI_DEV_GPU_UTIL"]}
    samples = query(prometheus.base_url(), match={"region": "eu", "cluster": "prod-east"})
    queries = [params["query"] for _, params, _ in prometheus.seen]
    assert queries[0] == selected
    assert all(q.endswith('{cluster="prod-east",region="eu"}') for q in queries)
    assert {s.hostname for s in samples} == {"gpu-a100-01"}


def test_a_matchers_value_cannot_close_the_selector():
    hostile = 'x"} or vector(1) or up{a="'
    selector = prometheus_api._selector({"cluster": hostile})
    assert selector == '{cluster="x\\"} or vector(1) or up{a=\\""}'


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("cluster=prod-east", {"cluster": "prod-east"}),
        (" cluster = prod-east , region=eu ", {"cluster": "prod-east", "region": "eu"}),
        ("", {}),
    ],
)
def test_matchers_are_read_as_labels_and_values(text, found):
    assert prometheus_api.parse_matchers(text) == found


@pytest.mark.parametrize("text", ["cluster", "9lives=x", "__name__=up", 'a"b=c', "cluster!=x"])
def test_a_matcher_that_is_not_label_equals_value_is_refused(text):
    with pytest.raises(ValueError, match="LABEL=VALUE"):
        prometheus_api.parse_matchers(text)
