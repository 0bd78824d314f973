"""Drift events as a reader may read them (the cluster page and /api/v1/drift-events/): only
those of the nodes in their scope (DriftEvent.objects.visible_to), each naming only the nodes
they may see, and never reading as "no field differs" where what changed is a name hidden
from them (a taint naming one other tenant, then another: both sides read the same token)."""

from __future__ import annotations

from typing import Any

from gpuposture.base.changes import changed_paths
from gpuposture.base.querysets import sees_every_row
from inventory.drift_models import DriftEvent
from inventory.models import Cluster, Node
from inventory.presenter import present
from tenants.redaction import HiddenScope


def nodes_in_scope(user) -> dict[int, frozenset[str]] | None:
    """Per cluster id, the names of the nodes `user` may see (Node's scope); None for those
    who see every node. One query."""
    if sees_every_row(user, Node):
        return None
    found: dict[int, set[str]] = {}
    for cluster_id, name in (
        Node.objects.visible_to(user).order_by().values_list("cluster_id", "name")
    ):
        found.setdefault(cluster_id, set()).add(name)
    return {cluster_id: frozenset(names) for cluster_id, names in found.items()}


def shown_nodes(
    nodes: list[str], cluster_id: int, scope: dict[int, frozenset[str]] | None
) -> list[str]:
    """The event's nodes a reader may see (all of them for who sees every node)."""
    if scope is None:
        return list(nodes)
    mine = scope.get(cluster_id, frozenset())
    return [n for n in nodes if n in mine]


def hidden_changes(scope: HiddenScope | None, before: Any, after: Any) -> int:
    """How many of the paths that differ between `before` and `after` read the same once
    `scope` hides its names (or vanish with a hidden key): changes the reader is told of,
    not shown, rather than "no field differs". 0 for who reads every name."""
    if scope is None:
        return 0
    stored = len(changed_paths(before, after))
    return max(0, stored - len(changed_paths(scope.value(before), scope.value(after))))


def cluster_drift_events(
    user, cluster: Cluster, scope: HiddenScope | None, limit: int = 50
) -> list[DriftEvent]:
    """The cluster's latest drift events `user` may see, presented for them, each with
    `hidden_changes`, and `nodes` cut to the nodes they may see. Shown, never saved."""
    events = list(
        DriftEvent.objects.visible_to(user)
        .filter(cluster=cluster)
        .order_by("-detected_at", "-id")[:limit]
    )
    visible = nodes_in_scope(user) if events else None
    in_cluster = scope.in_cluster(cluster.pk) if scope is not None else None
    for event in events:
        event.hidden_changes = hidden_changes(in_cluster, event.before, event.after)
        present(scope, event)
        event.nodes = shown_nodes(event.nodes, cluster.pk, visible)
    return events
