"""A sync run in one sentence, for the CLI and the "Sync now" message."""

from __future__ import annotations

from inventory.models import SyncRun
from inventory.sources.nul_strings import WARNING_MARK


def sync_run_summary(run: SyncRun) -> str:
    """What the run did: read and changed on success, the reason on failure, else that it is
    still under way (queued or running on a worker)."""
    if run.status == SyncRun.Status.FAILED:
        return f"sync run {run.pk} failed: {run.error or 'no reason recorded'}"
    if run.status != SyncRun.Status.SUCCEEDED:
        return f"sync run {run.pk} is queued or running; its progress shows on the cluster page"
    counts = ", ".join(f"{kind} {n}" for kind, n in sorted(run.counts.items()))
    nodes = run.changes.get("nodes", {})
    # A tenant's NUL (nul_strings) changed what was stored: said here, not only in the warnings.
    files = run.files_read
    # A directory is read to any depth: how many files it held is worth a glance.
    if files is not None:
        counts = f"{counts or 'nothing'} from {files} file{'' if files == 1 else 's'}"
    nul = next((w.partition(", which")[0] for w in run.warnings if WARNING_MARK in w), "")
    return (
        f"sync run {run.pk} succeeded in {run.duration_seconds or 0:.2f} s; "
        f"read {counts or 'nothing'}; nodes {nodes.get('created', 0)} new, "
        f"{nodes.get('updated', 0)} changed, {nodes.get('deleted', 0)} gone; "
        f"{run.changes.get('drift_events', 0)} drift events"
    ) + (f"; {nul}, read with it removed (see its warnings)" if nul else "")
