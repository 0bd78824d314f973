"""The one small interface every cluster source implements (STYLE rule 6). PURE."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

# progress(kind, objects of that kind read so far)
Progress = Callable[[str, int], None]


class SourceError(Exception):
    """Reading a cluster failed. `retryable` says whether trying again later can help
    (a 5xx, a timeout, a refused connection) or not (403, bad credentials, bad input)."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class ClusterSource(Protocol):
    def describe(self) -> str:
        """What is read, for the SyncRun (no secrets)."""
        ...

    def read(self, progress: Progress) -> list[dict[str, Any]]:
        """Every object the checks need, as raw Kubernetes dicts (each with its kind)."""
        ...


def no_progress(kind: str, count: int) -> None:
    return None


@dataclass
class WatchDelta:
    """What changed in a cluster since the resourceVersions of the last sync (watch events,
    the last state of each object kept): raw objects as the API sends them, each with its kind."""

    changed: list[dict[str, Any]] = field(default_factory=list)  # added or modified
    deleted: list[dict[str, Any]] = field(default_factory=list)  # their last state
    resource_versions: dict[str, str] = field(default_factory=dict)  # kind -> read up to
    events: dict[str, int] = field(default_factory=dict)  # kind -> events received
    warnings: list[str] = field(default_factory=list)  # for the run: what was not read, and why


class WatchExpired(SourceError):
    """The API server no longer holds the changes since our resourceVersion (410 Gone): only a
    full list can bring the inventory up to date."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)
