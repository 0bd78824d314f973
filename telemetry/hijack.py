"""Compute hijacking and blind spots in GPU telemetry (ATTR-001, ATTR-003). PURE.

ATTR-001: a GPU busy above a threshold for longer than a window while no scheduled pod holds it
is the signal of ATT&CK T1496.001 (resource hijacking): something runs outside the scheduler.
A pod holding the GPU through NVIDIA_VISIBLE_DEVICES on a node that honours it explains its use
(env_holders): its workload is there, and POD-011 reports how it got there.
Samples further apart than max_gap do not show the GPU stayed busy between them: a run ends
there. Where every sample over a span longer than the window was busy and unheld but some lie
further apart (a sparse scrape, ingests minutes apart), the span is still reported, marked not
`continuous`: all the product saw is the signature, only its continuity was not observed.
ATTR-003: a GPU node that sends no samples hides exactly that, so silence is a finding too."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from itertools import pairwise

from telemetry.samples import GpuSample

MAX_EVIDENCE = 20  # points kept per finding: enough to draw the run, small enough to store
MAX_GAP = timedelta(minutes=5)  # samples further apart do not show the GPU stayed busy

Device = tuple[str, str, str]  # GpuSample.device: (hostname, uuid or index, gi_id)


@dataclass(frozen=True)
class Hijack:
    device: Device
    hostname: str
    uuid: str  # the device's UUID, or its index on the node when the exporter gave no UUID
    gi_id: str
    start: datetime
    end: datetime
    mean_busy: float  # mean over the run's timestamps (the exporter samples at a steady rate)
    peak_busy: float
    evidence: tuple[tuple[datetime, float], ...]  # (time, busy), at most MAX_EVIDENCE
    held_note: str = ""  # why no pod is taken to hold it, where the plain rule does not say
    # judged by count: more of its node's GPUs were busy than its scheduled pods can occupy
    # (its exporter names no pod, or its GPUs are shared), so not this one is known unheld
    judged_by_count: bool = False
    # False: every sample from start to end was busy and unheld, but some lie further apart
    # than max_gap, so that the GPU stayed busy between them was not observed.
    continuous: bool = True
    sample_count: int = 0  # the run's points (one per time), all of them, not only evidence
    largest_gap: timedelta = timedelta(0)  # between two consecutive points of the run
    # ("namespace/pod", node) its samples named, each a pod the inventory binds to another
    # node: a stale, mislabelled or forged label, which holds nothing here (exporter_labels)
    labelled_elsewhere: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class SilentNode:
    node: str
    last_sample: datetime | None  # None: never sampled
    # `vm-passthrough` / `vm-vgpu` when the GPU Operator gives the node's GPUs to VMs: no
    # DCGM-Exporter runs on such a host (vfio-pci or the vGPU Manager holds the GPUs), so its
    # silence is by design, not an exporter to fix. "" for a container node.
    vm_workload: str = ""


@dataclass(frozen=True)
class UnmappedNode:
    """A GPU node whose exporter names no pod on any sample while scheduled pods hold its
    GPUs (DCGM-Exporter's Kubernetes mapping off or broken): busy GPUs there are told from a
    hijack by count only (explained_by_count)."""

    node: str
    held_devices: int  # whole GPUs and MIG instances the node's scheduled pods hold


@dataclass(frozen=True)
class _Point:
    time: datetime
    busy: float | None
    held: bool


def unexplained_busy(
    samples: Iterable[GpuSample],
    *,
    held: Callable[[GpuSample], bool],
    threshold: float = 20.0,
    window: timedelta = timedelta(minutes=15),
    max_gap: timedelta = MAX_GAP,
) -> list[Hijack]:
    """Runs of unheld busy > threshold lasting strictly longer than window, per device.

    `held(sample)` says whether a scheduled pod holds the sample's device at its time; the
    caller decides from the inventory. A span of such points with gaps over max_gap and no
    continuous run over the window is a run too, not `continuous`; a device with a continuous
    run has those alone (one GPU is one finding, and the observed run says more). Sorted by
    device, then start."""
    found = []
    for device, points in sorted(_timelines(samples, held).items()):
        dense = [
            _hijack(device, run)
            for run in _runs(points, threshold, max_gap)
            if run[-1].time - run[0].time > window
        ]
        # Spans over the window with no continuous run in them (one sample spans no time).
        sparse = [
            replace(_hijack(device, span), continuous=False)
            for span in _runs(points, threshold, None)
            if span[-1].time - span[0].time > window
        ]
        found += dense or sparse
    return found


def _timelines(
    samples: Iterable[GpuSample], held: Callable[[GpuSample], bool]
) -> dict[Device, list[_Point]]:
    """One point per device and time. The exporter emits a device once per mapped pod (and
    without pod labels when none is): those variants are one reading, so take the max busy,
    and the device is held if any of them is."""
    merged: dict[Device, dict[datetime, _Point]] = defaultdict(dict)
    for s in samples:
        here = merged[s.device]
        old = here.get(s.time)
        busy = s.busy if old is None else _max(old.busy, s.busy)
        was_held = old is not None and old.held
        here[s.time] = _Point(s.time, busy, was_held or held(s))
    return {d: [by_time[t] for t in sorted(by_time)] for d, by_time in merged.items()}


def explained_by_count(
    samples: Iterable[GpuSample],
    held_devices: Mapping[str, int],
    *,
    threshold: float,
    within: timedelta = timedelta(seconds=60),
    ended: Mapping[str, Iterable[tuple[datetime, int]]] | None = None,
) -> set[tuple[str, datetime]]:
    """(node, time) at which a node of `held_devices` (an UnmappedNode's: no sample names its
    pod) has no more devices busy above the threshold than its scheduled pods hold: each busy
    one may be theirs. More busy than held, and some run outside the scheduler: none of them
    is explained, since the samples cannot say which (count_moments has both counts)."""
    moments = count_moments(samples, held_devices, threshold=threshold, within=within, ended=ended)
    return {at for at, (busy, held) in moments.items() if busy <= held}


def count_moments(
    samples: Iterable[GpuSample],
    held_devices: Mapping[str, int],
    *,
    threshold: float,
    within: timedelta = timedelta(seconds=60),
    ended: Mapping[str, Iterable[tuple[datetime, int]]] | None = None,
    spans: Mapping[str, Iterable[tuple[datetime | None, datetime | None, int]]] | None = None,
) -> dict[tuple[str, datetime], tuple[int, int]]:
    """(node, time) -> (devices busy above the threshold, devices its scheduled pods hold) at
    each time a device of a node of `held_devices` was busy. Devices busy `within` a moment of
    each other count together: series scraped apart need not carry one timestamp. `ended`:
    node -> (until, devices) of pods that ran to an end, held up to `until` (when the
    inventory saw them finished). `spans`: node -> (since, until, devices) of pods held only
    between two times (None: unbounded that side), beyond `held_devices`, which are held at
    every moment: a pod holds its devices from its start to its finish (telemetry.held_span),
    not whenever the latest inventory lists it."""
    busy: dict[str, list[tuple[datetime, Device]]] = defaultdict(list)
    for s in samples:
        if s.hostname in held_devices and s.busy is not None and s.busy > threshold:
            busy[s.hostname].append((s.time, s.device))
    moments = {}
    for node, events in busy.items():
        events.sort()
        times = [t for t, _ in events]
        past = list((ended or {}).get(node, ()))
        bounded = list((spans or {}).get(node, ()))
        for t in sorted(set(times)):
            low, high = bisect_left(times, t - within), bisect_right(times, t + within)
            held = held_devices[node] + sum(n for until, n in past if t <= until)
            held += sum(
                n
                for since, until, n in bounded
                if (since is None or since <= t) and (until is None or t <= until)
            )
            moments[(node, t)] = (len({device for _, device in events[low:high]}), held)
    return moments


def _runs(points: list[_Point], threshold: float, max_gap: timedelta | None) -> list[list[_Point]]:
    """Consecutive unheld points over threshold; a point that does not qualify (held, idle, or
    without a busy value), or a gap longer than max_gap (missing data: we cannot say the GPU
    stayed busy), ends a run. max_gap None: only a point that does not qualify ends it."""
    runs: list[list[_Point]] = []
    current: list[_Point] = []
    for p in points:
        if p.held or p.busy is None or p.busy <= threshold:
            current = []
            continue
        if current and max_gap is not None and p.time - current[-1].time > max_gap:
            current = []
        if not current:
            runs.append(current)  # filled in place by the appends below
        current.append(p)
    return runs


def _hijack(device: Device, run: list[_Point]) -> Hijack:
    values = [p.busy for p in run if p.busy is not None]
    hostname, uuid, gi_id = device
    return Hijack(
        device=device,
        hostname=hostname,
        uuid=uuid,
        gi_id=gi_id,
        start=run[0].time,
        end=run[-1].time,
        mean_busy=sum(values) / len(values),
        peak_busy=max(values),
        evidence=tuple((p.time, p.busy) for p in _spread(run) if p.busy is not None),
        sample_count=len(run),
        largest_gap=max((b.time - a.time for a, b in pairwise(run)), default=timedelta(0)),
    )


def _spread(run: list[_Point]) -> list[_Point]:
    """At most MAX_EVIDENCE points: the first, the last and evenly between."""
    if len(run) <= MAX_EVIDENCE:
        return run
    step = (len(run) - 1) / (MAX_EVIDENCE - 1)  # > 1, so the rounded indices are distinct
    return [run[round(i * step)] for i in range(MAX_EVIDENCE)]


def _max(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    return a if b is None else max(a, b)


def silent_nodes(
    last_sample: Mapping[str, datetime | None],
    gpu_nodes: Iterable[str],
    *,
    now: datetime,
    window: timedelta = timedelta(hours=1),
    vm_workloads: Mapping[str, str] | None = None,
) -> list[SilentNode]:
    """GPU nodes with no sample in the window before now, never-sampled ones included, each
    with its sandbox workload (`vm_workloads`: node -> vm-passthrough / vm-vgpu) if any.

    A sample exactly `window` old still counts as recent. Sorted by node."""
    since = now - window
    vms = vm_workloads or {}
    silent = []
    for node in sorted(set(gpu_nodes)):
        last = last_sample.get(node)
        if last is None or last < since:
            silent.append(SilentNode(node, last, vms.get(node, "")))
    return silent


# In EnvHold.devices: the variable names every GPU of the node (`all`).
EVERY_GPU = "*"


@dataclass(frozen=True)
class EnvHold:
    """A pod's hold on GPUs of its node through NVIDIA_VISIBLE_DEVICES, where the node honours
    it: decided by posture (posture.rules.env_holdings, a layer above), handed down by its
    read model. `devices`: "GPU-<uuid>", "gpu-index:<n>" where the node's inventory names no
    UUID, or EVERY_GPU."""

    pod: str  # "namespace/name"
    value: str  # the variable's value as the pod sets it
    devices: frozenset[str]


def env_holders(holds: Iterable[EnvHold], sample: GpuSample) -> list[EnvHold]:
    """The holds through NVIDIA_VISIBLE_DEVICES that cover the sample's GPU on a node that
    honours the variable: a pod using it outside the scheduler, which explains its use (the
    exporter never names such a pod; POD-011 reports how it got there)."""
    return [h for h in holds if _env_holds(h.devices, sample.uuid, sample.gpu, sample.gi_id)]


def env_note(
    hijack: Hijack,
    env_held: Mapping[str, tuple[EnvHold, ...]],
    indexes: Mapping[tuple[str, str], str],
) -> Hijack:
    """The hijack, naming the pods that may hold it through NVIDIA_VISIBLE_DEVICES but cannot
    be matched to it: a MIG instance's samples carry their parent's UUID and GPU_I_ID, never
    the instance's MIG UUID (DCGM does not have it), so a pod naming MIG UUIDs may hold this
    instance or another. Such a hold explains nothing (the product cannot verify it); it is
    named as a possible holder, not left out. (A hold that covers the GPU explains its use:
    env_explained_note.)"""
    holds = env_held.get(hijack.hostname, ())
    holders = _covering(hijack, holds, indexes)
    maybe = [h for h in holds if hijack.gi_id and h not in holders and _names_mig(h.devices)]
    if not maybe:
        return hijack
    note = (
        f"no allocation holds this GPU; pod(s) {_pods(maybe)} name MIG devices in "
        "NVIDIA_VISIBLE_DEVICES, which this node honours, outside the scheduler; the "
        "exporter reports a MIG instance by its parent GPU's UUID and GPU_I_ID, never its "
        "MIG UUID, so whether it is this instance is unknown"
    )
    return replace(hijack, held_note=note)


def env_explained_note(
    run: Hijack,
    env_held: Mapping[str, tuple[EnvHold, ...]],
    indexes: Mapping[tuple[str, str], str],
) -> Hijack:
    """A busy run no allocation holds, explained by the pods that hold its GPU through
    NVIDIA_VISIBLE_DEVICES on a node that honours it: the workload is on the GPU, only not
    through the scheduler (DESIGN §2: such holds feed the hijack checks). POD-011 is the
    finding about how it got there; this run is no ATTR-001 (one cause, one finding)."""
    holders = _covering(run, env_held.get(run.hostname, ()), indexes)
    note = (
        f"pod(s) {_pods(holders)} hold this GPU outside the scheduler through "
        "NVIDIA_VISIBLE_DEVICES, which this node honours: their workload explains its use "
        "(no allocation holds it; POD-011 reports the access)"
    )
    return replace(run, held_note=note)


def _covering(
    run: Hijack, holds: Iterable[EnvHold], indexes: Mapping[tuple[str, str], str]
) -> list[EnvHold]:
    # A device the exporter gave no UUID for is named by its index (Hijack.uuid).
    index = indexes.get((run.hostname, run.uuid)) or (
        "" if run.uuid.startswith(("GPU-", "MIG-")) else run.uuid
    )
    return [h for h in holds if _env_holds(h.devices, run.uuid, index, run.gi_id)]


def _pods(holds: list[EnvHold]) -> str:
    pods = ", ".join(f"{h.pod} (NVIDIA_VISIBLE_DEVICES={h.value})" for h in holds[:5])
    return pods + (f" and {len(holds) - 5} more" if len(holds) > 5 else "")


def _names_mig(devices: frozenset[str]) -> bool:
    return any(d.startswith("MIG-") for d in devices)


def _env_holds(devices: frozenset[str], uuid: str, index: str, gi_id: str) -> bool:
    """Whether a hold through the variable covers a GPU: `all`, its UUID, or its index where
    the node's inventory names no UUID. A MIG instance's samples carry their parent GPU's UUID,
    which a MIG UUID in the variable cannot be matched to: not known to be covered (env_note
    names it as a possible holder)."""
    if EVERY_GPU in devices:
        return True
    if gi_id:
        return False
    return (bool(uuid) and uuid in devices) or (bool(index) and f"gpu-index:{index}" in devices)
