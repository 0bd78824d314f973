"""What a cluster's telemetry says for the checks (posture.inputs.TelemetryFacts): busy GPUs no
scheduled pod explains (ATTR-001), silent GPU nodes (ATTR-003, telemetry.silence), and GPUs
passed between tenants without a recorded reset (LEAK-001). Reads bounded sets: the last three
hijack windows of samples, the newest sample per node, and who held each exclusive GPU over the
retention."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from inventory import snapshot as snap
from inventory.dra_devices import dra_held
from inventory.fractions import hami_share
from inventory.models import Cluster, Pod
from inventory.sources.images import component_of
from telemetry.busy_count import Moments, counted_by_node
from telemetry.evidence import TelemetryFacts
from telemetry.exporter_labels import PodLabels, elsewhere_noted, unknown_pod_labels
from telemetry.handovers import handovers
from telemetry.held_span import Ended, finished, spans, untimed
from telemetry.hijack import (
    EnvHold,
    Hijack,
    UnmappedNode,
    count_moments,
    env_explained_note,
    env_holders,
    env_note,
    unexplained_busy,
)
from telemetry.ingest_context import SHARED_STRATEGIES
from telemetry.models import GpuReading
from telemetry.samples import GpuSample
from telemetry.selectors import cluster_sampled
from telemetry.shares import ShareHolds, share_holds, share_note, share_units
from telemetry.silence import silent_gpu_nodes
from tenants.policy import FRACTIONAL_RESOURCES

FINISHED = ("Succeeded", "Failed")  # pod phases: it ran to an end
# node -> its pods' holds through NVIDIA_VISIBLE_DEVICES (telemetry.hijack.EnvHold)
EnvHeld = Mapping[str, tuple[EnvHold, ...]]


def telemetry_facts(
    cluster: Cluster,
    snapshot: snap.ClusterSnapshot,
    now: datetime | None = None,
    env_held: EnvHeld | None = None,
) -> TelemetryFacts:
    now = now or timezone.now()
    window = timedelta(minutes=settings.GPUPOSTURE_HIJACK_WINDOW_MINUTES)
    thresholds = {
        "threshold_percent": settings.GPUPOSTURE_HIJACK_THRESHOLD_PERCENT,
        "window_minutes": settings.GPUPOSTURE_HIJACK_WINDOW_MINUTES,
        "silent_minutes": settings.GPUPOSTURE_SILENT_NODE_MINUTES,
    }
    if not cluster_sampled(cluster=cluster):
        # No DCGM-Exporter sample was ever ingested for the cluster: every GPU node is one with
        # no telemetry (ATTR-003 says so, and that its hijack detection is blind), and there is
        # nothing else to judge from samples.
        silent = silent_gpu_nodes(cluster, snapshot, now, sampled=False)
        return TelemetryFacts(sampled=False, silent_nodes=silent, settings=thresholds)
    found = _hijacks(cluster, snapshot, now, window, env_held or {})
    hijacks, unmapped, explained, moments, unknown_pods = found
    # A busy GPU on a host the last inventory does not list (most often a node that joined
    # since the sync): which pods run there is unknown, so it is usage nobody can be said to
    # hold, not a hijack (ATTR-002 names the host).
    nodes = {n.name for n in snapshot.nodes}
    # Runs judged by count say one thing of their node, not of each GPU: one verdict per node.
    by_device, counted = counted_by_node((h for h in hijacks if h.hostname in nodes), moments)
    return TelemetryFacts(
        sampled=True,
        hijacks=tuple(by_device),
        counted_hijacks=tuple(counted),
        unknown_hosts=tuple(h for h in hijacks if h.hostname not in nodes),
        unmapped_nodes=tuple(unmapped),
        env_explained=tuple(h for h in explained if h.hostname in nodes),
        unknown_pod_labels=tuple(unknown_pods),
        silent_nodes=silent_gpu_nodes(cluster, snapshot, now, sampled=True),
        handovers=tuple(handovers(cluster, snapshot, now, env_held or {})),
        settings=thresholds,
    )


def _hijacks(
    cluster: Cluster,
    snapshot: snap.ClusterSnapshot,
    now: datetime,
    window: timedelta,
    env_held: EnvHeld,
):
    """The busy runs no scheduled pod explains, the nodes judged by count only, the busy runs
    only pods holding the GPU through NVIDIA_VISIBLE_DEVICES explain, and the counts by which
    busy GPUs were judged (node, time) -> (busy, held) (telemetry.busy_count), and the GPUs
    whose samples name pods the inventory does not list."""
    running = [p for p in snapshot.pods if p.is_active and p.node_name]
    dra = dra_held(snapshot, running)
    gpu_pods, held_devices = _gpu_pods(running)
    ended = _finished(cluster, snapshot)
    # A KAI fraction's samples name the fraction pod (telemetry.attribution books the GPU its
    # reservation pod holds to the fractions bound to it): it holds that GPU.
    fractions = {(p.namespace, p.name) for p in running if p.gpu_fraction}
    labels = _pod_labels(snapshot, gpu_pods | dra.pods | fractions, ended)
    shares = share_holds(running, [(pod, until) for pod, until, _ in ended])
    shared = {n.name for n in snapshot.nodes if n.sharing_strategy in SHARED_STRATEGIES}
    threshold = float(settings.GPUPOSTURE_HIJACK_THRESHOLD_PERCENT)
    # Three windows back: a run that started before the last window is seen whole.
    rows = GpuReading.objects.filter(cluster=cluster, time__gte=now - 3 * window).order_by("time")
    samples = [r.as_sample() for r in rows.iterator(chunk_size=5000)]
    # DCGM-Exporter often labels no pod at all (its Kubernetes mapping off, or unable to read
    # the kubelet's pod resources): on such a node a busy GPU is no more a hijack than one of
    # the GPUs its pods hold, which the samples cannot name; only a count says anything.
    reporting = {s.hostname for s in samples}

    # A pod holding the GPU through NVIDIA_VISIBLE_DEVICES where the node honours it runs its
    # workload there: the GPU's use is explained (POD-011 says how it got there), and its
    # samples are not counted against the GPUs scheduled pods hold. A hold the product cannot
    # verify (the toolkit's setting unknown, a MIG UUID the samples cannot carry) is not here.
    def by_env(sample: GpuSample) -> bool:
        holds = env_held.get(sample.hostname)
        return bool(holds) and bool(env_holders(holds, sample))

    # A label counts only when it names a pod holding GPUs then: a scrape may stamp its
    # target's own pod (the exporter's) on samples the exporter left bare.
    named = {s.hostname for s in samples if labels.held(s.namespace, s.pod, s.time, s.hostname)}
    unmapped = [
        UnmappedNode(node, count)
        for node, count in sorted(held_devices.items())
        if count and node in reporting and node not in named and node not in shared
    ]

    # A pod holds its GPUs from its start to its finish (telemetry.held_span): a running pod
    # that started late held nothing before, and pods that ran to an end held their GPUs until
    # their containers finished, or, where that is not recorded, until a sync saw them
    # finished: a Job's last busy minutes are its own. A pod with no recorded start is taken
    # to hold its GPUs throughout (unknown is not a hijack).
    def devices(pod: snap.Pod) -> int:
        return _gpu_pods([pod])[1].get(str(pod.node_name), 0)

    timed = spans(running, ended, devices)
    unlabelled = {
        node
        for node in {*held_devices, *timed}
        if node in reporting and node not in named and node not in shared
    }
    always = untimed(running, devices)
    by_count = count_moments(
        # A GPU a HAMi share is bound to is held by it; the count judges the others.
        [s for s in samples if not shares.held(s) and not by_env(s)],
        {n: always.get(n, 0) for n in unlabelled},
        threshold=threshold,
        spans=timed,
    )
    units = _units_by_node(running)
    caps = _shared_caps(snapshot, units, shares)
    # A node whose exporter names some pods, with HAMi shares whose devices no annotation
    # names: the GPUs those shares are on are unknown, so the busy GPUs nothing else explains
    # are judged by count against them (as on a node whose exporter names no pod).
    unbound = {
        node: n
        for node, n in shares.unknown.items()
        if node not in unlabelled and node not in shared
    }
    unbound_count = count_moments(
        [
            s
            for s in samples
            if s.hostname in unbound
            and not labels.held(s.namespace, s.pod, s.time, s.hostname)
            and not (s.uuid and s.uuid in dra.devices)
            and not shares.held(s)
            and not by_env(s)
        ],
        unbound,
        threshold=threshold,
    )
    # MIG instances of a shared node are not counted against its physical GPUs, nor a GPU a
    # HAMi share is bound to (held by it: the count judges the others).
    shared_always = untimed(running, _shared_units)
    shared_count = count_moments(
        [s for s in samples if not s.gi_id and not shares.held(s) and not by_env(s)],
        {n: shared_always.get(n, 0) for n in caps},
        threshold=threshold,
        spans=spans(running, ended, _shared_units),
    )

    def scheduled(sample: GpuSample) -> bool:
        if labels.held(sample.namespace, sample.pod, sample.time, sample.hostname):
            return True
        # A GPU a DRA claim in use holds is explained, whatever labels the exporter put on
        # its samples (it may not map DRA devices to pods at all).
        if sample.uuid and sample.uuid in dra.devices:
            return True
        if shares.held(sample):
            return True
        if _explained(by_count, sample) or _explained(unbound_count, sample):
            return True
        # A shared GPU's samples may name one of its pods or none: a busy GPU is explained
        # while no more are busy than the node's pods can occupy (any of them, where they can
        # occupy every GPU, or where the node's GPU count is unknown).
        if sample.hostname in caps and not sample.gi_id:
            return _explained(shared_count, sample)
        # A node whose GPUs its pods can occupy only through HAMi shares on named GPUs is
        # judged by device (shares.held above), as on other HAMi nodes.
        return (
            sample.hostname in shared
            and sample.hostname in held_devices
            and units.get(sample.hostname, 0) > 0
        )

    def held(sample: GpuSample) -> bool:
        return by_env(sample) or scheduled(sample)

    found = unexplained_busy(samples, held=held, threshold=threshold, window=window)
    # The runs an env hold alone explains: no ATTR-001, but ATTR-002 names the pods.
    explained = unexplained_busy(
        [s for s in samples if by_env(s)], held=scheduled, threshold=threshold, window=window
    )
    # A node whose only holds are HAMi shares on named GPUs is judged by UUID, not by count.
    counted = {
        node: held_devices.get(node, 0)
        for node in unlabelled
        if held_devices.get(node, 0) or node not in shares.devices
    }
    indexes = {(s.hostname, s.uuid): s.gpu for s in samples}
    notes = [share_note(_by_count_note(h, counted, caps, unbound), shares) for h in found]
    return (
        elsewhere_noted([env_note(h, env_held, indexes) for h in notes], samples, labels),
        unmapped,
        [env_explained_note(h, env_held, indexes) for h in explained],
        # The three are of disjoint nodes: exporter names no pod, shared, unbound HAMi shares.
        {**by_count, **unbound_count, **shared_count},
        unknown_pod_labels(samples, labels),
    )


def _explained(moments: Moments, sample: GpuSample) -> bool:
    """No more GPUs busy at the sample's moment than its node's pods can occupy."""
    counts = moments.get((sample.hostname, sample.time))
    return counts is not None and counts[0] <= counts[1]


def _by_count_note(
    hijack: Hijack, counted: dict[str, int], caps: dict[str, int], unbound: dict[str, int]
) -> Hijack:
    """The hijack, saying why it was judged by count where its node's exporter names no pod,
    where its node's GPUs are shared, or where HAMi shares on it name no device. Where its
    scheduled pods can occupy some GPUs, it is `judged_by_count`: more were busy than they
    can occupy, but not which one is unheld."""
    if hijack.hostname in counted:
        count = counted[hijack.hostname]
        note = (
            "the exporter on this node names no pod, so which busy GPU is unheld is unknown; "
            f"more GPUs were busy at once than the {counted[hijack.hostname]} its scheduled "
            "pods hold, so at least one runs outside the scheduler"
        )
    elif hijack.hostname in caps and not hijack.gi_id:
        count = caps[hijack.hostname]
        note = (
            "the node's GPUs are time-sliced or MPS-shared, so the exporter names at most one "
            "of the pods on a GPU; more GPUs were busy at once than the "
            f"{caps[hijack.hostname]} its scheduled pods can occupy (one per GPU they hold), "
            "so at least one runs outside the scheduler"
        )
    elif hijack.hostname in unbound:
        # share_note names the unannotated shares and how they are counted.
        count = unbound[hijack.hostname]
        note = (
            "the exporter names no pod on this GPU and no HAMi annotation binds a share to it; "
            f"more GPUs nothing else explains were busy at once than the {count} the node's "
            "unannotated HAMi shares can occupy, so at least one runs outside the scheduler"
        )
    else:
        return hijack
    return replace(hijack, held_note=note, judged_by_count=count > 0)


def _shared_units(pod: snap.Pod) -> int:
    """The most physical GPUs a pod on a time-sliced or MPS node can occupy: one per shared
    replica it holds; a pod with only a fraction or a claim, one. A HAMi share whose devices
    its annotation names occupies those (judged by device, telemetry.shares), none by count;
    one whose devices are unnamed, one GPU per share (share_units)."""
    if hami_share(pod):
        return share_units(pod)
    n = sum(v for k, v in pod.gpu_resources.items() if k not in FRACTIONAL_RESOURCES)
    return n or (1 if pod.uses_gpu or pod.resource_claims else 0)


def _units_by_node(running: list[snap.Pod]) -> dict[str, int]:
    """node -> the most physical GPUs its scheduled pods can occupy by count (_shared_units)."""
    units: dict[str, int] = {}
    for pod in running:
        units[str(pod.node_name)] = units.get(str(pod.node_name), 0) + _shared_units(pod)
    return units


def _shared_caps(
    snapshot: snap.ClusterSnapshot, units: dict[str, int], shares: ShareHolds
) -> dict[str, int]:
    """Time-sliced or MPS nodes -> the most physical GPUs their scheduled pods can occupy,
    where that is fewer than the node has: a busy GPU beyond them is none of theirs. A node
    whose pods are all HAMi shares on named GPUs (GFD may still label it time-slicing) is
    judged by device, whatever its GPU count: it is not capped."""
    return {
        node.name: units.get(node.name, 0)
        for node in snapshot.nodes
        if node.sharing_strategy in SHARED_STRATEGIES
        and node.container_gpus
        and units.get(node.name, 0) < node.container_gpus
        and (units.get(node.name, 0) or node.name not in shares.devices)
    }


def _finished(cluster: Cluster, snapshot: snap.ClusterSnapshot) -> list[Ended]:
    """The scheduled pods that held GPUs and ran to an end, each with until when it held them:
    when its containers finished where the kubelet recorded it, else when a sync saw it
    finished (its row last changed: it held its GPUs up to then at most); and whether an
    earlier sync saw it before that (so it ran within that sync interval; a pod first seen
    finished may have run at any time before, unless its start and finish are recorded)."""
    pods = {
        (p.namespace, p.name): p
        for p in snapshot.pods
        if p.phase in FINISHED and p.node_name and (p.uses_gpu or p.resource_claims)
    }
    if not pods:
        return []
    rows = Pod.objects.filter(cluster=cluster, phase__in=FINISHED).values_list(
        "namespace", "name", "changed_at", "first_seen"
    )
    return [
        (pod, finished(pod) or changed, first < changed)
        for ns, name, changed, first in rows
        if (pod := pods.get((ns, name))) is not None
    ]


def _pod_labels(
    snapshot: snap.ClusterSnapshot,
    holding: set[tuple[str, str]],
    ended: list[Ended],
) -> PodLabels:
    """The inventory's pods as the samples' pod labels are judged (exporter_labels.PodLabels)."""
    return PodLabels(
        holding=holding,
        finished={(p.namespace, p.name): until for p, until, _ in ended},
        known={(p.namespace, p.name) for p in snapshot.pods},
        placed={(p.namespace, p.name): p.node_name for p in snapshot.pods if p.node_name},
        nodes={n.name for n in snapshot.nodes},
        exporter_sets={
            (p.namespace, p.owner_name)
            for p in snapshot.pods
            if p.owner_kind == "DaemonSet"
            and p.owner_name
            and any(component_of(c.image) == "dcgm_exporter" for c in p.containers)
        }
        | {
            (w.namespace, w.name)
            for w in snapshot.workloads
            if w.kind == "DaemonSet"
            and any(component_of(i) == "dcgm_exporter" for i in w.images.values())
        },
    )


def _gpu_pods(pods: list[snap.Pod]) -> tuple[set[tuple[str, str]], dict[str, int]]:
    """(namespace, name) of the scheduled pods holding GPU resources, and node -> whole GPUs
    and MIG instances they hold there (device-plugin resources; each is one device the
    exporter reports on). Every node with such a pod is a key, with 0 where it holds only
    other GPU resources (shared replicas, fractions)."""
    names: set[tuple[str, str]] = set()
    held: dict[str, int] = {}
    for pod in pods:
        resources = pod.gpu_resources
        if not resources or not pod.node_name:
            continue
        names.add((pod.namespace, pod.name))
        # HAMi's nvidia.com/gpu counts shares, several to a GPU (telemetry.shares).
        count = (
            share_units(pod)
            if hami_share(pod)
            else sum(
                n
                for name, n in resources.items()
                if name == "nvidia.com/gpu" or name.startswith("nvidia.com/mig-")
            )
        )
        held[pod.node_name] = held.get(pod.node_name, 0) + count
    return names, held
