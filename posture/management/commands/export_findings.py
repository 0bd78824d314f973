"""export_findings [--format json|csv] [--tenant SLUG] [--cluster NAME] [--status open]."""

from __future__ import annotations

import csv
import json

from django.core.management.base import BaseCommand, CommandError

from posture.filters import FindingFilter
from posture.models import Finding
from posture.serializers import FindingSerializer

CSV_COLUMNS = [
    "id", "check", "severity", "status", "tenant", "cluster", "subject_kind",
    "subject_namespace", "subject_name", "title", "first_seen", "last_seen", "mappings",
    "evidence",
]  # fmt: skip


class Command(BaseCommand):
    help = "Write findings to stdout as JSON or CSV (the API's finding shape)."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--format", choices=["json", "csv"], default="json")
        parser.add_argument("--tenant")
        parser.add_argument("--cluster")
        parser.add_argument("--status", choices=[s.value for s in Finding.Status])
        parser.add_argument("--severity", choices=["critical", "high", "medium", "low"])
        parser.add_argument("--check")

    def handle(self, *args, **options) -> None:  # type: ignore[no-untyped-def]
        params = {
            k: options[k]
            for k in ("tenant", "cluster", "status", "severity", "check")
            if options.get(k)
        }
        queryset = Finding.objects.select_related("tenant", "cluster").order_by("id")
        filterset = FindingFilter(params, queryset=queryset)
        if not filterset.is_valid():
            raise CommandError(f"bad filter: {filterset.errors.as_text()}")
        rows = FindingSerializer(filterset.qs, many=True).data
        if options["format"] == "json":
            json.dump(rows, self.stdout, indent=2, default=str)
            self.stdout.write("")
        else:
            writer = csv.DictWriter(self.stdout, fieldnames=CSV_COLUMNS, extrasaction="ignore")
            writer.writeheader()
            for row in rows:
                writer.writerow(
                    {**row, "mappings": " ".join(row["mappings"]),
                     "evidence": json.dumps(row["evidence"], sort_keys=True)}
                )  # fmt: skip
        self.stderr.write(f"{len(rows)} findings exported")
