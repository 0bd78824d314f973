"""Source: kubectl JSON (or YAML) snapshot files and directories."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inventory.sources.base import Progress, SourceError
from inventory.sources.normalise import SnapshotError
from inventory.sources.snapshot_file import load_snapshot_objects


class SnapshotFileSource:
    def __init__(self, paths: Sequence[str | Path]) -> None:
        if not paths:
            raise SourceError("no snapshot files given", retryable=False)
        self.paths = [str(p) for p in paths]

    def describe(self) -> str:
        return "snapshot: " + ", ".join(self.paths)

    def read(self, progress: Progress) -> list[dict[str, Any]]:
        try:
            objects = load_snapshot_objects(self.paths)
        except (SnapshotError, OSError) as exc:
            raise SourceError(f"the snapshot could not be read: {exc}", retryable=False) from exc
        for kind, count in Counter(
            o.get("kind", "?") for o in objects if isinstance(o, dict)
        ).items():
            progress(kind, count)
        return objects
