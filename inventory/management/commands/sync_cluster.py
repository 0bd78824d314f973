"""sync_cluster --cluster NAME (--snapshot PATH... | --kubeconfig PATH [--context C] |
--in-cluster): read a cluster and apply it atomically. The cluster record remembers how to
reach it (paths and a context name, never a credential) for scheduled syncs."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from inventory.models import Cluster
from inventory.schedule import cluster_schedule_update
from inventory.services import (
    SyncBusy,
    cluster_source_set,
    cluster_sync,
    cluster_sync_from_snapshot,
)
from inventory.sync import SyncError, cluster_get_or_create
from tenants.spec import SLUG_RE

ACTOR = "manage.py sync_cluster"


class Command(BaseCommand):
    help = "Sync a cluster's GPU inventory from snapshots, a kubeconfig, or in-cluster access."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--cluster", required=True, help="cluster name (created if new)")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument(
            "--snapshot", nargs="+", metavar="PATH", help="`kubectl get ... -A -o json` output"
        )
        source.add_argument("--kubeconfig", type=Path, help="kubeconfig file to read with")
        source.add_argument("--in-cluster", action="store_true", help="use this pod's account")
        parser.add_argument("--context", help="kubeconfig context (default: current)")

    def handle(self, *args, cluster: str, **options) -> None:  # type: ignore[no-untyped-def]
        if not SLUG_RE.match(cluster):
            raise CommandError(f"cluster name {cluster!r}: use lowercase letters, digits, hyphens")
        if options["context"] and not options["kubeconfig"]:
            raise CommandError("--context needs --kubeconfig")
        record = cluster_get_or_create(name=cluster, actor=ACTOR)
        try:
            run = self._sync(record, options)
        except SyncBusy as exc:
            raise CommandError(f"{exc}; try again when it has finished") from exc
        except SyncError as exc:
            raise CommandError(
                f"sync of {cluster} failed; the previous inventory is unchanged: {exc}"
            ) from exc
        cluster_schedule_update(cluster=record)
        self._summarise(cluster, run)

    def _sync(self, record: Cluster, options: dict):  # type: ignore[no-untyped-def]
        if options["snapshot"]:
            return cluster_sync_from_snapshot(
                cluster=record, paths=options["snapshot"], actor=ACTOR
            )
        if options["kubeconfig"]:
            kubeconfig = options["kubeconfig"].resolve()
            if not kubeconfig.is_file():
                raise CommandError(f"{kubeconfig}: no such kubeconfig file")
            cluster_source_set(
                cluster=record,
                source=Cluster.Source.KUBECONFIG,
                kubeconfig_path=str(kubeconfig),
                kube_context=options["context"] or "",
                actor=ACTOR,
            )
        else:
            cluster_source_set(cluster=record, source=Cluster.Source.IN_CLUSTER, actor=ACTOR)
        return cluster_sync(cluster=record, trigger="cli")

    def _summarise(self, cluster: str, run) -> None:  # type: ignore[no-untyped-def]
        counts = ", ".join(f"{kind} {n}" for kind, n in sorted(run.counts.items()))
        for warning in run.warnings:
            self.stderr.write(f"warning: {warning}")
        nodes = run.changes.get("nodes", {})
        self.stdout.write(
            f"{cluster}: sync run {run.pk} succeeded in {run.duration_seconds:.2f} s; "
            f"read {counts}; nodes {nodes.get('created', 0)} new, "
            f"{nodes.get('updated', 0)} changed, {nodes.get('deleted', 0)} gone; "
            f"{run.changes.get('drift_events', 0)} drift events"
        )
