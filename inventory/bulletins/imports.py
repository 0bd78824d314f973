"""Recorded bulletin imports: every import from the CLI, the API, the upload form or the feed
schedule leaves a BulletinImport row saying who asked, what was asked, what changed per
bulletin (fixed versions before and after, products and CVEs added and dropped), what was held
for a security lead's confirmation and what was refused, and is an audit event. URL imports
from the web run on a worker (a feed may list hundreds of documents)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from audit.services import Actor, actor_name, audit_record
from gpuposture.base.queue import QueueUnavailable
from gpuposture.base.rescore import rescore_request
from inventory.bulletins.feeds import bulletins_import_urls
from inventory.bulletins.store import (
    ImportOptions,
    ImportResult,
    bulletin_import,
    bulletins_import_paths,
    bulletins_import_uploads,
)
from inventory.models import BulletinImport
from inventory.queue import enqueue_bulletin_import

logger = logging.getLogger(__name__)


def bulletins_import_recorded(
    *,
    trigger: str,
    actor: Actor = None,
    paths: list[str] | None = None,
    urls: list[str] | None = None,
    uploads: list[tuple[str, bytes]] | None = None,
    documents: list[tuple[str, object]] | None = None,
    action: str = BulletinImport.Action.IMPORT,
    confirm_weakening: bool = False,
    rescore: bool = True,
) -> tuple[BulletinImport, ImportResult]:
    """Import now and record it; node patch status is refreshed once at the end, and when a
    bulletin changed the clusters are re-scored after commit (unless `rescore` is False because
    the caller scores next). `documents` are (source, decoded JSON) pairs; `actor` is the
    user, or the command, the audit events name."""
    sources = [
        *(paths or []),
        *(urls or []),
        *(f"upload {n}" for n, _ in uploads or []),
        *(source for source, _ in documents or []),
    ]
    record = BulletinImport.objects.create(
        action=action,
        trigger=trigger[:20],
        requested_by=actor_name(actor) if actor is not None else "",
        sources=sources[:200],
    )
    options = ImportOptions(actor=actor, record=record, confirm_weakening=confirm_weakening)
    work = lambda: _import(paths or [], urls or [], uploads or [], documents or [], options)  # noqa: E731
    return record, _run(record, work, options, rescore=rescore)


def bulletin_urls_import_request(*, urls: list[str], trigger: str, actor: Actor) -> BulletinImport:
    """Record a URL import and hand it to a worker; the row shows its outcome when done.
    Raises QueueUnavailable (the import recorded as failed with that reason) when the broker
    cannot take the task."""
    record = BulletinImport.objects.create(
        trigger=trigger[:20], requested_by=actor_name(actor), sources=list(urls)[:200]
    )

    def send() -> None:
        try:
            enqueue_bulletin_import(import_id=record.pk)
        except QueueUnavailable as exc:
            record.status, record.error = BulletinImport.Status.FAILED, str(exc)
            record.finished_at = timezone.now()
            record.save(update_fields=["status", "error", "finished_at"])
            exc.record = record
            raise

    transaction.on_commit(send)
    return record


def bulletin_import_run(*, record: BulletinImport) -> ImportResult | None:
    """Run a requested URL import (the worker's side); a finished one is not run twice. Its
    audit events name the user who asked, when the account still exists."""
    if record.status != BulletinImport.Status.RUNNING:
        return None
    user = get_user_model().objects.filter(username=record.requested_by).first()
    options = ImportOptions(actor=user or record.requested_by or None, record=record)
    work = lambda: bulletins_import_urls(urls=list(record.sources), options=options)  # noqa: E731
    return _run(record, work, options)


def rescore_after_commit() -> None:
    """Re-score every cluster once the caller's transaction commits: bulletins moved."""
    rescore_request(everything=True, reason="bulletins")


def _import(
    paths: list[str],
    urls: list[str],
    uploads: list[tuple[str, bytes]],
    documents: list[tuple[str, object]],
    options: ImportOptions,
) -> ImportResult:
    result = ImportResult()
    if urls:
        result.merge(bulletins_import_urls(urls=urls, refresh=False, options=options))
    if uploads:
        result.merge(bulletins_import_uploads(files=uploads, refresh=False, options=options))
    for source, data in documents:
        bulletin_import(data=data, source=source, result=result, options=options)
    # The path import refreshes node patch status, for the others too.
    return result.merge(bulletins_import_paths(paths=paths, options=options))


def _run(
    record: BulletinImport,
    work: Callable[[], ImportResult],
    options: ImportOptions,
    rescore: bool = True,
) -> ImportResult:
    try:
        result = work()
    except Exception as exc:  # noqa: BLE001 - recorded, then re-raised for the caller
        record.status, record.error = BulletinImport.Status.FAILED, str(exc)[:4000]
        record.finished_at = timezone.now()
        record.save(update_fields=["status", "error", "finished_at"])
        _audit_import(record, options)
        logger.exception("bulletin import %s failed", record.pk)
        raise
    record.status = (
        BulletinImport.Status.SUCCEEDED
        if result.landed or not result.refused
        else BulletinImport.Status.FAILED
    )
    record.counts = {
        "imported": len(result.imported),
        "replaced": len(result.replaced),
        "unchanged": len(result.unchanged),
        "held": len(result.held),
        "refused": len(result.refused),
    }
    record.bulletins = [*result.imported, *result.replaced][:1000]
    record.changes = result.changes[:1000]
    record.refused = [{"source": s[:500], "reason": r[:1000]} for s, r in result.refused[:1000]]
    if not record.bulletins:
        # No bulletin changed: the import cannot have resolved a finding.
        record.resolved_findings = {"count": 0, "ids": []}
    record.finished_at = timezone.now()
    record.save(
        update_fields=[
            "status",
            "counts",
            "bulletins",
            "changes",
            "refused",
            "resolved_findings",
            "finished_at",
        ]
    )
    _audit_import(record, options)
    if record.bulletins and rescore:
        rescore_after_commit()
    return result


def _audit_import(record: BulletinImport, options: ImportOptions) -> None:
    """The import itself as an event (each bulletin it changed or held has its own)."""
    after = {
        "action": record.action,
        "trigger": record.trigger,
        "sources": record.sources[:20],
        "status": record.status,
        "counts": record.counts,
        "bulletins": record.bulletins[:100],
        "error": record.error[:500],
    }
    audit_record(actor=options.actor, action="import", obj=record, after=after)
