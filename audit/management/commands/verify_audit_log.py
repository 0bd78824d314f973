"""verify_audit_log: recompute the audit log's hash chain and name the first broken link."""

from __future__ import annotations

import re

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.selectors import audit_chain_verify

HASH_RE = re.compile(r"[0-9a-f]{64}")


class Command(BaseCommand):
    help = (
        "Recompute the audit log's hash chain. Exits 0 with a summary when it is intact; "
        "otherwise names the first broken link (an edited, removed or reordered event)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--anchor",
            metavar="HASH",
            help="a head hash printed by an earlier run: it must still be in the chain "
            "(catches events removed from the end, or a rewritten chain)",
        )
        parser.add_argument("--chunk-size", type=int, default=2000, help="rows read at a time")

    def handle(self, *args, anchor: str | None, chunk_size: int, **options) -> None:
        if anchor is not None and not HASH_RE.fullmatch(anchor):
            raise CommandError("--anchor must be a sha256 hash: 64 lowercase hex digits")
        if chunk_size < 1:
            raise CommandError("--chunk-size must be at least 1")
        report = audit_chain_verify(chunk_size=chunk_size, anchor=anchor)
        if report.first_break is not None:
            good = report.count - 1
            raise CommandError(
                f"audit log chain BROKEN at {report.first_break.describe()}. "
                f"{good} event{'s' if good != 1 else ''} before it verified."
            )
        if report.anchor_found is False:
            raise CommandError(
                f"audit log chain: the anchor {anchor} is not in the chain of {report.count} "
                "events: events after it were removed, or the chain was rewritten."
            )
        head = f"head event {report.head_id} {report.head_hash}" if report.head_id else "empty"
        anchored = "; anchor found" if report.anchor_found else ""
        self.stdout.write(f"{report.count} events, chain intact ({head}){anchored}")
