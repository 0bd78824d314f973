"""Inventory writes that start from a source: read it, then apply it atomically."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from inventory.models import Cluster, SyncRun
from inventory.sources.normalise import SnapshotError
from inventory.sources.snapshot_file import read_snapshot
from inventory.sync import SyncError, snapshot_apply, sync_run_fail, sync_run_start


def cluster_sync_from_snapshot(*, cluster: Cluster, paths: Sequence[str | Path]) -> SyncRun:
    """Sync a cluster from kubectl JSON snapshot files or directories. A file that cannot be
    read or parsed fails the run with the reason and changes nothing."""
    names = ", ".join(str(p) for p in paths)
    run = sync_run_start(cluster=cluster, source=f"snapshot: {names}")
    try:
        snapshot = read_snapshot(list(paths))
    except (SnapshotError, OSError) as exc:
        sync_run_fail(run=run, error=f"the snapshot could not be read: {exc}")
        raise SyncError(str(exc)) from exc
    return snapshot_apply(run=run, snapshot=snapshot)
