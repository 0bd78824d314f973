"""Handovers of an exclusive GPU between tenants with no reset recorded between them (LEAK-001).
PURE.

A whole GPU used exclusively isolates tenants in space but not in time: memory left by one
workload can be read by the next unless the GPU is reset between them (DESIGN: residue unless
reset). So each change of tenant on a GPU needs a reset attestation in the gap between the two."""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from telemetry.attribution import Attributed


@dataclass(frozen=True)
class Tenancy:
    device: str  # the GPU's UUID (a MIG instance's parent GPU, as DCGM-Exporter reports it)
    node: str
    tenant: str
    start: datetime  # first sample
    end: datetime  # last sample
    gpu_instance: str = ""  # the MIG GPU instance id (GPU_I_ID), "" for a whole GPU


@dataclass(frozen=True)
class Attestation:
    node: str
    uuid: str  # "" when the whole node was reset (e.g. a reboot)
    time: datetime


@dataclass(frozen=True)
class Handover:
    device: str
    node: str
    previous_tenant: str
    next_tenant: str
    previous_end: datetime
    next_start: datetime  # before previous_end when the two tenancies overlap
    gpu_instance: str = ""  # the MIG GPU instance passed on, "" for a whole GPU


def tenancies_from(
    attributed: Iterable[Attributed], *, max_gap: timedelta = timedelta(minutes=5)
) -> list[Tenancy]:
    """Who held each whole GPU or MIG GPU instance when, from exact-confidence tenant samples.

    A tenant's tenancy ends at a gap longer than max_gap, or when a sample of the device shows
    other tenants without it. Two tenants at one time both go on (an overlap, reported later).
    Platform and unattributed samples neither start nor end a tenancy. Sorted by device, start."""
    timeline: dict[tuple[str, str], dict[datetime, set[str]]] = defaultdict(
        lambda: defaultdict(set)
    )
    nodes: dict[tuple[str, str], str] = {}
    for a in attributed:
        s = a.sample
        # Shared GPUs are not exclusive; a GPU without UUID cannot be matched to a reset
        # attestation, which names the UUID. A MIG GPU instance is its own exclusive device:
        # its memory slices pass from one tenant to the next as a whole GPU's do (NVIDIA's MIG
        # guide isolates instances that exist side by side; it promises no clearing between
        # one user of an instance and the next).
        if a.attribution != "tenant" or a.confidence != "exact" or not s.uuid:
            continue
        key = (s.uuid, s.gi_id)
        timeline[key][s.time].add(a.tenant or "")
        nodes[key] = s.hostname
    found: list[Tenancy] = []
    for (device, instance), by_time in sorted(timeline.items()):
        found.extend(_tenancies(device, nodes[device, instance], by_time, max_gap, instance))
    return sorted(found, key=lambda t: (t.device, t.gpu_instance, t.start, t.end, t.tenant))


def _tenancies(
    device: str,
    node: str,
    by_time: dict[datetime, set[str]],
    max_gap: timedelta,
    instance: str = "",
) -> list[Tenancy]:
    open_: dict[str, tuple[datetime, datetime]] = {}  # tenant -> (first, last) sample time
    done: list[Tenancy] = []
    for t in sorted(by_time):
        present = by_time[t]
        for tenant in sorted(open_):
            first, last = open_[tenant]
            if tenant not in present or t - last > max_gap:
                done.append(Tenancy(device, node, tenant, first, last, instance))
                del open_[tenant]
        for tenant in present:
            first = open_[tenant][0] if tenant in open_ else t
            open_[tenant] = (first, t)
    done.extend(
        Tenancy(device, node, tenant, f, last, instance) for tenant, (f, last) in open_.items()
    )
    return done


def unattested_handovers(
    tenancies: Iterable[Tenancy], attestations: Iterable[Attestation]
) -> list[Handover]:
    """Consecutive tenancies of different tenants on a device (a whole GPU, or one MIG GPU
    instance) with no reset of that GPU (by UUID: a MIG instance's parent, since a GPU reset
    needs every instance destroyed and clears them all) or of its whole node between the
    previous one's end and the next one's start.

    Sorted by device, instance, then next_start."""
    by_uuid: dict[str, list[datetime]] = defaultdict(list)
    by_node: dict[str, list[datetime]] = defaultdict(list)
    for a in attestations:
        # A UUID as typed may differ from the exporter's in case or spaces, never in meaning.
        uuid = _uuid_key(a.uuid)
        (by_uuid[uuid] if uuid else by_node[a.node]).append(a.time)
    for times in (*by_uuid.values(), *by_node.values()):
        times.sort()
    per_device: dict[tuple[str, str], list[Tenancy]] = defaultdict(list)
    for t in tenancies:
        per_device[t.device, t.gpu_instance].append(t)
    found = []
    for (device, instance), ts in sorted(per_device.items()):
        ts.sort(key=lambda t: (t.start, t.end, t.tenant))
        for prev, nxt in zip(ts, ts[1:], strict=False):
            if prev.tenant == nxt.tenant:
                continue  # one tenant reusing its own GPU leaks nothing to anyone else
            # Overlapping tenancies of different tenants on an exclusive GPU mean something is
            # wrong (a pod outside the scheduler, a stale exclusive flag): report them as a
            # handover too. No attestation can fall in the empty interval, so it always shows.
            if reset_between(by_uuid[_uuid_key(device)], prev.end, nxt.start) or reset_between(
                by_node[nxt.node], prev.end, nxt.start
            ):
                continue
            found.append(
                Handover(device, nxt.node, prev.tenant, nxt.tenant, prev.end, nxt.start, instance)
            )
    return found


def _uuid_key(uuid: str) -> str:
    return uuid.strip().lower()


# The reset form's datetime-local input records a time to the minute: a reset at "10:00" was
# some time in [10:00, 10:01).
MINUTE = timedelta(minutes=1)


def _latest(time: datetime) -> datetime:
    """The latest moment a recorded reset time may stand for: the end of its minute when it is
    given to the minute (no seconds), else itself."""
    if time.second == 0 and time.microsecond == 0:
        return time + MINUTE - timedelta(microseconds=1)
    return time


def reset_between(times: list[datetime], start: datetime, end: datetime) -> bool:
    """Whether a sorted list of reset times has one that may fall in [start, end], both ends
    included (a time to the minute stands for its whole minute)."""
    i = bisect_left(times, start - MINUTE)
    while i < len(times) and times[i] <= end:
        if _latest(times[i]) >= start:
            return True
        i += 1
    return False
