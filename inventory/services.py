"""Inventory writes that start from a source: take the cluster's lease (sync_lease), read,
apply."""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.services import CREATE, Actor, audit_change, audit_record
from gpuposture.base.queue import QueueUnavailable
from gpuposture.base.rescore import rescore_request
from inventory.audit_state import cluster_state, stored_cluster_state
from inventory.kinds_read import PLUMBING_NAMESPACES, exported_from_a_real_cluster
from inventory.models import Cluster, Node, Pod, SyncRun
from inventory.platform import platform_inputs
from inventory.queue import enqueue_sync
from inventory.sources.base import ClusterSource, SourceError, WatchExpired
from inventory.sources.normalise import SnapshotError, normalise
from inventory.sources.registry import source_for_cluster
from inventory.sync import (
    SyncError,
    snapshot_apply,
    sync_run_fail,
    sync_run_note,
    sync_run_start,
)
from inventory.sync_delta import NeedsFullSync, delta_apply
from inventory.sync_lease import (
    cluster_lock_acquire,
    cluster_lock_release,
    cluster_lock_renew,
    lease_remaining_seconds,
)
from inventory.sync_refusal import sync_refusal

PROGRESS_EVERY_SECONDS = 0.5

logger = logging.getLogger(__name__)


class SyncBusy(Exception):
    """Another sync of this cluster holds its lease."""


class NoStoredSource(Exception):
    """The cluster has nothing a sync could re-read (snapshot files given once on the command
    line, not stored). Not a failed sync: no run is recorded, so the cluster does not turn
    stale ("last sync failed") because someone asked."""


def stale_runs_fail(*, cluster: Cluster, keep: SyncRun | None = None) -> int:
    """Runs left `running` by a worker that died (we hold the lease now, so none is live)."""
    stale = SyncRun.objects.filter(cluster=cluster, status=SyncRun.Status.RUNNING)
    if keep is not None:
        stale = stale.exclude(pk=keep.pk)
    return stale.update(
        status=SyncRun.Status.FAILED,
        finished_at=timezone.now(),
        error="interrupted: the worker stopped before the sync finished; it was run again",
    )


def cluster_sync(
    *,
    cluster: Cluster,
    source: ClusterSource | None = None,
    trigger: str = "cli",
    run: SyncRun | None = None,
) -> SyncRun:
    """Read the cluster from its source (or `source`) and apply what was read atomically.
    Raises SyncBusy if another sync holds the lease, SyncError (with `.retryable`) on failure;
    either way the last good inventory stays and a failure is recorded on the run."""
    token = cluster_lock_acquire(cluster=cluster)
    if token is None:
        if run is not None:
            sync_run_fail(run=run, error="another sync of this cluster is running")
        raise SyncBusy(f"another sync of {cluster.name} is running")
    try:
        stale_runs_fail(cluster=cluster, keep=run)
        run = _sync_holding_lease(cluster, source, trigger, run, token)
    finally:
        cluster_lock_release(cluster=cluster, token=token)
    # Whoever synced (the CLI, the API, a scheduled task), the findings and scores follow at
    # once (DESIGN §5), debounced like every other change that moves a score.
    rescore_request(clusters=[cluster.pk], reason="sync")
    return run


def _sync_holding_lease(
    cluster: Cluster, source: ClusterSource | None, trigger: str, run: SyncRun | None, token: str
) -> SyncRun:
    try:
        source = source or source_for_cluster(cluster)
        described = source.describe()
    except Exception as exc:  # noqa: BLE001 - a source that cannot be set up is a failed run
        run = run or sync_run_start(cluster=cluster, source=cluster.source, trigger=trigger)
        retryable = isinstance(exc, SourceError) and exc.retryable
        message = str(exc) if isinstance(exc, SourceError) else _unexpected("setting up", exc)
        sync_run_fail(run=run, error=message)
        raise SyncError(message, retryable=retryable) from exc
    if run is None:
        run = sync_run_start(cluster=cluster, source=described, trigger=trigger)
    try:
        return _read_and_apply(cluster, source, run, token)
    except BaseException as exc:
        # Whatever went wrong (a bug, a worker's time limit, an interrupt), the run must not
        # stay "running": failures already recorded keep their own reason.
        sync_run_abandon(run=run, error=_unexpected("the sync", exc))
        raise


