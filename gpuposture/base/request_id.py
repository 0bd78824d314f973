"""A request id per request: taken from `X-Request-ID` when the caller sent a sane one (a proxy
or a client correlating its own logs), else a new one; echoed in the response and readable by
the code the request runs (the audit log records it with every event)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from contextvars import ContextVar

from django.http import HttpRequest, HttpResponse

REQUEST_ID_HEADER = "X-Request-ID"
# Anything else (long, spaces, control characters) could forge log lines: replace it.
_SANE_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_current: ContextVar[str | None] = ContextVar("gpuposture_request_id", default=None)


def current_request_id() -> str | None:
    """The id of the request being handled, or None outside a request (commands, tasks)."""
    return _current.get()


def request_id_from(value: str | None) -> str:
    """The caller's id when it is a sane token, else a new uuid4 hex."""
    if value and _SANE_ID.fullmatch(value):
        return value
    return uuid.uuid4().hex


class RequestIdMiddleware:
    """Sets `request.request_id` and the context variable, and echoes the id in the
    `X-Request-ID` response header. Put it first, so redirects and errors carry it too."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_from(request.headers.get(REQUEST_ID_HEADER))
        request.request_id = request_id  # type: ignore[attr-defined]
        token = _current.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            # A worker thread serves many requests: never leak one's id into the next.
            _current.reset(token)
        response[REQUEST_ID_HEADER] = request_id
        return response
