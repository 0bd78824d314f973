"""ingest_dcgm --cluster NAME (FILE | --prometheus URL [--since 2h] [--match L=V]): read
DCGM-Exporter metrics, attribute them to tenants, store them and roll up the complete hours
they touch."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from inventory.input_failures import DCGM, import_failure_record
from inventory.models import Cluster
from telemetry.prometheus_api import parse_duration, parse_matchers
from telemetry.services import TelemetryError, exporter_text_ingest, prometheus_ingest

ACTOR = "manage.py ingest_dcgm"


class Command(BaseCommand):
    help = (
        "Ingest DCGM-Exporter metrics for a cluster: a saved /metrics page (Prometheus text), "
        "or a range from a Prometheus HTTP API. Samples are attributed to tenants by the pod "
        "labels and the tenant registry."
    )

    def add_arguments(self, parser):
        parser.add_argument("--cluster", required=True)
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("file", nargs="?", type=Path, help="DCGM-Exporter text")
        source.add_argument("--prometheus", metavar="URL", help="Prometheus base URL")
        parser.add_argument("--since", default="2h", help="with --prometheus: 90m, 2h, 7d")
        parser.add_argument(
            "--match",
            default="",
            metavar="LABEL=VALUE[,...]",
            help="with --prometheus: only the series with these labels (e.g. cluster=prod-east), "
            "where one Prometheus holds several clusters' metrics",
        )

    def handle(self, *args, **options) -> None:
        cluster = Cluster.objects.filter(name=options["cluster"]).first()
        if cluster is None:
            raise CommandError(f"no cluster named {options['cluster']!r}; sync it first")
        try:
            if options["prometheus"]:
                since = parse_duration(options["since"])
                result = prometheus_ingest(
                    cluster=cluster,
                    url=options["prometheus"],
                    since=since,
                    match=parse_matchers(options["match"]),
                )
            else:
                if options["match"]:
                    raise CommandError("--match selects series of --prometheus only")
                result = exporter_text_ingest(
                    cluster=cluster, text=_read(options["file"]), read_at=timezone.now()
                )
        except TelemetryError as exc:
            # Refused input, or a Prometheus that answered nothing usable: recorded for the
            # cluster's page, as a failed sync is; nothing of it was stored.
            import_failure_record(
                cluster_name=cluster.name,
                what=DCGM,
                source=options["prometheus"] or str(options["file"]),
                error=str(exc),
                actor=ACTOR,
            )
            raise CommandError(str(exc)) from exc
        except ValueError as exc:  # a bad --since or --match: the command line, not the input
            raise CommandError(str(exc)) from exc
        by = ", ".join(f"{n} {k}" for k, n in sorted(result.by_attribution.items())) or "none"
        self.stdout.write(
            f"dcgm: {result.samples} samples for {cluster.name} ({by}); "
            f"{result.hours_rolled} hour(s) rolled up for the utilisation page "
            "(the hour under way, if any, partial)"
            + (f"; {result.skipped.total} value(s) skipped" if result.skipped.total else "")
        )
        if result.skipped.total:
            # Left out, not clamped: a GPU cannot report them, so they are no utilisation.
            self.stderr.write(
                f"skipped {result.skipped.total} value(s) no GPU can report, kept out of "
                f"utilisation and chargeback: {result.skipped.describe()}"
            )


def _read(path: Path) -> str:
    try:
        if path.stat().st_size > settings.GPUPOSTURE_MAX_DCGM_BYTES:
            raise CommandError(f"{path}: larger than {settings.GPUPOSTURE_MAX_DCGM_BYTES} bytes")
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc}") from exc
