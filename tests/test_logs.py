"""Structured logs: JSON lines carrying the request id that the response also carries."""

from __future__ import annotations

import io
import json
import logging

import pytest

from gpuposture.base.logs import JsonFormatter, RequestIdFilter


@pytest.fixture
def captured():
    """The django.request logger written through our filter and JSON formatter."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("django.request")
    logger.addHandler(handler)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)


def test_a_request_log_line_is_json_with_the_request_id(client, personas, captured):
    client.force_login(personas["auditor"])
    response = client.get("/nodes/nowhere/nothing/", HTTP_X_REQUEST_ID="trace-42")
    assert response.status_code == 404
    assert response["X-Request-ID"] != "trace-42"  # the server's own
    [line] = captured.getvalue().splitlines()
    entry = json.loads(line)
    assert entry["request_id"] == response["X-Request-ID"]
    assert entry["client_request_id"] == "trace-42"  # the caller's, under its own name
    assert entry["level"] == "WARNING" and entry["logger"] == "django.request"
    assert "Not Found" in entry["message"]


def test_extra_fields_exceptions_and_no_request():
    record = logging.LogRecord("gpuposture", logging.ERROR, __file__, 1, "sync %s", ("lab",), None)
    record.cluster = "lab"
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    RequestIdFilter().filter(record)
    entry = json.loads(JsonFormatter().format(record))
    assert entry["message"] == "sync lab" and entry["cluster"] == "lab"
    assert entry["request_id"] is None  # a command or task, not a request
    assert "ValueError: boom" in entry["exception"]


def test_a_forged_request_id_cannot_inject_log_lines(client, personas, captured):
    client.force_login(personas["auditor"])
    response = client.get("/nodes/x/y/", HTTP_X_REQUEST_ID='x"}\n{"level": "CRITICAL"')
    assert response["X-Request-ID"] != 'x"}\n{"level": "CRITICAL"'
    assert len(captured.getvalue().splitlines()) == 1
    assert "client_request_id" not in json.loads(captured.getvalue())  # dropped, not kept
