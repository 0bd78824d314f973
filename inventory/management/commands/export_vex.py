"""export_vex --cluster NAME --format openvex|csaf: the cluster's VEX document to stdout."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from inventory.bulletins.vex.selectors import (
    VEX_FORMATS,
    NoStatements,
    cluster_vex_statements,
    vex_document,
)
from inventory.bulletins.vex.statements import counts
from inventory.models import Cluster


class Command(BaseCommand):
    help = (
        "Write the VEX of a cluster's GPU nodes to stdout: OpenVEX (default) or CSAF 2.0 VEX, "
        "one statement per vulnerability and node component (affected, fixed, not affected, "
        "under investigation)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--cluster", required=True)
        parser.add_argument("--format", choices=list(VEX_FORMATS), default="openvex")

    def handle(self, *args, **options) -> None:
        cluster = Cluster.objects.filter(name=options["cluster"]).first()
        if cluster is None:
            raise CommandError(f"no cluster named {options['cluster']!r}")
        statements = cluster_vex_statements(cluster=cluster, user=None)
        try:
            document = vex_document(
                options["format"], cluster=cluster, statements=statements, now=timezone.now()
            )
        except NoStatements as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps(document, indent=2))
        found = counts(statements)
        self.stderr.write(
            f"{len(statements)} statements for cluster {cluster.name}: "
            f"{found['affected']} affected, {found['fixed']} fixed, "
            f"{found['not_affected']} not affected, "
            f"{found['under_investigation']} under investigation"
        )
