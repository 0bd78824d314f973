"""Who held a node's whole GPUs at each sync, and the handovers between tenants the counts make
certain (LEAK-001 without telemetry). PURE.

Pods are stored as last seen, so once a tenant's pod is gone nothing says it held a GPU. Each
sync keeps, per exclusive GPU node, one small record: the namespaces whose running pods hold its
GPUs through the device plugin (`nvidia.com/gpu` counts, or a VM's passthrough GPUs) and when
that holder set was first and last seen whole. On the next sync, a party B holding m GPUs
where another party A held k of the node's n physical GPUs with k + m > n surely received at
least k + m - n of A's GPUs (pigeonhole): a handover, bounded by the last sync that saw A on the
node and the sync that first saw B. Each pair of parties is judged on its own: where A and B
held 4 + 4 of 8 and C now holds 8, C surely received from both (two handovers); where A and B
held 4 + 2 and C holds 4, C may have A's GPUs, B's or the idle ones, so neither is certain and
nothing is recorded: sync history cannot tell, and a possible handover is not a certain one.
A party's GPUs are the sum over its namespaces (a tenant's two namespaces holding 4 + 4 hold 8).

Holders are namespaces, not tenants, so that a namespace changing hands in the registry is not
taken for its pods changing: the handover names each side's party as the sync saw it (a
tenant's slug, or `ns:<namespace>` for a namespace no tenant claims: the platform's or the
unclassified party's, which the read model decides as it does for pods)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from inventory.fractions import RESERVATION_NAMESPACES, hami_share
from inventory.snapshot import Node, Pod
from inventory.sources.node_kinds import vm_device_kind

WHOLE_GPU = "nvidia.com/gpu"
UNCLAIMED = "ns:"  # party prefix of a namespace no tenant claims


@dataclass(frozen=True)
class Held:
    """A node's last holder set seen whole: party -> GPUs, with the node's GPU count then."""

    holders: dict[str, int]  # namespace -> whole GPUs its running pods hold
    gpu_count: int
    first_seen: datetime
    last_seen: datetime
    # False while the latest sync saw only part of it (some holders gone, none new): the set
    # is kept as last seen whole, since a GPU left idle keeps its last tenant's memory.
    whole: bool = True
    # While not whole: namespace -> the last sync that saw it still hold GPUs here (later than
    # last_seen), so a reset between last_seen and then is not taken as after its use.
    seen: dict[str, datetime] = field(default_factory=dict)


@dataclass(frozen=True)
class HoldingHandover:
    """At least k + m - n GPUs of `node` surely passed from `previous` to `next` between two
    syncs."""

    node: str
    previous: str  # party (holders_step with owners; a namespace without)
    next: str
    previous_gpus: int  # k
    next_gpus: int  # m
    gpu_count: int  # n; k + m > n
    previous_end: datetime  # the last sync that saw `previous` hold GPUs of the node
    next_start: datetime  # the sync that first saw `next` hold m

    @property
    def passed(self) -> int:
        """GPUs that surely passed: `next` could take at most n - k GPUs that were not
        `previous`'s."""
        return self.previous_gpus + self.next_gpus - self.gpu_count


def party_of(namespace: str, owners: Mapping[str, str]) -> str:
    return owners.get(namespace) or f"{UNCLAIMED}{namespace}"


