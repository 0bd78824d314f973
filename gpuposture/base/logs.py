"""Structured logs: one JSON object per line, with the request id of the request (or Celery
task) that wrote it, so a log line leads to the request, its audit events and its response."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from gpuposture.base.request_id import current_client_request_id, current_request_id

# LogRecord attributes that are not `extra=` fields a caller added.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class RequestIdFilter(logging.Filter):
    """Adds `request_id` (the server's, None outside a request) to every record, and
    `client_request_id` (the caller's own X-Request-ID) when the caller sent a sane one."""

    def filter(self, record: logging.LogRecord) -> bool:
        # Django logs a 4xx/5xx response after the middleware has returned, with the request
        # attached: take the ids from it then.
        request = getattr(record, "request", None)
        if not hasattr(record, "request_id"):
            record.request_id = current_request_id() or getattr(request, "request_id", None)
        if not hasattr(record, "client_request_id"):
            client_id = current_client_request_id() or getattr(request, "client_request_id", None)
            if client_id:
                record.client_request_id = client_id
        return True


class JsonFormatter(logging.Formatter):
    """time, level, logger, message, request_id, any `extra=` fields (client_request_id
    among them), and the exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in entry and key != "request":
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        # default=str: an `extra=` value that is not JSON still logs, as text.
        return json.dumps(entry, default=str)
