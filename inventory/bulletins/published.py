"""When each fix of a bulletin was published: the patch SLA clock's start (STACK-005), kept
across revisions. A revision that only edits text weeks later does not restart it."""

from __future__ import annotations

from datetime import datetime

from django.utils.dateparse import parse_datetime

from inventory.bulletins.csaf.fixes import Fix
from inventory.bulletins.models import FIX_IDENTITY, Bulletin

RowKey = tuple[str, ...]  # kind, platform, branch, line, host, op, affected, fixed version


def _row_key(*parts: str | None) -> RowKey:
    return tuple(part or "" for part in parts)


def published_before(bulletin: Bulletin) -> dict[RowKey, datetime | None]:
    """Fix row -> when it was published (None on rows stored before it was recorded), from
    the revision being replaced."""
    return {
        _row_key(*values[:-1]): values[-1]
        for values in bulletin.fixes.values_list(*FIX_IDENTITY, "released")
    }


def fix_published(
    fix: Fix, known: dict[RowKey, datetime | None] | None, revision: datetime
) -> datetime | None:
    """A fix the replaced revision had keeps its date; one this revision adds (nvidia-5614
    v3.0.0 added R570) was published with it; on a first import, the advisory's own date."""
    stated = parse_datetime(fix.released)
    if known is None:
        return stated
    c, b = fix.component, fix.affected
    key = _row_key(c.kind, c.platform, c.branch, c.line, c.host, b.op, b.version, fix.fixed_version)
    if key not in known:
        return revision
    return known[key] or stated
