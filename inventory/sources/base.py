"""The one small interface every cluster source implements (STYLE rule 6). PURE."""

from __future__ import annotations

from collections.abc import Callable
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
