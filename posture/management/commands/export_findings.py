"""export_findings [--format json|csv|sarif|openreports|policyreport] [--tenant SLUG]
[--cluster NAME] [--status open]."""

from __future__ import annotations

from collections.abc import Iterator

from django.core.management.base import BaseCommand, CommandError

from gpuposture.base.enums import Severity
from gpuposture.base.filters import form_errors_text
from posture.exports import FORMATS, export_text
from posture.filters import FindingFilter
from posture.finding_rows import finding_rows_streamed, used_checks
from posture.models import Finding
from posture.rules import CHECKS


class Command(BaseCommand):
    help = (
        "Write findings to stdout as JSON, CSV, SARIF 2.1.0 (the API's finding shape) or "
        "Kubernetes policy reports (openreports: openreports.io/v1alpha1 Report/ClusterReport; "
        "policyreport: wgpolicyk8s.io/v1alpha2) as JSON: one report, or a v1 List of them "
        "(kubectl apply -f takes either)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--format", choices=list(FORMATS), default="json")
        parser.add_argument("--tenant")
        parser.add_argument("--cluster")
        parser.add_argument("--status", choices=[s.value for s in Finding.Status])
        parser.add_argument("--severity", choices=Severity.values())
        parser.add_argument("--check")

    def handle(self, *args, **options) -> None:
        params = {
            k: options[k]
            for k in ("tenant", "cluster", "status", "severity", "check")
            if options.get(k)
        }
        queryset = Finding.objects.all()
        # No request, no user: the command sees every tenant and cluster. A tenant, cluster
        # or check that does not exist is bad input (DESIGN §9), refused by the filters as
        # in the API: a typo would otherwise export nothing and exit 0.
        filterset = FindingFilter(params, queryset=queryset)
        if not filterset.is_valid():
            raise CommandError(form_errors_text(filterset.errors))
        kind, written = options["format"], [0]

        def rows() -> Iterator[dict]:  # read and written a chunk at a time: constant memory
            for row in finding_rows_streamed(filterset.qs, None):
                written[0] += 1
                yield row

        used = used_checks(filterset.qs) if kind == "sarif" else ()
        for piece in export_text(kind, rows(), used, CHECKS):
            self.stdout.write(piece, ending="")
        if kind in ("json", "sarif"):
            self.stdout.write("")  # a newline after the JSON document
        self.stderr.write(f"{written[0]} findings exported")
