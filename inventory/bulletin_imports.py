"""Recorded bulletin imports: every import from the CLI, the API, the upload form or the feed
schedule leaves a BulletinImport row saying what was asked, what landed and what was refused.
URL imports from the web run on a worker (a feed may list hundreds of documents)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction
from django.utils import timezone

from gpuposture.base.queue import QueueUnavailable, enqueue
from inventory.bulletin_feeds import bulletins_import_urls
from inventory.bulletins import ImportResult, bulletins_import_paths, bulletins_import_uploads
from inventory.models import BulletinImport

logger = logging.getLogger(__name__)


def bulletins_import_recorded(
    *,
    trigger: str,
    actor: str = "",
    paths: list[str] | None = None,
    urls: list[str] | None = None,
    uploads: list[tuple[str, bytes]] | None = None,
) -> tuple[BulletinImport, ImportResult]:
    """Import now and record it; node patch status is refreshed once at the end."""
    sources = [*(paths or []), *(urls or []), *(f"upload {n}" for n, _ in uploads or [])]
    record = BulletinImport.objects.create(
        trigger=trigger[:20], requested_by=actor[:150], sources=sources[:200]
    )
    return record, _run(record, lambda: _import(paths or [], urls or [], uploads or []))


def bulletin_urls_import_request(*, urls: list[str], trigger: str, actor: str) -> BulletinImport:
    """Record a URL import and hand it to a worker; the row shows its outcome when done.
    Raises QueueUnavailable (the import recorded as failed with that reason) when the broker
    cannot take the task."""
    from inventory.tasks import import_bulletin_urls  # tasks import services, not the reverse

    record = BulletinImport.objects.create(
        trigger=trigger[:20], requested_by=actor[:150], sources=list(urls)[:200]
    )

    def send() -> None:
        try:
            enqueue(import_bulletin_urls, record.pk, what="the import")
        except QueueUnavailable as exc:
            record.status, record.error = BulletinImport.Status.FAILED, str(exc)
            record.finished_at = timezone.now()
            record.save(update_fields=["status", "error", "finished_at"])
            exc.record = record
            raise

    transaction.on_commit(send)
    return record


def bulletin_import_run(*, record: BulletinImport) -> ImportResult | None:
    """Run a requested URL import (the worker's side); a finished one is not run twice."""
    if record.status != BulletinImport.Status.RUNNING:
        return None
    return _run(record, lambda: bulletins_import_urls(urls=list(record.sources)))


def _import(paths: list[str], urls: list[str], uploads: list[tuple[str, bytes]]) -> ImportResult:
    result = ImportResult()
    if urls:
        result.merge(bulletins_import_urls(urls=urls, refresh=False))
    if uploads:
        result.merge(bulletins_import_uploads(files=uploads, refresh=False))
    # The path import refreshes node patch status, for the others too.
    return result.merge(bulletins_import_paths(paths=paths))


def _run(record: BulletinImport, work: Callable[[], ImportResult]) -> ImportResult:
    try:
        result = work()
    except Exception as exc:  # noqa: BLE001 - recorded, then re-raised for the caller
        record.status, record.error = BulletinImport.Status.FAILED, str(exc)[:4000]
        record.finished_at = timezone.now()
        record.save(update_fields=["status", "error", "finished_at"])
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
        "refused": len(result.refused),
    }
    record.bulletins = [*result.imported, *result.replaced][:1000]
    record.refused = [{"source": s[:500], "reason": r[:1000]} for s, r in result.refused[:1000]]
    record.finished_at = timezone.now()
    record.save(update_fields=["status", "counts", "bulletins", "refused", "finished_at"])
    return result