def _unexpected(during: str, exc: BaseException) -> str:
    return f"unexpected error in {during}: {type(exc).__name__}: {exc}"


def sync_run_abandon(*, run: SyncRun, error: str) -> None:
    """Mark the run failed if it is still running (one conditional UPDATE: a reason recorded
    first is kept). Never raises: it runs while another exception is on its way out."""
    try:
        SyncRun.objects.filter(pk=run.pk, status=SyncRun.Status.RUNNING).update(
            status=SyncRun.Status.FAILED, error=error[:4000], finished_at=timezone.now()
        )
    except Exception:  # noqa: BLE001 - e.g. the database is gone: the original error matters
        logger.exception("could not record the failure of sync run %s", run.pk)


def _read_and_apply(cluster: Cluster, source: ClusterSource, run: SyncRun, token: str) -> SyncRun:
    progress = _progress_recorder(run, cluster, token)
    fallback = None
    if _watch_possible(cluster, source):
        try:
            return _watch_sync(cluster, source, run, progress, token)
        except (WatchExpired, NeedsFullSync) as exc:
            fallback = f"listed everything: {exc}"
        except SourceError as exc:
            run.mode = SyncRun.Mode.WATCH  # the run says which read failed: the watch
            run.save(update_fields=["mode"])
            sync_run_fail(run=run, error=str(exc))
            raise SyncError(str(exc), retryable=exc.retryable) from exc
    try:
        objects = source.read(progress)
        listed = [k for k in getattr(source, "listed", ()) or () if isinstance(k, str)]
        snapshot = normalise(objects, **platform_inputs(), listed=listed)
        # What the source could not see (DRA it may not list) is said on the run.
        seen_warnings = tuple(getattr(source, "warnings", ()) or ())
        if seen_warnings:
            snapshot = replace(snapshot, warnings=snapshot.warnings + seen_warnings)
        # How each admission kind's live list went (K8S-009: a failed read is "unknown").
        reads = tuple(getattr(source, "admission_reads", ()) or ())
        if reads:
            snapshot = replace(snapshot, admission_reads=reads)
        # The kinds it could not list: the checks that need them are not judged on this run.
        unlisted = tuple(getattr(source, "unlisted", ()) or ())
        if unlisted:
            snapshot = replace(snapshot, unlisted=unlisted)
        # A live list of a kind that found none read it (counted 0): drift compares it
        # (inventory.kinds_read), so a ClusterPolicy installed between two syncs is drift.
        listed = [k for k in getattr(source, "listed", ()) or () if isinstance(k, str)]
        if listed:
            counts = {kind: 0 for kind in listed} | snapshot.counts
            snapshot = replace(snapshot, counts=dict(sorted(counts.items())))
    except SourceError as exc:
        sync_run_fail(run=run, error=str(exc))
        raise SyncError(str(exc), retryable=exc.retryable) from exc
    except SnapshotError as exc:
        sync_run_fail(run=run, error=f"a malformed object was read: {exc}")
        raise SyncError(str(exc)) from exc
    pods = Pod.objects.filter(cluster=cluster)
    refused = sync_refusal(
        snapshot.counts,
        stored_nodes=Node.objects.filter(cluster=cluster).count(),
        stored_pods=pods.count(),
        real_cluster=exported_from_a_real_cluster(
            pods.filter(namespace__in=PLUMBING_NAMESPACES).values_list("namespace", "name")
        ),
        exported_plumbing=exported_from_a_real_cluster(
            (p.namespace, p.name) for p in snapshot.pods
        ),
    )
    if refused:  # an empty or partial export would resolve every finding: nothing is applied
        sync_run_fail(run=run, error=refused)
        raise SyncError(refused)
    _lease_kept_or_fail(cluster, run, token)
    run = snapshot_apply(run=run, snapshot=snapshot)
    sync_run_note(run=run, fallback=fallback, files_read=getattr(source, "files_read", None))
    _remember_watch_state(cluster, source, getattr(source, "resource_versions", None), full=True)
    from inventory.bulletins.patch_refresh import nodes_patch_refresh

    nodes_patch_refresh(cluster_id=cluster.pk)
    return run


