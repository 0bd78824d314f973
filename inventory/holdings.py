"""Who held a node's exclusive GPU devices at each sync, and the handovers between tenants the
counts make certain (LEAK-001 without telemetry). PURE.

Pods are stored as last seen, so once a tenant's pod is gone nothing says it held a GPU. Each
sync keeps, per set of a node's devices that pods hold whole, one tenant each
(inventory.holding_sets: the node's whole GPUs, its GPU instances of one MIG profile, one DRA
device), one small record: the namespaces whose running pods hold them and how many, and when
that holder set was first and last seen whole. On the next sync, a party B holding m devices
of a set of n where another party A held k with k + m > n surely received at least k + m - n of
A's devices (pigeonhole): a handover, bounded by the last sync that saw A on them and the sync
that first saw B. Each pair of parties is judged on its own: where A and B held 4 + 4 of 8 and
C now holds 8, C surely received from both (two handovers); where A and B held 4 + 2 and C holds
4, C may have A's GPUs, B's or the idle ones, so neither is certain and nothing is recorded:
sync history cannot tell, and a possible handover is not a certain one. A party's devices are
the sum over its namespaces (a tenant's two namespaces holding 4 + 4 hold 8). A DRA device is a
set of one: the claim's allocation names it, so the next tenant on it surely got it.

The platform is no party: its pods holding a set's devices (a burn-in or validation job on GPUs
a tenant left) leave the set as the last tenant left it, since they reset nothing (DESIGN §2: a
recorded reset is the evidence of a wipe); the next tenant is compared with that last tenant,
and the handover names the platform's holdings seen in between. Which namespaces are the
platform's is decided at the sync (the namespaces it names as the platform's and nobody claims).

A record is of one machine: a node name a cloud autoscaler or Karpenter gives a new VM is another
Node object (another metadata.uid), whose devices never held the record's holders, so the
record is no predecessor of what the new machine's pods hold (no handover; the count starts
again). A record stored before the uid was kept is of another machine where the Node was created
after its every sighting; where neither tells, the name stands for one machine, as it did, and
the handover says the machines were not compared.

Holders are namespaces, not tenants, so that a namespace changing hands in the registry is not
taken for its pods changing: the handover names each side's party as the sync saw it (a
tenant's slug, or `ns:<namespace>` for a namespace no tenant claims: the unclassified party's,
or the platform's where it became the platform's after the sync, which the read model decides as
it does for pods)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

UNCLAIMED = "ns:"  # party prefix of a namespace no tenant claims
WHOLE = ""  # Devices.name of a node's whole GPUs
MIG_PREFIX = "nvidia.com/"  # Devices.name of GPU instances of one MIG profile: its resource
GPU_PREFIX = "GPU-"  # a GPU's UUID


@dataclass(frozen=True)
class Devices:
    """Which devices of a node a holder record counts, and which resets clear them."""

    # WHOLE: the node's whole GPUs; a MIG resource ("nvidia.com/mig-7g.80gb", or
    # "nvidia.com/gpu" under the single strategy): the node's GPU instances of that profile;
    # a DRA device's id (its GPU or MIG UUID, else "dra:<driver>/<pool>/<device>").
    name: str = WHOLE
    # The one GPU whose reset clears them (a DRA GPU, a DRA MIG device's parent); "" where
    # which of the node's GPUs they are on is not known.
    gpu_uuid: str = ""
    # At most this many of them sit on one GPU, so one GPU reset may clear that many (1 for
    # whole GPUs; MIG instances of a profile: as many as fit on a GPU).
    per_gpu: int = 1

    def attested(self, reset: set[str], passed: int) -> bool:
        """Whether resets of these GPU UUIDs ("" for the node's every GPU) may have cleared
        the `passed` devices that surely passed: a reset of the node; of the one GPU they are
        on; else of as many GPUs as could hold them (fewer leave one surely unreset)."""
        if "" in reset:
            return True
        if self.gpu_uuid:
            return self.gpu_uuid in reset
        return len(reset) * max(1, self.per_gpu) >= passed


@dataclass(frozen=True)
class NodeIdentity:
    """Which machine a node name stood for at a sync: its Node object's metadata.uid and
    creationTimestamp (either unknown: "" / None). Cloud autoscalers and Karpenter give a new
    VM an old name; only the uid tells the two apart."""

    uid: str = ""
    created: datetime | None = None


# HoldingHandover.node_identity: how sync history knows both holdings were on one machine.
SAME_UID = "same_uid"
NOT_COMPARED = "not_compared"


@dataclass(frozen=True)
class Held:
    """A set of a node's devices' last holders seen whole: namespace -> devices, with how many
    devices the set had then (the node's GPUs, MIG instances of a profile, or 1)."""

    holders: dict[str, int]  # namespace -> devices of the set its running pods hold
    gpu_count: int  # n
    first_seen: datetime
    last_seen: datetime
    # False while the latest sync saw only part of it (some holders gone, none new): the set
    # is kept as last seen whole, since a GPU left idle keeps its last tenant's memory.
    whole: bool = True
    # While not whole: namespace -> the last sync that saw it still hold GPUs here (later than
    # last_seen), so a reset between last_seen and then is not taken as after its use.
    seen: dict[str, datetime] = field(default_factory=dict)
    # The platform's holdings seen on the set since its holders were last seen whole
    # ("<namespace>/<workload>"): not a reset, named by the handover that follows.
    between: tuple[str, ...] = ()
    # The Node's metadata.uid the holdings were seen on ("" where not known: a record stored
    # before the uid was kept, a node whose uid the snapshot lacks).
    node_uid: str = ""


@dataclass(frozen=True)
class HoldingHandover:
    """At least k + m - n of a set of `node`'s devices (GPUs unless `devices` says otherwise)
    surely passed from `previous` to `next` between two syncs."""

    node: str
    previous: str  # party (holders_step with owners; a namespace without)
    next: str
    previous_gpus: int  # k
    next_gpus: int  # m
    gpu_count: int  # n; k + m > n
    previous_end: datetime  # the last sync that saw `previous` hold GPUs of the node
    next_start: datetime  # the sync that first saw `next` hold m
    devices: Devices = Devices()  # which of the node's devices the counts are of
    # The platform's holdings of the set between the two ("<namespace>/<workload>"): the
    # handover stands, since none of them is a reset.
    between: tuple[str, ...] = ()
    # SAME_UID: both syncs saw the node with one metadata.uid; NOT_COMPARED: a uid not known
    # at both and the node's creationTimestamp not showing a new machine, so the name is taken
    # for one machine, as before uids were kept ("" on rows recorded before: not compared).
    node_identity: str = NOT_COMPARED

    @property
    def passed(self) -> int:
        """GPUs that surely passed: `next` could take at most n - k GPUs that were not
        `previous`'s."""
        return self.previous_gpus + self.next_gpus - self.gpu_count


def party_of(namespace: str, owners: Mapping[str, str]) -> str:
    return owners.get(namespace) or f"{UNCLAIMED}{namespace}"


def holders_step(
    node: str,
    before: Held | None,
    gpu_count: int,
    holders: Mapping[str, int],
    now: datetime,
    owners: Mapping[str, str] | None = None,
    devices: Devices = Devices(),
    platform: frozenset[str] = frozenset(),
    workloads: Mapping[str, Iterable[str]] | None = None,
    identity: NodeIdentity | None = None,
) -> tuple[Held | None, list[HoldingHandover]]:
    """The record of the node's `devices` after this sync, and the handovers it makes certain
    between parties (`owners`: namespace -> tenant slug now, party_of; None: each namespace its
    own party). `platform`: the platform's namespaces at this sync, whose holdings are no
    party's (the module docstring); `workloads`: namespace -> the workloads of its pods that
    hold the set, to name the platform's; `identity`: the Node object seen now (None: unknown).
    A record of another machine under the node's name is no predecessor (same_machine)."""
    identity = identity or NodeIdentity()
    same = same_machine(before, identity) if before is not None else None
    if same is False:
        before = None  # another machine: its devices never held the record's holders
    after, found = _step(
        node, before, gpu_count, holders, now, owners, devices, platform, workloads
    )
    if same:
        found = [replace(h, node_identity=SAME_UID) for h in found]
    # The record is of the machine seen now (a uid not read now keeps the one stored).
    uid = identity.uid or (before.node_uid if before is not None else "")
    if after is not None and uid:
        after = replace(after, node_uid=uid)
    return after, found


def same_machine(before: Held, now: NodeIdentity) -> bool | None:
    """Whether the record was seen on the machine the node's name stands for now: by the Node's
    uid where both are known; else False where the Node was created after every sighting the
    record holds (a record stored before uids were kept); None where neither tells (the name is
    then taken for one machine, as it was before, and the handover says it was not compared)."""
    if before.node_uid and now.uid:
        return before.node_uid == now.uid
    last = max([before.last_seen, *before.seen.values()])
    if now.created is not None and now.created > last:
        return False
    return None


def _step(
    node: str,
    before: Held | None,
    gpu_count: int,
    holders: Mapping[str, int],
    now: datetime,
    owners: Mapping[str, str] | None,
    devices: Devices,
    platform: frozenset[str],
    workloads: Mapping[str, Iterable[str]] | None,
) -> tuple[Held | None, list[HoldingHandover]]:
    current = {ns: n for ns, n in holders.items() if n > 0 and ns not in platform}
    by_platform = _named(
        sorted(ns for ns, n in holders.items() if n > 0 and ns in platform), workloads or {}
    )
    if before is not None and platform.intersection(before.holders):
        # A record written before the platform's holdings were left out: only its tenants.
        kept_holders = {ns: n for ns, n in before.holders.items() if ns not in platform}
        before = replace(before, holders=kept_holders) if kept_holders else None
    fresh = Held(dict(current), gpu_count, now, now) if current else None
    if before is None or before.gpu_count != gpu_count:
        # A GPU count that changed (a GPU lost or added) breaks the count: start again.
        return fresh, []
    found: list[HoldingHandover] = []
    # Counts that exceed the node's GPUs are not exclusive holdings (a stale count label, pods
    # still terminating): nothing is certain from them.
    if sum(before.holders.values()) <= gpu_count and sum(current.values()) <= gpu_count:
        found = _certain(node, before, current, now, owners, devices)
    if current == before.holders:
        return Held(before.holders, gpu_count, before.first_seen, now), found
    if all(n <= before.holders.get(party, 0) for party, n in current.items()):
        # Some holders gone and none new (an idle GPU among them, or one the platform holds,
        # which resets nothing): keep the set as last seen whole, so the next tenant is
        # compared with the one that left; those still here were seen now.
        seen = {**before.seen, **dict.fromkeys(current, now)}
        between = tuple(sorted({*before.between, *by_platform}))
        kept = Held(
            before.holders, gpu_count, before.first_seen, before.last_seen, False, seen, between
        )
        return kept, found
    return fresh, found


def _named(namespaces: Iterable[str], workloads: Mapping[str, Iterable[str]]) -> tuple[str, ...]:
    """Each namespace's workloads as "<namespace>/<workload>", the namespace alone where none
    is known."""
    return tuple(
        shown
        for ns in namespaces
        for shown in [f"{ns}/{name}" for name in sorted(workloads.get(ns, ()))] or [ns]
    )


def _certain(
    node: str,
    before: Held,
    current: Mapping[str, int],
    now: datetime,
    owners: Mapping[str, str] | None,
    devices: Devices,
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
        HoldingHandover(
            node, previous, next_, k, m, n, last[previous], now, devices, before.between
        )
        for previous, k in sorted(held.items())
        for next_, m in sorted(holding.items())
        if previous != next_ and k + m > n
    ]
