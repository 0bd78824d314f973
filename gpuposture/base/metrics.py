"""The app's own Prometheus metrics: request latency, task durations and failures, and how
they are served (only to a caller holding the metrics token).

Label values are bounded: a request is labelled with its URL route's name, never its path, so
`/nodes/lab/gpu-1/` and `/nodes/lab/gpu-2/` count as one series (`node-detail`).

Processes: each process keeps its own values unless PROMETHEUS_MULTIPROC_DIR names a directory
(empty at start, one per host or container), where prometheus_client then writes every
process's values so that any one process can serve the sum (gunicorn workers, Celery's
prefork children).
"""

from __future__ import annotations

import hmac
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    make_wsgi_app,
)
from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

HTTP_REQUEST_DURATION = Histogram(
    "gpuposture_http_request_duration_seconds",
    "Time to answer an HTTP request, by method, URL route name and status class.",
    ["method", "route", "status"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
TASK_DURATION = Histogram(
    "gpuposture_task_duration_seconds",
    "Time a Celery task ran, by task name (every outcome: success, failure, retry).",
    ["task"],
    buckets=(0.05, 0.1, 0.5, 1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0),
)
TASK_FAILURES = Counter(
    "gpuposture_task_failures",
    "Celery tasks that ended with an exception, by task name.",
    ["task"],
)


# --- requests -----------------------------------------------------------------------------------
def route_label(request: HttpRequest) -> str:
    """The matched route's name (namespaced, e.g. `api:finding-list`); `static` for static
    files answered before URL resolution; `unmatched` when no route matched (404s, redirects
    to HTTPS). Never the raw path, whose values are unbounded."""
    match = getattr(request, "resolver_match", None)
    if match is not None:
        return match.view_name or match.route or "unnamed"
    if request.path_info.startswith(settings.STATIC_URL or "/static/"):
        return "static"
    return "unmatched"


class RequestMetricsMiddleware:
    """Times every request. Put it first, so the time includes every other middleware."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        method = request.method if request.method in _METHODS else "other"
        HTTP_REQUEST_DURATION.labels(
            method=method,
            route=route_label(request),
            status=f"{response.status_code // 100}xx",
        ).observe(time.perf_counter() - started)
        return response


# --- Celery tasks (connected to Celery's signals in gpuposture.celery) --------------------------
_task_started: dict[str, float] = {}
_task_lock = threading.Lock()


def task_started(task_id: str) -> None:
    with _task_lock:
        _task_started[task_id] = time.perf_counter()


def task_finished(task_id: str, task_name: str) -> None:
    with _task_lock:
        started = _task_started.pop(task_id, None)
    if started is not None:
        TASK_DURATION.labels(task=task_name).observe(time.perf_counter() - started)


def task_failed(task_name: str) -> None:
    TASK_FAILURES.labels(task=task_name).inc()


# --- serving ------------------------------------------------------------------------------------
def bearer_matches(authorization: str | None, token: str) -> bool:
    """Whether an Authorization header carries `Bearer <token>` (constant-time comparison)."""
    scheme, _, given = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


def unauthorised_response() -> HttpResponse:
    response = HttpResponse("A metrics token is required.\n", status=401, content_type="text/plain")
    response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response


class _Combined:
    """Several collectors read as one, for one exposition."""

    def __init__(self, sources: Iterable[Collector | CollectorRegistry]) -> None:
        self.sources = list(sources)

    def collect(self) -> Iterator[object]:
        for source in self.sources:
            yield from source.collect()


def process_registry() -> CollectorRegistry:
    """The values of this process, or of every process sharing PROMETHEUS_MULTIPROC_DIR."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        return registry
    return REGISTRY


def exposition(extra: Iterable[Collector] = ()) -> tuple[bytes, str]:
    """(body, content type) of the text exposition of this process's metrics plus `extra`."""
    return generate_latest(_Combined([process_registry(), *extra])), CONTENT_TYPE_LATEST


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib's name
        """Scrapes every few seconds would drown the worker's log."""


def serve_worker_metrics(*, port: int, addr: str, token: str) -> WSGIServer:
    """Serve this process's metrics on addr:port in a daemon thread, only to requests carrying
    `Authorization: Bearer <token>` (the same token as the web's /metrics)."""
    metrics_app = make_wsgi_app(process_registry())

    def app(environ: dict, start_response: Callable) -> Iterable[bytes]:
        if not bearer_matches(environ.get("HTTP_AUTHORIZATION"), token):
            start_response(
                "401 Unauthorized",
                [("Content-Type", "text/plain"), ("WWW-Authenticate", 'Bearer realm="metrics"')],
            )
            return [b"A metrics token is required.\n"]
        return metrics_app(environ, start_response)

    server = make_server(addr, port, app, ThreadingWSGIServer, handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    logger.info("Worker metrics on http://%s:%s/metrics", addr, server.server_port)
    return server
