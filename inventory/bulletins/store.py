"""Bulletin writes: import CSAF advisories (a newer revision replaces an older one) and bring
every node's patch status in line with what the bulletins now say."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from django.db import transaction
from django.utils.dateparse import parse_datetime

from audit.services import CREATE, audit_record
from gpuposture.base.safe_parse import SafeParseError, load_json
from inventory.bulletins.csaf.document import Advisory, CsafError, parse_advisory
from inventory.bulletins.csaf.fixes import Fix, fixes
from inventory.bulletins.csaf.revisions import RevisionChanges, RevisionState, revision_changes
from inventory.bulletins.csaf.versions import compare, parse_version
from inventory.bulletins.patch_refresh import nodes_patch_refresh
from inventory.bulletins.published import RowKey, fix_published, published_before
from inventory.bulletins.revisions import (
    ImportOptions,
    advisory_state,
    audit_state,
    bulletin_state,
    change_entry,
    revision_hold,
    revisions_supersede,
    was_rejected,
)
from inventory.models import Bulletin, BulletinFix
from inventory.patching.status import (
    remedy_dicts,
)

MAX_DOCUMENT_BYTES = 20 * 1024 * 1024
DRAFT_REFUSED = (
    "{id}: document.tracking.status is 'draft': a draft is not a published advisory and "
    "never sets a baseline; import the publisher's interim or final revision"
)
DEFAULTS = ImportOptions()


@dataclass
class ImportResult:
    imported: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # weakening revisions awaiting confirmation
    refused: list[tuple[str, str]] = field(default_factory=list)  # (source, reason)
    changes: list[dict] = field(default_factory=list)  # bulletin_revisions.change_entry

    def merge(self, other: ImportResult) -> ImportResult:
        for name in ("imported", "replaced", "unchanged", "held", "refused", "changes"):
            getattr(self, name).extend(getattr(other, name))
        return self

    @property
    def landed(self) -> bool:
        return bool(self.imported or self.replaced or self.unchanged or self.held)


def _newer(version: str, released: str, existing: Bulletin) -> bool:
    if parse_version(version) and parse_version(existing.version):
        order = compare(version, existing.version)
        if order:
            return order > 0
    parsed = parse_datetime(released)
    return bool(parsed and parsed > existing.current_release_date)


@transaction.atomic
def bulletin_import(
    *, data: object, source: str, result: ImportResult, options: ImportOptions = DEFAULTS
) -> Bulletin | None:
    """Import one CSAF document; a refused one is recorded in `result` and changes nothing.
    A newer revision that weakens a fix is held (bulletin_revisions.revision_hold) unless
    `options.confirm_weakening`; every change is an audit event."""
    try:
        advisory = parse_advisory(data)
        released = parse_datetime(advisory.current_release_date)
        if released is None:
            raise CsafError("document.tracking.current_release_date is not a date-time")
    except CsafError as exc:
        result.refused.append((source, getattr(exc, "reason", str(exc))))
        return None
    if advisory.status == "draft":
        result.refused.append((source, DRAFT_REFUSED.format(id=advisory.tracking_id)))
        return None
    existing = Bulletin.objects.filter(tracking_id=advisory.tracking_id).first()
    if existing and (
        not _newer(advisory.version, advisory.current_release_date, existing)
        or was_rejected(existing.tracking_id, advisory.version)
    ):
        marking = {"tlp": advisory.tlp or "", "tracking_status": advisory.status[:10]}
        if any(getattr(existing, k) != v for k, v in marking.items()):
            # Stored before the marking was recorded, or re-marked by the publisher (TLP, an
            # interim revision republished as final): the document's own marking holds.
            for key, value in marking.items():
                setattr(existing, key, value)
            existing.save(update_fields=list(marking))
        result.unchanged.append(advisory.tracking_id)
        return existing
    found, unmatched = fixes(advisory)
    before = bulletin_state(existing) if existing else None
    after = advisory_state(advisory, found)
    changes = revision_changes(before, after)
    if existing and changes.weakening and not options.confirm_weakening:
        revision = revision_hold(
            bulletin=existing,
            advisory=advisory,
            data=data,
            source=source,
            after=after,
            changes=changes,
            options=options,
        )
        result.held.append(advisory.tracking_id)
        entry = change_entry(advisory.tracking_id, "held", before, after, changes)
        result.changes.append(entry | {"revision": revision.pk})
        return existing
    bulletin = _store(existing, advisory, found, unmatched, released, source)
    outcome = "replaced" if existing else "imported"
    (result.replaced if existing else result.imported).append(advisory.tracking_id)
    result.changes.append(change_entry(advisory.tracking_id, outcome, before, after, changes))
    _audit_stored(bulletin, before, after, changes, options)
    return bulletin


def _store(
    existing: Bulletin | None,
    advisory: Advisory,
    found: list[Fix],
    unmatched: list,
    released: datetime,
    source: str,
) -> Bulletin:
    bulletin = existing or Bulletin(tracking_id=advisory.tracking_id)
    bulletin.title = (advisory.title or "")[:500]  # CSAF requires one; its lack loses no fix
    bulletin.category, bulletin.version = advisory.category[:60], advisory.version[:40]
    bulletin.initial_release_date = parse_datetime(advisory.initial_release_date or "") or None
    bulletin.current_release_date = released
    bulletin.aggregate_severity = (advisory.aggregate_severity or "")[:40]
    bulletin.cves = sorted({v.cve for v in advisory.vulnerabilities if v.cve})
    bulletin.unmatched = [
        {"product": u.product_id, "name": u.name, "reason": u.reason} for u in unmatched
    ]
    bulletin.source = source[:500]
    bulletin.tracking_status = advisory.status[:10]
    bulletin.tlp = advisory.tlp or ""
    bulletin.save()
    known = published_before(bulletin) if existing else None
    bulletin.fixes.all().delete()
    BulletinFix.objects.bulk_create(_fix_row(bulletin, fix, known, released) for fix in found)
    # A pending hold compared itself with the revision just replaced: it no longer applies.
    revisions_supersede(tracking_id=bulletin.tracking_id)
    return bulletin


def _audit_stored(
    bulletin: Bulletin,
    before: RevisionState | None,
    after: RevisionState,
    changes: RevisionChanges,
    options: ImportOptions,
) -> None:
    record = options.record
    state = audit_state(bulletin.tracking_id, bulletin.title, after)
    state["import"] = record.pk if record else None
    if changes.weakening:
        state["weakening_confirmed"] = changes.weakening
    old = audit_state(bulletin.tracking_id, bulletin.title, before) if before else None
    action = "replace" if before else CREATE
    audit_record(actor=options.actor, action=action, obj=bulletin, before=old, after=state)


def _fix_row(
    bulletin: Bulletin,
    fix: Fix,
    known: dict[RowKey, datetime | None] | None = None,
    revision: datetime | None = None,
) -> BulletinFix:
    c, b = fix.component, fix.affected
    return BulletinFix(
        released=fix_published(fix, known, revision or bulletin.current_release_date),
        bulletin=bulletin,
        kind=c.kind,
        platform=c.platform or "",
        branch=c.branch or "",
        line=c.line or "",
        host=c.host or "",
        affected_op=b.op,
        affected_version=b.version,
        condition=fix.condition or b.condition or "",
        fixed_version=fix.fixed_version or "",
        cves=list(fix.cves),
        max_cvss=fix.max_cvss,
        severity=(fix.severity or "").lower(),
        warning=fix.warning or "",
        no_fix=fix.no_fix or "",
        remedies=remedy_dicts(fix.remedies),
    )


def bulletins_import_paths(
    *, paths: list[str], refresh: bool = True, options: ImportOptions = DEFAULTS
) -> ImportResult:
    """Import files and directories of CSAF JSON; each document on its own (a refused one
    never stops the others)."""
    result = ImportResult()
    for path in _documents(paths, result):
        try:
            if path.stat().st_size > MAX_DOCUMENT_BYTES:
                raise ValueError(f"larger than {MAX_DOCUMENT_BYTES // 1024 // 1024} MB")
            raw = path.read_bytes()
        except (OSError, ValueError) as exc:
            result.refused.append((str(path), f"not readable: {exc}"))
            continue
        bulletin_import_bytes(raw=raw, source=str(path), result=result, options=options)
    if refresh:
        nodes_patch_refresh()
    return result


def bulletins_import_uploads(
    *, files: list[tuple[str, bytes]], refresh: bool = True, options: ImportOptions = DEFAULTS
) -> ImportResult:
    """Import uploaded documents (name, content), each on its own, then refresh patch status."""
    result = ImportResult()
    for name, raw in files:
        bulletin_import_bytes(raw=raw, source=f"upload {name}", result=result, options=options)
    if refresh:
        nodes_patch_refresh()
    return result


def bulletin_import_bytes(
    *, raw: bytes, source: str, result: ImportResult, options: ImportOptions = DEFAULTS
) -> Bulletin | None:
    """Import one document given as bytes; too large or not JSON is refused with the reason."""
    if len(raw) > MAX_DOCUMENT_BYTES:
        result.refused.append((source, f"larger than {MAX_DOCUMENT_BYTES // 1024 // 1024} MB"))
        return None
    try:
        data = load_json(raw, max_bytes=MAX_DOCUMENT_BYTES)
    except SafeParseError as exc:
        result.refused.append((source, f"not readable JSON: {exc}"))
        return None
    return bulletin_import(data=data, source=source, result=result, options=options)


def _documents(paths: list[str], result: ImportResult) -> list[Path]:
    found: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            found += sorted(p for p in path.iterdir() if p.suffix == ".json" and p.is_file())
        elif path.is_file():
            found.append(path)
        else:
            result.refused.append((text, "no such file or directory"))
    return found