def exclusive_holders(
    nodes: Iterable[Node], pods: Iterable[Pod]
) -> dict[str, tuple[int, dict[str, int]]]:
    """node -> (physical GPUs, namespace -> whole GPUs its running pods hold there), for the GPU
    nodes whose GPUs are handed out whole: no sharing strategy, no replicated resource, a
    known GPU count, and no HAMi share or KAI fraction on them (their counts are not GPUs)."""
    found = {
        n.name: (n.gpu_count, {})
        for n in nodes
        if n.is_gpu_node and n.sharing_strategy == "none" and not n.resource_sharing and n.gpu_count
    }
    mixed: set[str] = set()
    held: dict[str, dict[str, int]] = {}
    for pod in pods:
        node = pod.node_name
        if node not in found or not pod.is_active:
            continue
        if hami_share(pod) or pod.gpu_fraction or pod.namespace in RESERVATION_NAMESPACES:
            mixed.add(node)
            continue
        # Only a running pod surely holds its devices (a pending one may not be admitted yet).
        count = whole_gpus(pod.gpu_resources) if pod.phase == "Running" else 0
        if count:
            by_namespace = held.setdefault(node, {})
            by_namespace[pod.namespace] = by_namespace.get(pod.namespace, 0) + count
    return {
        name: (int(gpus or 0), held.get(name, {}))
        for name, (gpus, _) in found.items()
        if name not in mixed
    }


def whole_gpus(resources: Mapping[str, int]) -> int:
    """The whole GPUs a pod holds: the device plugin's `nvidia.com/gpu`, and the GPUs the
    sandbox device plugin passes through whole to a KubeVirt VM (`nvidia.com/GA100_A100_...`,
    held by its virt-launcher pod), one each; never vGPUs, which share a GPU."""
    return sum(
        count
        for name, count in resources.items()
        if name == WHOLE_GPU or vm_device_kind(name) == "passthrough"
    )


def holders_step(
    node: str,
    before: Held | None,
    gpu_count: int,
    holders: Mapping[str, int],
    now: datetime,
    owners: Mapping[str, str] | None = None,
) -> tuple[Held | None, list[HoldingHandover]]:
    """The node's record after this sync, and the handovers it makes certain between parties
    (`owners`: namespace -> tenant slug now, party_of; None: each namespace its own party)."""
    current = {party: n for party, n in holders.items() if n > 0}
    fresh = Held(dict(current), gpu_count, now, now) if current else None
    if before is None or before.gpu_count != gpu_count:
        # A GPU count that changed (a GPU lost or added) breaks the count: start again.
        return fresh, []
    found: list[HoldingHandover] = []
    # Counts that exceed the node's GPUs are not exclusive holdings (a stale count label, pods
    # still terminating): nothing is certain from them.
    if sum(before.holders.values()) <= gpu_count and sum(current.values()) <= gpu_count:
        found = _certain(node, before, current, now, owners)
    if current == before.holders:
        return Held(before.holders, gpu_count, before.first_seen, now), found
    if all(n <= before.holders.get(party, 0) for party, n in current.items()):
        # Some holders gone and none new (an idle GPU among them): keep the set as last seen
        # whole, so the next tenant is compared with the one that left; those still here were
        # seen now.
        seen = {**before.seen, **dict.fromkeys(current, now)}
        kept = Held(before.holders, gpu_count, before.first_seen, before.last_seen, False, seen)
        return kept, found
    return fresh, found


def _certain(
    node: str,
    before: Held,
    current: Mapping[str, int],
    now: datetime,
    owners: Mapping[str, str] | None,
) -> list[HoldingHandover]:
    """Every pair of parties (previous, next) with k + m > n: each surely a handover of its own.
    A pair whose counts leave room is only possible (the next party's GPUs may be another's or
    idle) and is not returned, even where some handover among several is certain."""
    n = before.gpu_count

    def party(namespace: str) -> str:
        return namespace if owners is None else party_of(namespace, owners)

    held: dict[str, int] = {}
    last: dict[str, datetime] = {}
    for namespace, k in before.holders.items():
        p = party(namespace)
        held[p] = held.get(p, 0) + k
        # The party's latest sighting on the node: a reset before it is not after its use.
        seen = before.seen.get(namespace, before.last_seen)
        last[p] = max(last.get(p, seen), seen)
    holding: dict[str, int] = {}
    for namespace, m in current.items():
        holding[party(namespace)] = holding.get(party(namespace), 0) + m
    return [
        HoldingHandover(node, previous, next_, k, m, n, last[previous], now)
        for previous, k in sorted(held.items())
        for next_, m in sorted(holding.items())
        if previous != next_ and k + m > n
    ]
