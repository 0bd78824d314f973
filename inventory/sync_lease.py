"""The cluster's sync lease: one sync of a cluster at a time, across workers and redeliveries.

A conditional UPDATE takes it with a fresh token (STYLE rule 4), progress renews it, and a
worker that dies loses it within one lease period (GPUPOSTURE_SYNC_LEASE_SECONDS).
inventory.services holds it around every sync; the sync task reads what is left of it to
retry after it.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from inventory.models import Cluster


def cluster_lock_acquire(*, cluster: Cluster) -> str | None:
    """Take the cluster's sync lease with one conditional UPDATE (STYLE rule 4): two workers
    or a redelivered task can never sync one cluster at once. Returns the lease token."""
    now = timezone.now()
    token = uuid.uuid4().hex
    lease = timedelta(seconds=settings.GPUPOSTURE_SYNC_LEASE_SECONDS)
    taken = Cluster.objects.filter(
        Q(sync_lock_until__isnull=True) | Q(sync_lock_until__lt=now), pk=cluster.pk
    ).update(sync_lock_until=now + lease, sync_lock_token=token)
    return token if taken == 1 else None


def cluster_lock_release(*, cluster: Cluster, token: str) -> None:
    Cluster.objects.filter(pk=cluster.pk, sync_lock_token=token).update(
        sync_lock_until=None, sync_lock_token=""
    )


def cluster_lock_renew(*, cluster: Cluster, token: str) -> bool:
    """Extend our lease while we make progress, so a long sync keeps it and a dead one loses
    it within one lease period. False when it is no longer ours: our lease ran out while we
    waited (a slow server, a long Retry-After) and another sync took it."""
    lease = timedelta(seconds=settings.GPUPOSTURE_SYNC_LEASE_SECONDS)
    renewed = Cluster.objects.filter(pk=cluster.pk, sync_lock_token=token).update(
        sync_lock_until=timezone.now() + lease
    )
    return renewed == 1


def lease_remaining_seconds(*, cluster: Cluster) -> float:
    until = Cluster.objects.filter(pk=cluster.pk).values_list("sync_lock_until", flat=True).first()
    return max(0.0, (until - timezone.now()).total_seconds()) if until else 0.0
