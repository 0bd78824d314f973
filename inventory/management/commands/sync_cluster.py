"""sync_cluster --cluster NAME (--snapshot PATH... | --kubeconfig PATH [--context C] |
--in-cluster) [--remember | --no-remember] [--interval MINUTES]: read a cluster and apply it
atomically. With --remember (the default for a kubeconfig or in-cluster access, not for snapshot
files), a sync that succeeded makes what it read the cluster's stored source for scheduled
syncs (paths and a context name, never a credential); a failed sync changes nothing stored.
The command prints what it stored and what is scheduled."""

from __future__ import annotations

import argparse
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from inventory.models import Cluster
from inventory.schedule import cluster_schedule_summary, cluster_schedule_update
from inventory.services import SyncBusy, cluster_save, cluster_sync_from
from inventory.sources.base import SourceError
from inventory.sources.registry import source_for_cluster
from inventory.sync import SyncError, cluster_get_or_create
from inventory.sync_summary import sync_run_summary
from tenants.spec import SLUG_RE

ACTOR = "manage.py sync_cluster"
MAX_INTERVAL_MINUTES = 7 * 24 * 60  # as the API allows


class Command(BaseCommand):
    help = "Sync a cluster's GPU inventory from snapshots, a kubeconfig, or in-cluster access."

    def add_arguments(self, parser):
        parser.add_argument("--cluster", required=True, help="cluster name (created if new)")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument(
            "--snapshot",
            nargs="+",
            metavar="PATH",
            help="`kubectl get ... -A -o json` output, or a directory of it (read to any depth, "
            "as `kubectl cluster-info dump --output-directory` writes)",
        )
        source.add_argument("--kubeconfig", type=Path, help="kubeconfig file to read with")
        source.add_argument("--in-cluster", action="store_true", help="use this pod's account")
        parser.add_argument("--context", help="kubeconfig context (default: current)")
        parser.add_argument(
            "--remember",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="after a good sync, store this source for scheduled syncs (default: yes for "
            "--kubeconfig and --in-cluster, no for --snapshot)",
        )
        parser.add_argument(
            "--interval",
            type=int,
            metavar="MINUTES",
            help="after a good sync, set the scheduled sync interval (0: no scheduled syncs)",
        )

    def handle(self, *args, cluster: str, **options) -> None:
        if not SLUG_RE.match(cluster):
            raise CommandError(f"cluster name {cluster!r}: use lowercase letters, digits, hyphens")
        if options["context"] and not options["kubeconfig"]:
            raise CommandError("--context needs --kubeconfig")
        interval = options["interval"]
        if interval is not None and not 0 <= interval <= MAX_INTERVAL_MINUTES:
            raise CommandError(f"--interval: 0 to {MAX_INTERVAL_MINUTES} minutes")
        given = _given_source(options)
        remember = options["remember"]
        if remember is None:  # a live source is how the cluster is reached; a file is one-off
            remember = given["source"] != Cluster.Source.SNAPSHOT
        record = cluster_get_or_create(name=cluster, actor=ACTOR)
        try:
            run = cluster_sync_from(
                cluster=record, **given, remember=remember, trigger="cli", actor=ACTOR
            )
        except SyncBusy as exc:
            raise CommandError(f"{exc}; try again when it has finished") from exc
        except SyncError as exc:
            raise CommandError(
                f"sync of {cluster} failed; the previous inventory is unchanged and so is the "
                f"stored source: {exc}"
            ) from exc
        if interval is not None:  # an explicit edit: audited, and the schedule follows it
            record.refresh_from_db()
            record.sync_interval_minutes = interval
            cluster_save(cluster=record, actor=ACTOR)
        elif remember:
            cluster_schedule_update(cluster=record)
        for warning in run.warnings:
            self.stderr.write(f"warning: {warning}")
        self.stdout.write(f"{cluster}: {sync_run_summary(run)}")
        self._stored(record, remember)

    def _stored(self, cluster: Cluster, remembered: bool) -> None:
        """What scheduled syncs of the cluster will read, and when."""
        try:
            stored = source_for_cluster(cluster).describe()
        except SourceError:
            stored = "none"
        how = "this sync's source" if remembered else "unchanged; --remember stores this one"
        self.stdout.write(f"{cluster.name}: stored source {stored} ({how})")
        when = cluster_schedule_summary(cluster=cluster)
        self.stdout.write(f"{cluster.name}: scheduled syncs: {when}")


def _given_source(options: dict) -> dict:
    if options["snapshot"]:
        # Absolute: a worker reading them later runs in another directory.
        paths = [str(Path(p).resolve()) for p in options["snapshot"]]
        return {"source": Cluster.Source.SNAPSHOT, "snapshot_paths": paths}
    if options["kubeconfig"]:
        kubeconfig = options["kubeconfig"].resolve()
        if not kubeconfig.is_file():
            raise CommandError(f"{kubeconfig}: no such kubeconfig file")
        return {
            "source": Cluster.Source.KUBECONFIG,
            "kubeconfig_path": str(kubeconfig),
            "kube_context": options["context"] or "",
        }
    return {"source": Cluster.Source.IN_CLUSTER}
