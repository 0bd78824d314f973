"""sync_cluster --cluster NAME --snapshot PATH...: read a cluster and apply it atomically."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from inventory.services import cluster_sync_from_snapshot
from inventory.sync import SyncError, cluster_get_or_create
from tenants.spec import SLUG_RE


class Command(BaseCommand):
    help = "Sync a cluster's GPU inventory from kubectl JSON snapshots (files or directories)."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--cluster", required=True, help="cluster name (created if new)")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument(
            "--snapshot", nargs="+", metavar="PATH", help="`kubectl get ... -A -o json` output"
        )

    def handle(self, *args, cluster: str, snapshot: list[str], **options) -> None:  # type: ignore[no-untyped-def]
        if not SLUG_RE.match(cluster):
            raise CommandError(f"cluster name {cluster!r}: use lowercase letters, digits, hyphens")
        record = cluster_get_or_create(name=cluster)
        try:
            run = cluster_sync_from_snapshot(cluster=record, paths=snapshot)
        except SyncError as exc:
            raise CommandError(
                f"sync of {cluster} failed; the previous inventory is unchanged: {exc}"
            ) from exc
        counts = ", ".join(f"{kind} {n}" for kind, n in sorted(run.counts.items()))
        for warning in run.warnings:
            self.stderr.write(f"warning: {warning}")
        nodes = run.changes.get("nodes", {})
        self.stdout.write(
            f"{cluster}: sync run {run.pk} succeeded in {run.duration_seconds:.2f} s; "
            f"read {counts}; "
            f"nodes {nodes.get('created', 0)} new, {nodes.get('updated', 0)} changed, "
            f"{nodes.get('deleted', 0)} gone"
        )
