"""When a pod held its devices, as the inventory recorded it (ATTR-001 counts). PURE.

The kubelet's device manager allocates a pod's devices when it admits the pod and frees them
when its containers end, so a pod holds its GPUs from its start to its finish, not over every
minute the samples cover. The pods of the latest snapshot are read against samples up to three
windows old: a pod that started late held nothing before, and one that finished held nothing
after. Where the kubelet recorded no time, the product cannot tell: the pod is taken to hold
its GPUs over the whole span (as before), never the other way round (a missed time must not
make a false finding)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from inventory import snapshot as snap

# (since, until, devices): held from `since` to `until` inclusive; None: not bounded that side.
Span = tuple[datetime | None, datetime | None, int]
# A finished GPU pod, until when it held its GPUs, and whether a sync saw it running first.
Ended = tuple[snap.Pod, datetime, bool]


def started(pod: snap.Pod) -> datetime | None:
    """When the pod began to hold its devices, None where not recorded."""
    return snap.recorded_time(pod.started_at)


def finished(pod: snap.Pod) -> datetime | None:
    """When a finished pod's devices were freed (its last container's end), None where not
    recorded."""
    return snap.recorded_time(pod.finished_at)


def untimed(running: list[snap.Pod], devices: Callable[[snap.Pod], int]) -> dict[str, int]:
    """node -> the devices its running pods with no recorded start hold: taken as held at
    every moment, since when they began is unknown."""
    found: dict[str, int] = {}
    for pod in running:
        if started(pod) is None:
            found[str(pod.node_name)] = found.get(str(pod.node_name), 0) + devices(pod)
    return found


def spans(
    running: list[snap.Pod], ended: list[Ended], devices: Callable[[snap.Pod], int]
) -> dict[str, list[Span]]:
    """node -> (since, until, devices) of the pods on it held only between two times: running
    pods from their recorded start; finished pods (`until`: when they finished) an earlier
    sync saw running, from their start where recorded; finished pods first seen so, only
    where both their start and finish are recorded (else, with no label naming them, they are
    not known to have run in the samples' time)."""
    found: dict[str, list[Span]] = {}
    for pod in running:
        if (since := started(pod)) is not None and (n := devices(pod)):
            found.setdefault(str(pod.node_name), []).append((since, None, n))
    for pod, until, seen_running in ended:
        since = started(pod)
        known = seen_running or (since is not None and finished(pod) is not None)
        if known and (n := devices(pod)):
            found.setdefault(str(pod.node_name), []).append((since, until, n))
    return found
