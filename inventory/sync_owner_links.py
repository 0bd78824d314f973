"""Owner links a sync keeps from the last one: those of owners its export names but does not
hold (DESIGN §5: a workload finding's subject is the top of the owner chain).

An export that reads less of an owner chain than the last one (`kubectl get deploy,rs,pods`
after a full export, or a live account that may no longer list serving.knative.dev) still names
each missing owner in its objects' controller ownerReferences. A controller reference to an
object that is gone does not last: the garbage collector deletes the dependents of a deleted
owner, and an orphaning delete removes the reference. So a named owner missing from the export
is one the export did not read, and the link the last sync stored for it (its own owner) still
holds. Kept, the chain resolves to the same top as before: the same finding, its first-seen
and its acceptance, where it would otherwise narrow to the Revision and open anew. The run
says which were kept.
"""

from __future__ import annotations

from collections.abc import Iterable

from inventory import snapshot as snap
from inventory.models import Cluster, ClusterObject
from inventory.owners import MAX_DEPTH
from inventory.sources.object_refs import object_ref

# Owners that are no owner link's object: a static pod's Node, a Spark executor's driver pod
# (a pod of the export or not, read as pods are).
NOT_LINKED = frozenset(("Node", "Pod"))
SHOWN = 3  # kept links named in the run's warning

Key = tuple[str, str, str]  # (namespace, kind, name)


def owner_links_kept(
    cluster: Cluster, snapshot: snap.ClusterSnapshot
) -> tuple[tuple[snap.OwnerLink, ...], list[str]]:
    """The stored links of the owners the snapshot names but holds no link of (and of their
    owners, up the chain), and the run's warning naming them; nothing read when none is
    missing (one query per level otherwise, by name)."""
    present: set[Key] = {(o.namespace, o.kind, o.name) for o in snapshot.owners}
    named = [(p.namespace, p.owner_kind, p.owner_name) for p in snapshot.pods]
    named += [(o.namespace, o.owner_kind, o.owner_name) for o in snapshot.owners]
    missing = _missing(named, present)
    kept: list[snap.OwnerLink] = []
    for _ in range(MAX_DEPTH):
        if not missing:
            break
        found = _stored(cluster, missing)
        kept += found
        present |= {(o.namespace, o.kind, o.name) for o in found}
        missing = _missing(((o.namespace, o.owner_kind, o.owner_name) for o in found), present)
    if not kept:
        return (), []
    shown = ", ".join(_named(o) for o in kept[:SHOWN])
    if len(kept) > SHOWN:
        shown += f" and {len(kept) - SHOWN} more"
    return tuple(kept), [
        f"{len(kept)} owner(s) this export's objects name were not in it ({shown}): their "
        f"owner links are kept from the last sync, so findings keep their workload; export "
        f"their kinds too (or grant list on them) to read them anew"
    ]


def _missing(named: Iterable[tuple[str, str | None, str | None]], present: set[Key]) -> set[Key]:
    """The named owners with no link, in their namespace or cluster-scoped."""
    return {
        (namespace, kind, name)
        for namespace, kind, name in named
        if kind and name and kind not in NOT_LINKED
        if (namespace, kind, name) not in present and ("", kind, name) not in present
    }


def _stored(cluster: Cluster, wanted: set[Key]) -> list[snap.OwnerLink]:
    """The stored links of `wanted` (in its namespace, or cluster-scoped), by name."""
    names = sorted({f"{kind}/{name}" for _, kind, name in wanted})
    rows = ClusterObject.objects.filter(
        cluster=cluster,
        kind=ClusterObject.Kind.OWNER,
        namespace__in=sorted({namespace for namespace, _, _ in wanted} | {""}),
        name__in=names,
    ).values_list("data", flat=True)
    by_name = {(kind, name) for _, kind, name in wanted}
    found = (snap.from_dict(snap.OwnerLink, data) for data in rows)
    return [
        o
        for o in found
        if (o.namespace, o.kind, o.name) in wanted
        or (o.namespace == "" and (o.kind, o.name) in by_name)
    ]


def _named(link: snap.OwnerLink) -> str:
    return object_ref(link.kind, link.namespace or None, link.name)  # a viewer reads the run
