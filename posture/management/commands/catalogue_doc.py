"""Rewrite docs/checks.md from the check registry."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from posture.catalogue_doc import DOC_PATH, catalogue_markdown


class Command(BaseCommand):
    help = "Write docs/checks.md from the check registry."

    def handle(self, *args, **options) -> None:
        DOC_PATH.write_text(catalogue_markdown())
        self.stdout.write(f"wrote {DOC_PATH}")
