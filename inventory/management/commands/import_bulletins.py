"""import_bulletins PATH_OR_URL...: import CSAF 2.0 advisories from files, directories of JSON,
document URLs or provider feeds (provider-metadata.json, ROLIE feed, directory index.txt)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from inventory.bulletin_imports import bulletins_import_recorded


class Command(BaseCommand):
    help = (
        "Import vendor security bulletins in CSAF 2.0 JSON (files, directories, document URLs "
        "or provider feeds); a newer revision replaces an older one; refused documents are "
        "listed with the reason. URLs must be https on public addresses unless the host is in "
        "GPUPOSTURE_FETCH_ALLOWED_HOSTS."
    )

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("paths", nargs="+", metavar="PATH_OR_URL")

    def handle(self, *args, paths: list[str], **options) -> None:  # type: ignore[no-untyped-def]
        urls = [p for p in paths if "://" in p]
        files = [p for p in paths if "://" not in p]
        _record, result = bulletins_import_recorded(trigger="cli", paths=files, urls=urls)
        for source, reason in result.refused:
            self.stderr.write(f"refused {source}: {reason}")
        self.stdout.write(
            f"bulletins: {len(result.imported)} imported, {len(result.replaced)} replaced by a "
            f"newer revision, {len(result.unchanged)} unchanged, {len(result.refused)} refused"
        )
        if result.refused and not result.landed:
            source, reason = result.refused[0]
            raise CommandError(f"no document could be imported (first: {source}: {reason})")
