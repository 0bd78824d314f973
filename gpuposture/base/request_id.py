"""A request id per request, made by the server: echoed in the `X-Request-ID` response header
and readable by the code the request runs (the audit log records it with every event, logs
carry it). A caller's own `X-Request-ID` (a proxy or a client correlating its logs) is never
that id: anyone can send any header, and an audit event must not carry an id the client chose
(two events of unrelated requests under one id, or an id that names another request). A sane
one is kept apart as the client request id, for logs only."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from contextvars import ContextVar

from django.http import HttpRequest, HttpResponse

REQUEST_ID_HEADER = "X-Request-ID"
CLIENT_REQUEST_ID_HEADER = "X-Client-Request-ID"
# Anything else (long, spaces, control characters) could forge log lines: dropped.
_SANE_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_current: ContextVar[str | None] = ContextVar("gpuposture_request_id", default=None)
_client: ContextVar[str | None] = ContextVar("gpuposture_client_request_id", default=None)


def current_request_id() -> str | None:
    """The server's id of the request being handled, or None outside a request (commands,
    tasks)."""
    return _current.get()


def current_client_request_id() -> str | None:
    """The caller's own `X-Request-ID` when it was a sane token, else None. For logs only."""
    return _client.get()


def new_request_id() -> str:
    return uuid.uuid4().hex


def client_request_id_from(value: str | None) -> str | None:
    """The caller's id when it is a sane token (at most 64 of A-Z a-z 0-9 . _ -), else None."""
    if value and _SANE_ID.fullmatch(value):
        return value
    return None


class RequestIdMiddleware:
    """Sets `request.request_id` (always the server's) and `request.client_request_id` (the
    caller's sane header, or None) and their context variables; the response carries the
    server's id in `X-Request-ID` and the caller's, when kept, in `X-Client-Request-ID`. Put it
    first, so redirects and errors carry them too."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = new_request_id()
        client_id = client_request_id_from(request.headers.get(REQUEST_ID_HEADER))
        request.request_id = request_id
        request.client_request_id = client_id
        token, client_token = _current.set(request_id), _client.set(client_id)
        try:
            response = self.get_response(request)
        finally:
            # A worker thread serves many requests: never leak one's ids into the next.
            _current.reset(token)
            _client.reset(client_token)
        response[REQUEST_ID_HEADER] = request_id
        if client_id:
            response[CLIENT_REQUEST_ID_HEADER] = client_id
        return response
