"""What the audit log keeps of a cluster: how it is reached and synced, never the sync lease
or watch bookkeeping that every sync rewrites."""

from __future__ import annotations

from typing import Any

from audit.services import model_to_audit_dict
from inventory.models import Cluster

BOOKKEEPING = ("sync_lock_until", "sync_lock_token", "watch_state", "last_full_sync_at")


def cluster_state(cluster: Cluster) -> dict[str, Any]:
    state = model_to_audit_dict(cluster, exclude=(*BOOKKEEPING, "created_at"))
    state["provider"] = cluster.provider.slug if cluster.provider_id else None
    return state


def stored_cluster_state(cluster: Cluster) -> dict[str, Any] | None:
    """The state as stored now (before an edit made in memory is saved), None if new."""
    if cluster.pk is None:
        return None
    stored = Cluster.objects.select_related("provider").filter(pk=cluster.pk).first()
    return cluster_state(stored) if stored is not None else None