def _watch_possible(cluster: Cluster, source: ClusterSource) -> bool:
    """A live source, read by the same account and context as the last full list, recently
    enough (GPUPOSTURE_FULL_RESYNC_HOURS; 0 always lists everything)."""
    hours = settings.GPUPOSTURE_FULL_RESYNC_HOURS
    state = cluster.watch_state or {}
    return (
        hours > 0
        and hasattr(source, "read_changes")
        and state.get("source") == source.describe()
        and bool(state.get("kinds"))
        and cluster.last_full_sync_at is not None
        and timezone.now() - cluster.last_full_sync_at < timedelta(hours=hours)
    )


def _lease_kept_or_fail(cluster: Cluster, run: SyncRun, token: str) -> None:
    """Apply only what we read while the cluster was ours: where our lease ran out during the
    read and another sync took it, that sync read later and applies its own read; ours,
    applied after it, would bring back what it saw deleted."""
    if cluster_lock_renew(cluster=cluster, token=token):
        return
    error = (
        "another sync of this cluster took over while this one read (its lease, "
        "GPUPOSTURE_SYNC_LEASE_SECONDS, ran out): nothing of this read was applied"
    )
    sync_run_fail(run=run, error=error)
    raise SyncError(error)


def _watch_sync(cluster: Cluster, source: Any, run: SyncRun, progress: Any, token: str) -> SyncRun:
    delta = source.read_changes(dict(cluster.watch_state["kinds"]), progress)
    _lease_kept_or_fail(cluster, run, token)
    run, touched = delta_apply(run=run, delta=delta, read_node=source.read_node)
    _remember_watch_state(cluster, source, delta.resource_versions, full=False)
    if touched:
        from inventory.bulletins.patch_refresh import nodes_patch_refresh

        nodes_patch_refresh(cluster_id=cluster.pk, node_names=touched)
    return run


def _remember_watch_state(
    cluster: Cluster, source: ClusterSource, kinds: dict[str, str] | None, *, full: bool
) -> None:
    """Where the next sync may watch from (nothing for snapshot files)."""
    state = {"source": source.describe(), "kinds": dict(kinds)} if kinds else {}
    values: dict[str, Any] = {"watch_state": state}
    if full:
        values["last_full_sync_at"] = timezone.now()
    Cluster.objects.filter(pk=cluster.pk).update(**values)
    for name, value in values.items():
        setattr(cluster, name, value)


def _progress_recorder(run: SyncRun, cluster: Cluster, token: str):
    """Write objects-read-so-far to the run at most twice a second (the page polls it), and
    renew the lease as we go."""
    progress: dict[str, int] = {}
    last_write = [0.0]

    def record(kind: str, count: int) -> None:
        progress[kind] = count
        now = time.monotonic()
        if now - last_write[0] >= PROGRESS_EVERY_SECONDS:
            last_write[0] = now
            SyncRun.objects.filter(pk=run.pk).update(progress=dict(progress))
            cluster_lock_renew(cluster=cluster, token=token)

    return record


def cluster_sync_from_snapshot(
    *,
    cluster: Cluster,
    paths: Sequence[str | Path],
    trigger: str = "cli",
    actor: Actor = None,
    remember: bool = True,
) -> SyncRun:
    """Sync from kubectl snapshot files or directories; with `remember`, a sync that succeeded
    makes them the cluster's source, so scheduled syncs re-read the same place."""
    return cluster_sync_from(
        cluster=cluster,
        source=Cluster.Source.SNAPSHOT,
        snapshot_paths=[str(p) for p in paths],
        trigger=trigger,
        actor=actor,
        remember=remember,
    )


