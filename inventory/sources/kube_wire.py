"""What the API server sends, read as any other input: JSON answers bounded in size, and watch
streams parsed into events. Pure: no client library (inventory/sources/kube.py has it)."""

from __future__ import annotations

from typing import Any, Protocol

from gpuposture.base.safe_parse import load_json
from inventory.sources.base import SourceError, WatchExpired

# The largest answer we decode: a page of 500 ConfigMaps at Kubernetes' 1 MiB limit each. The
# depth of what the API sends is bounded by json's C decoder (a clean error, never a crash).
MAX_RESPONSE_BYTES = 512 * 1024 * 1024


class ApiError(Protocol):
    """What is read of the client's ApiException (kube.py catches it; this module needs no
    client library)."""

    status: int | None
    reason: str | None
    body: Any


def api_error(kind: str, exc: ApiError, *, verb: str = "listing") -> SourceError:
    """A readable, classified error for an API answer (to a list, or `verb` "watching")."""
    message = status_message(exc)
    if exc.status in (401, 403):
        hint = (
            "the credentials were refused"
            if exc.status == 401
            else "the account may not list it (grant get/list/watch, see deploy/)"
        )
        return SourceError(f"{verb} {kind}: HTTP {exc.status}: {hint}: {message}", retryable=False)
    retryable = exc.status in (408, 410, 429) or (exc.status or 0) >= 500
    return SourceError(f"{verb} {kind}: HTTP {exc.status}: {message}", retryable=retryable)


def status_message(exc: ApiError) -> str:
    try:
        return str(decode(exc.body).get("message") or exc.reason)[:500]
    except (TypeError, ValueError, AttributeError):
        return str(exc.reason)[:500]


def decode(data: str | bytes) -> Any:
    """JSON from the API server, as any other input: SafeParseError (a ValueError) if bad."""
    return load_json(data, max_bytes=MAX_RESPONSE_BYTES, max_depth=None)


def identity(obj: dict[str, Any]) -> tuple[str, str]:
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))


def watch_events(
    kind: str, body: bytes, since: str
) -> tuple[list[tuple[str, dict[str, Any]]], str]:
    """Parse a watch stream (one JSON event per line) into (type, object) pairs and the
    resourceVersion reached; a 410 ERROR event means the changes are no longer kept."""
    events: list[tuple[str, dict[str, Any]]] = []
    version = since
    for line in body.splitlines():
        if not line.strip():
            continue
        try:
            event = decode(line)
            event_type, obj = event["type"], event["object"]
        except (ValueError, KeyError, TypeError) as exc:
            raise SourceError(f"watching {kind}: not a watch event: {exc}", retryable=True) from exc
        if not isinstance(obj, dict):
            raise SourceError(f"watching {kind}: an event without an object", retryable=True)
        if event_type == "ERROR":
            if obj.get("code") == 410:
                raise WatchExpired(
                    f"watching {kind}: {obj.get('message') or 'resourceVersion expired'}"
                )
            raise SourceError(f"watching {kind}: {obj.get('message') or obj}", retryable=True)
        reached = (obj.get("metadata") or {}).get("resourceVersion")
        if isinstance(reached, str) and reached:
            version = reached
        if event_type in ("ADDED", "MODIFIED", "DELETED"):
            obj.setdefault("kind", kind)
            events.append((event_type, obj))
    return events, version
