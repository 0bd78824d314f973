"""Which nodes a watch re-sync re-derives for the DRA objects it saw change (inventory.sync_delta).

A node's DRA facts (its sharing under claims, inventory.sources.dra_sharing; its DRA kubelet
plugin seen through its ResourceSlices) are read from the stored claims and slices when the
node is derived. A claim that is allocated, moves or is released, and a slice that comes, goes
or changes its devices, move those facts on the nodes they name, before and after: without a
re-derive those nodes kept their old sharing until the next full list. A DeviceClass that comes,
goes or changes (its config: TimeSlicing or MPS for every claim of it that sets none) moves the
nodes of the allocated claims whose devices were requested from it. An object stored as it now
is (a status update that moved nothing kept) names nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from inventory import snapshot as snap
from inventory.dra_devices import NVIDIA_DRIVER, request_class
from inventory.models import ClusterObject, Node
from inventory.snapshot_dra import DraClaim, DraDeviceClass, DraSlice
from inventory.sources.base import WatchDelta


def dra_nodes(
    cluster: Any, delta: WatchDelta, changed: snap.ClusterSnapshot, deleted: snap.ClusterSnapshot
) -> set[str]:
    """The nodes whose DRA facts the delta's claims, slices and classes may move: those an
    added, changed or deleted claim's allocation names (stored and new), those a changed or
    deleted slice publishes for (stored and new), and those of the stored allocated claims
    whose devices were requested from an added, changed or deleted DeviceClass. Only nodes the
    inventory holds or the delta brings: a pool that names no node (a network-attached
    device's) re-reads nothing."""
    claims = [*changed.dra_claims, *deleted.dra_claims]
    slices = [*changed.dra_slices, *deleted.dra_slices]
    of_classes = _claims_of(cluster, _moved_classes(cluster, changed, deleted))
    if not claims and not slices and not of_classes:
        return set()
    stored_claims = _stored(cluster, "dra_claim", DraClaim, ((c.namespace, c.name) for c in claims))
    stored_slices = _stored(cluster, "dra_slice", DraSlice, (("", s.name) for s in slices))
    gone_slices = {s.name for s in deleted.dra_slices}
    gone_claims = {(c.namespace, c.name) for c in deleted.dra_claims}
    names: set[str] = set()
    for slice_ in slices:
        old = stored_slices.get(("", slice_.name))
        if slice_.name in gone_slices or _moved(old, slice_):
            names.update(s.node_name for s in (slice_, old) if s is not None and s.node_name)
    stored_claims |= {(c.namespace, c.name): c for c in of_classes}
    pools = _pool_nodes(cluster, [*slices, *stored_slices.values()], claims, stored_claims)
    for claim in of_classes:
        names |= claim_nodes(claim, pools)
    for claim in claims:
        old = stored_claims.get((claim.namespace, claim.name))
        if (claim.namespace, claim.name) in gone_claims or _moved(old, claim):
            names |= claim_nodes(claim, pools) | (claim_nodes(old, pools) if old else set())
    return _known(cluster, delta, names)


def claim_nodes(claim: DraClaim, pools: dict[tuple[str, str], set[str]]) -> set[str]:
    """The nodes a claim's allocation names: its node selector's, the nodes of the slices of
    each allocated device's pool, and for NVIDIA's driver the pool itself (its kubelet plugin
    names each node's pool after the node)."""
    names = {claim.node_name} if claim.node_name else set()
    for result in claim.results:
        names |= pools.get((result.driver, result.pool), set())
        if result.driver == NVIDIA_DRIVER and result.pool:
            names.add(result.pool)
    return names


def _moved_classes(
    cluster: Any, changed: snap.ClusterSnapshot, deleted: snap.ClusterSnapshot
) -> set[str]:
    """The DeviceClasses the delta adds, deletes or changes from what is stored."""
    classes = [*changed.dra_device_classes, *deleted.dra_device_classes]
    if not classes:
        return set()
    stored = _stored(cluster, "dra_device_class", DraDeviceClass, (("", c.name) for c in classes))
    gone = {c.name for c in deleted.dra_device_classes}
    return {c.name for c in classes if c.name in gone or _moved(stored.get(("", c.name)), c)}


def _claims_of(cluster: Any, classes: set[str]) -> list[DraClaim]:
    """The stored allocated claims with a device requested from one of these classes (its
    request's class, or the firstAvailable alternative the scheduler chose): a class's config
    applies to the devices allocated from it (inventory.dra_devices.sharing_config)."""
    if not classes:
        return []
    rows = ClusterObject.objects.filter(cluster=cluster, kind="dra_claim").values_list(
        "data", flat=True
    )
    claims = (snap.from_dict(DraClaim, d) for d in rows.iterator(chunk_size=2000))
    return [c for c in claims if any(request_class(c, r.request) in classes for r in c.results)]


def _moved(old: Any, new: Any) -> bool:
    """Whether a changed object is not as stored (canonical JSON, what sync hashes). A deleted
    one's last state may equal the stored one: the caller counts it as moved whatever."""
    return old is None or snap.to_json(old) != snap.to_json(new)


def _stored(cluster: Any, kind: str, cls: type, keys: Iterable[tuple[str, str]]) -> dict:
    wanted = set(keys)
    rows = ClusterObject.objects.filter(
        cluster=cluster, kind=kind, name__in={name for _, name in wanted}
    ).values_list("namespace", "name", "data")
    return {(ns, n): snap.from_dict(cls, data) for ns, n, data in rows if (ns, n) in wanted}


def _pool_nodes(
    cluster: Any,
    slices: list[DraSlice],
    claims: list[DraClaim],
    stored_claims: dict[tuple[str, str], DraClaim],
) -> dict[tuple[str, str], set[str]]:
    """(driver, pool) -> the nodes its slices publish for, of the pools the claims name: the
    stored slices of those pools and the delta's own."""
    wanted = {
        (r.driver, r.pool) for c in [*claims, *stored_claims.values()] for r in c.results if r.pool
    }
    found: dict[tuple[str, str], set[str]] = {}
    if not wanted:
        return found
    rows = ClusterObject.objects.filter(
        cluster=cluster, kind="dra_slice", data__pool__in=sorted({p for _, p in wanted})
    ).values_list("data", flat=True)
    for slice_ in [*(snap.from_dict(DraSlice, d) for d in rows), *slices]:
        if (slice_.driver, slice_.pool) in wanted and slice_.node_name:
            found.setdefault((slice_.driver, slice_.pool), set()).add(slice_.node_name)
    return found


def _known(cluster: Any, delta: WatchDelta, names: set[str]) -> set[str]:
    if not names:
        return names
    arriving = {
        str((o.get("metadata") or {}).get("name")) for o in delta.changed if o.get("kind") == "Node"
    }
    stored = set(
        Node.objects.filter(cluster=cluster, name__in=sorted(names)).values_list("name", flat=True)
    )
    return names & (stored | arriving)