def cluster_sync_from(
    *,
    cluster: Cluster,
    source: str,
    snapshot_paths: Sequence[str] = (),
    kubeconfig_path: str = "",
    kube_context: str = "",
    remember: bool,
    trigger: str = "cli",
    actor: Actor = None,
) -> SyncRun:
    """Sync from a source given here rather than the stored one. It becomes the cluster's
    stored source (an audit event) only with `remember` and only once the sync succeeded: a
    broken file or kubeconfig never replaces a source that works."""
    given = copy.copy(cluster)  # never saved: the cluster as it would be stored
    given.source, given.snapshot_paths = source, list(snapshot_paths)
    given.kubeconfig_path, given.kube_context = kubeconfig_path, kube_context
    try:
        reader = source_for_cluster(given)
    except SourceError as exc:
        raise SyncError(str(exc)) from exc
    run = cluster_sync(cluster=cluster, source=reader, trigger=trigger)
    if remember:
        cluster_source_set(
            cluster=cluster,
            source=source,
            snapshot_paths=snapshot_paths,
            kubeconfig_path=kubeconfig_path,
            kube_context=kube_context,
            actor=actor,
        )
    return run


@transaction.atomic
def cluster_save(*, cluster: Cluster, actor: Actor = None) -> Cluster:
    """Save a registered or edited cluster and bring its periodic sync in line; the change is
    an audit event by `actor` (request.user from a page or the API)."""
    from inventory.schedule import cluster_schedule_update

    cluster.full_clean(exclude=["sync_lock_until", "sync_lock_token"])
    before = stored_cluster_state(cluster)
    cluster.save()
    after = cluster_state(cluster)
    if before is None:
        audit_record(actor=actor, action=CREATE, obj=cluster, after=after)
    else:
        audit_change(actor=actor, obj=cluster, before=before, after=after)
    # The provider decides PROV-001/002 and checklist item 10: linking, changing or unlinking
    # it re-scores the cluster once this transaction commits (DESIGN §5).
    if (before or {}).get("provider") != after["provider"]:
        rescore_request(clusters=[cluster.pk], reason="cluster provider")
    cluster_schedule_update(cluster=cluster)
    return cluster


@transaction.atomic
def cluster_source_set(
    *,
    cluster: Cluster,
    source: str,
    snapshot_paths: Sequence[str] = (),
    kubeconfig_path: str = "",
    kube_context: str = "",
    actor: Actor = None,
) -> Cluster:
    """Remember how the cluster is reached (paths and a context name, never a credential).
    Snapshot paths replace the stored paths; a live source replaces the kubeconfig fields."""
    before = stored_cluster_state(cluster)
    cluster.source = source
    if source == Cluster.Source.SNAPSHOT:
        cluster.snapshot_paths = list(snapshot_paths)
        fields = ["source", "snapshot_paths"]
    else:
        cluster.kubeconfig_path, cluster.kube_context = kubeconfig_path, kube_context
        fields = ["source", "kubeconfig_path", "kube_context"]
    cluster.save(update_fields=fields)
    audit_change(actor=actor, obj=cluster, before=before, after=cluster_state(cluster))
    return cluster


def cluster_sync_request(*, cluster: Cluster, trigger: str) -> SyncRun:
    """Record a run and queue the sync (in-process without a broker); the run is returned at
    once so a page or API client can follow its progress. Raises QueueUnavailable (the run
    recorded as failed with that reason) when the broker cannot take the task, NoStoredSource
    (nothing recorded) when the cluster has nothing to re-read."""
    if not cluster.has_stored_source:
        raise NoStoredSource(
            f"{cluster.name} has no stored source to re-read: it was synced from snapshot files "
            f"given once. Run `manage.py sync_cluster --cluster {cluster.name} --snapshot FILE`, "
            "or store snapshot paths or a kubeconfig for it (Edit)"
        )
    if lease_remaining_seconds(cluster=cluster) > 0:
        raise SyncBusy(f"a sync of {cluster.name} is already running")
    run = sync_run_start(cluster=cluster, source=f"{cluster.get_source_display()}", trigger=trigger)

    def send() -> None:
        try:
            enqueue_sync(cluster_id=cluster.pk, trigger=trigger, run_id=run.pk)
        except QueueUnavailable as exc:
            # The run stays in the history with the reason; the inventory is untouched.
            exc.record = sync_run_fail(run=run, error=str(exc))
            raise

    transaction.on_commit(send)
    return run
