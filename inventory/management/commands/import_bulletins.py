"""import_bulletins PATH_OR_URL...: import CSAF 2.0 advisories from files, directories of JSON,
document URLs or provider feeds (provider-metadata.json, ROLIE feed, directory index.txt)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from inventory.bulletins.imports import bulletins_import_recorded
from inventory.models import Bulletin

ACTOR = "manage.py import_bulletins"


class Command(BaseCommand):
    help = (
        "Import vendor security bulletins in CSAF 2.0 JSON (files, directories, document URLs "
        "or provider feeds); a newer revision replaces an older one, unless it weakens a fix "
        "(a lower fixed version; a product, branch or CVE dropped): then it is held for a "
        "security lead to confirm, unless --confirm-weakening is given. Refused documents are "
        "listed with the reason. URLs must be https on public addresses unless the host is in "
        "GPUPOSTURE_FETCH_ALLOWED_HOSTS."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", metavar="PATH_OR_URL")
        parser.add_argument(
            "--confirm-weakening",
            action="store_true",
            help="Apply revisions that weaken a fix now instead of holding them for a security "
            "lead (the audit log records that this command confirmed them).",
        )

    def handle(self, *args, paths: list[str], **options) -> None:
        urls = [p for p in paths if "://" in p]
        files = [p for p in paths if "://" not in p]
        record, result = bulletins_import_recorded(
            trigger="cli",
            actor=ACTOR,
            paths=files,
            urls=urls,
            confirm_weakening=options["confirm_weakening"],
        )
        for source, reason in result.refused:
            self.stderr.write(f"refused {source}: {reason}")
        for change in record.changes:
            if change["outcome"] == "held":
                self.stderr.write(
                    f"held {change['tracking_id']} v{change['version_after']} for a security "
                    f"lead to confirm (revision {change['revision']}): "
                    + "; ".join(change["weakening"])
                )
        for bulletin in Bulletin.objects.filter(
            tracking_id__in=[*result.imported, *result.replaced], fixes__isnull=True
        ):
            # Landed, but judges no node: say why rather than let it pass for coverage.
            first = bulletin.unmatched[0] if bulletin.unmatched else {}
            self.stderr.write(
                f"{bulletin.tracking_id}: no product paired with a component gpuposture "
                f"judges ({len(bulletin.unmatched)} not paired; first: "
                f"{first.get('name', '-')}: {first.get('reason', 'no products')})"
            )
        self.stdout.write(
            f"bulletins: {len(result.imported)} imported, {len(result.replaced)} replaced by a "
            f"newer revision, {len(result.unchanged)} unchanged, {len(result.held)} held for "
            f"confirmation, {len(result.refused)} refused (import {record.pk})"
        )
        if result.refused and not result.landed:
            source, reason = result.refused[0]
            raise CommandError(f"no document could be imported (first: {source}: {reason})")
