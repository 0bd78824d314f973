"""Reads that every reader of all tenants sees alike, cached per posture version.

Security leads, platform engineers and auditors all see every tenant, so their overview and
their findings lists are the same for all of them. Such a read is built once per change of
the data behind it and kept in the cache. The key holds `posture_version()`, one query of
numbers that move whenever that data does: the audit log (every change a person makes:
acceptances, tenants, clusters, providers), the posture runs (findings, scores, expired
acceptances reopened), the sync runs (started, finished), and the latest acceptance to
have expired (time alone turns it open: gpuposture.base.finding_status). Edits that bypass
the audit log (a Django shell, an admin page that records no event) show within
GPUPOSTURE_READ_CACHE_SECONDS. A tenant viewer's reads are never cached: they are small and
theirs alone, and a viewer removed from a tenant must stop seeing it at once."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.utils import timezone

from audit.models import AuditEvent
from gpuposture.base.querysets import sees_every_row
from inventory.models import Cluster, SyncRun
from posture.models import Finding, PostureRun
from tenants.models import Tenant

T = TypeVar("T")


def shared_read(user, parts: tuple[str, ...], build: Callable[[], T]) -> T:
    """`build()`, from the cache when `user` reads every tenant and nothing changed since."""
    seconds = settings.GPUPOSTURE_READ_CACHE_SECONDS
    if seconds <= 0 or not sees_every_row(user, Tenant):
        return build()
    digest = hashlib.sha256(repr((posture_version(), parts)).encode()).hexdigest()
    key = f"posture-read:{digest}"
    value = cache.get(key)
    if value is None:
        value = build()
        cache.set(key, value, seconds)
    return value


def posture_version() -> tuple[object, ...]:
    """Numbers that change whenever posture data a reader sees does (one query)."""
    audit, runs, syncs, tenants, clusters, findings = (
        connection.ops.quote_name(model._meta.db_table)
        for model in (AuditEvent, PostureRun, SyncRun, Tenant, Cluster, Finding)
    )
    # Our own table names from the models; nothing here comes from a request.
    sql = (
        f"SELECT (SELECT MAX(id) FROM {audit}), (SELECT MAX(id) FROM {runs}),"  # noqa: S608
        f" (SELECT MAX(id) FROM {syncs}),"
        f" (SELECT COUNT(*) FROM {syncs} WHERE finished_at IS NULL),"
        f" (SELECT COUNT(*) FROM {tenants}), (SELECT COUNT(*) FROM {clusters}),"
        # The latest expiry already passed: it moves when another acceptance expires (each
        # newly expired one ends after every earlier one had), so no cached read outlives
        # an expiry. Few rows: only accepted findings are read.
        f" (SELECT MAX(accepted_until) FROM {findings}"
        " WHERE status = %s AND accepted_until <= %s)"
    )
    with connection.cursor() as cursor:
        now = connection.ops.adapt_datetimefield_value(timezone.now())  # as the ORM stores it
        cursor.execute(sql, [Finding.Status.ACCEPTED.value, now])
        return tuple(value or 0 for value in cursor.fetchone())
