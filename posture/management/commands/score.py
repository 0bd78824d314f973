"""score [--cluster NAME]: run the checks and score every tenant (printed most risk first)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from inventory.models import Cluster
from posture.rescore import rescore_now


class Command(BaseCommand):
    help = "Evaluate the posture checks over the last good inventory and score every tenant."

    def add_arguments(self, parser):
        parser.add_argument("--cluster", help="only re-evaluate this cluster's findings")

    def handle(self, *args, cluster: str | None, **options) -> None:
        clusters = None
        if cluster:
            clusters = list(Cluster.objects.filter(name=cluster))
            if not clusters:
                raise CommandError(f"no cluster named {cluster!r}")
        run = rescore_now(clusters=clusters)
        c = run.counts
        self.stdout.write(
            f"posture run {run.pk}: clusters {', '.join(run.clusters) or 'none'}; findings "
            f"{c.get('opened', 0)} new, {c.get('reopened', 0)} reopened, "
            f"{c.get('still_open', 0)} still open, {c.get('resolved', 0)} resolved; "
            f"{c.get('tenants_scored', 0)} tenants scored"
        )
        # Most risk first, as the overview ranks them.
        for score in run.scores.select_related("tenant").order_by("-risk", "tenant__slug"):
            self.stdout.write(
                f"  {score.tenant.slug:24} risk {score.risk:>10,.2f}  score {score.score:g} "
                f"{score.grade}"
            )
