"""export_findings [--format json|csv] [--tenant SLUG] [--cluster NAME] [--status open]."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from posture.exports import findings_csv, findings_sarif
from posture.filters import FindingFilter
from posture.models import Finding
from posture.rules import CHECKS
from posture.serializers import FindingSerializer


class Command(BaseCommand):
    help = "Write findings to stdout as JSON, CSV or SARIF 2.1.0 (the API's finding shape)."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--format", choices=["json", "csv", "sarif"], default="json")
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
        queryset = (
            Finding.objects.select_related("cluster").prefetch_related("tenants").order_by("id")
        )
        filterset = FindingFilter(params, queryset=queryset)
        if not filterset.is_valid():
            raise CommandError(f"bad filter: {filterset.errors.as_text()}")
        rows = FindingSerializer(filterset.qs, many=True).data
        if options["format"] == "json":
            json.dump(rows, self.stdout, indent=2, default=str)
            self.stdout.write("")
        elif options["format"] == "csv":
            self.stdout.write(findings_csv(rows), ending="")
        else:
            json.dump(findings_sarif(rows, CHECKS), self.stdout, indent=2, default=str)
            self.stdout.write("")
        self.stderr.write(f"{len(rows)} findings exported")
