"""The watch half of FakeKubeAPI: which events a watch streams, and how they are framed.

A watch from resourceVersion RV streams the difference between the fake's world at RV and
its current world, then holds the stream open and ends it, as the API server does when
`timeoutSeconds` runs out. Framing is the server's: HTTP/1.1 chunked, one JSON event per
line and per chunk, so a client reads each event as it arrives, before the stream ends.
Events are computed when the watch starts: a change made while a watch is held open is not
pushed into it (a real server would), the next watch from its resourceVersion sees it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

Key = tuple[str, str]  # (metadata.namespace, metadata.name); namespace "" when cluster-scoped


@dataclass(frozen=True)
class Stream:
    """A watch answer: `events` written one per line, then the stream held `hold` seconds."""

    events: list[dict[str, Any]]
    hold: float = 0.0


def truthy(value: str | None) -> bool:
    # The python client sends booleans as "true" (older releases "True"); the server takes "1" too.
    return (value or "").lower() in ("1", "true")


def hold_seconds(query: dict[str, str], cap: float) -> float:
    # 0 or absent timeoutSeconds lets a real server pick 30-60 minutes: the cap decides.
    timeout = float(query.get("timeoutSeconds") or 0)
    return min(timeout, cap) if timeout > 0 else cap


def watch_events(
    before: list[dict[str, Any]], after: list[dict[str, Any]], kind: str, api_version: str, rv: str
) -> list[dict[str, Any]]:
    """ADDED, MODIFIED and DELETED events from world `before` to `after`, by namespace/name."""
    old, new = _by_key(before), _by_key(after)
    events = []
    for key in sorted(old.keys() | new.keys()):
        if key not in old:
            kind_of_change, obj = "ADDED", new[key]
        elif key not in new:
            kind_of_change, obj = "DELETED", old[key]  # a deleted object's last state
        elif old[key] != new[key]:
            kind_of_change, obj = "MODIFIED", new[key]
        else:
            continue
        events.append({"type": kind_of_change, "object": stamped(obj, kind, api_version, rv)})
    return events


def bookmark(kind: str, api_version: str, rv: str) -> dict[str, Any]:
    # A bookmark carries only the resourceVersion: clients must not read anything else from it.
    obj = {"kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": rv}}
    return {"type": "BOOKMARK", "object": obj}


def write_stream(
    handler: BaseHTTPRequestHandler, stream: Stream, hold: Callable[[float], object]
) -> None:
    # Chunked framing needs HTTP/1.1; the fake's other answers stay HTTP/1.0 with a length.
    handler.protocol_version = "HTTP/1.1"
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.send_header("Connection", "close")  # one watch per connection, nothing pooled after
    handler.end_headers()
    for event in stream.events:
        _chunk(handler, json.dumps(event).encode() + b"\n")
    hold(stream.hold)
    _chunk(handler, b"")  # the last chunk: the server ends the watch cleanly


def _chunk(handler: BaseHTTPRequestHandler, data: bytes) -> None:
    handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
    handler.wfile.flush()


def _by_key(items: list[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    return {(i["metadata"].get("namespace", ""), i["metadata"].get("name", "")): i for i in items}


def stamped(obj: dict[str, Any], kind: str, api_version: str, rv: str) -> dict[str, Any]:
    """An object as a watch or a GET sends it, unlike a list item: with kind, apiVersion and
    `metadata.resourceVersion` (here the world's, where etcd's is the object's last write)."""
    out = {"kind": kind, "apiVersion": api_version, **copy.deepcopy(obj)}
    out["metadata"]["resourceVersion"] = rv
    return out
