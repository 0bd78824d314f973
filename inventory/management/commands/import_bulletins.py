"""import_bulletins PATH...: import CSAF 2.0 advisories (files or directories of JSON)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from inventory.bulletins import bulletins_import_paths


class Command(BaseCommand):
    help = (
        "Import vendor security bulletins in CSAF 2.0 JSON (files or directories); a newer "
        "revision replaces an older one; refused documents are listed with the reason."
    )

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("paths", nargs="+", metavar="PATH_OR_URL")

    def handle(self, *args, paths: list[str], **options) -> None:  # type: ignore[no-untyped-def]
        urls = [p for p in paths if "://" in p]
        if urls:
            raise CommandError(
                f"{urls[0]}: provider feeds (URLs) are not supported yet; download the "
                "documents and import the files"
            )
        result = bulletins_import_paths(paths=paths)
        for source, reason in result.refused:
            self.stderr.write(f"refused {source}: {reason}")
        self.stdout.write(
            f"bulletins: {len(result.imported)} imported, {len(result.replaced)} replaced by a "
            f"newer revision, {len(result.unchanged)} unchanged, {len(result.refused)} refused"
        )
        if result.refused and not (result.imported or result.replaced or result.unchanged):
            raise CommandError("no document could be imported")
