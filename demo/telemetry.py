"""A day of DCGM-Exporter samples for the demo's GPU nodes, written for the demo. PURE.

Each GPU-requesting pod is given GPUs of its node in turn; its samples carry its pod labels
(whole GPUs and MIG instances), with a load that follows its kind (training busy, inference
by the hour of the day, notebooks mostly idle). Time-sliced and MPS nodes get one GPU-wide
value copied onto every pod, as the exporter does there. Planted for the checks: a GPU busy
with no pod on it for the last 40 minutes (ATTR-001), one busy as long under the label of a
pod the last sync has on another node (ATTR-001: the label is stale or forged), GPU nodes that
never report (ATTR-003: one whose exporter is broken, one where it is switched off), and a GPU
handed from one tenant to another halfway through the day (LEAK-001; the demo records a reset
for one such handover and not for the other).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from telemetry.samples import GpuSample

STEP = timedelta(minutes=5)
HOURS = 26
SHARED = ("time_slicing", "mps")


@dataclass(frozen=True)
class DemoPod:
    namespace: str
    name: str
    gpus: int  # whole GPUs (or time-sliced replicas) requested
    mig_profile: str = ""  # e.g. "1g.10gb" for nvidia.com/mig-1g.10gb


@dataclass(frozen=True)
class DemoNode:
    name: str
    model: str
    gpu_count: int
    sharing: str
    pods: tuple[DemoPod, ...] = field(default_factory=tuple)


def uuid_of(node: str, index: int) -> str:
    rng = random.Random(f"{node}/{index}")  # stable across demo runs
    h = "".join(rng.choice("0123456789abcdef") for _ in range(32))
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def truncated_scrape(node: str = "pe-l40s-01") -> str:
    """A node's /metrics page saved while its exporter restarted: cut off inside a label set,
    which `ingest_dcgm` refuses (the cluster page lists the refusal)."""
    labels = (
        f'gpu="0",UUID="{uuid_of(node, 0)}",pci_bus_id="00000000:17:00.0",device="nvidia0",'
        f'modelName="NVIDIA L40S",Hostname="{node}",DCGM_FI_DRIVER_VERSION="550.90.07",'
        'container="vllm-dev",namespace="research-llm",pod="vllm-dev-'
    )
    return (
        "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        f"DCGM_FI_DEV_GPU_UTIL{{{labels}"
    )


def _load(kind: str, t: datetime, rng: random.Random) -> float:
    if "notebook" in kind or "idle" in kind:
        return max(0.0, rng.gauss(2.0, 1.0))
    if "infer" in kind or "serve" in kind:
        daily = 35 + 30 * math.sin((t.hour - 8) / 24 * 2 * math.pi)
        return min(100.0, max(0.0, rng.gauss(daily, 6)))
    return min(100.0, max(0.0, rng.gauss(88, 5)))


def demo_samples(
    nodes: list[DemoNode],
    *,
    now: datetime,
    silent: tuple[str, ...] = (),
    hijacked: str = "",
    handovers: tuple[tuple[str, str], ...] = (),
    unlabelled: tuple[str, ...] = (),
    newcomer: tuple[str, str, int] = ("", "", 0),
    relabelled: tuple[str, str, str] = ("", "", ""),
) -> list[GpuSample]:
    """`silent`: nodes that send nothing; `hijacked`: a node whose last GPU runs busy for the
    last 40 minutes with no pod; `handovers`: (node, namespace) whose GPU 0 ran a pod of
    that namespace in the first half of the day before its present holder took it;
    `unlabelled`: nodes whose exporter runs without its Kubernetes mapping (no pod labels);
    `newcomer`: (node, model, GPUs) that joined after the last sync and has run busy, with no
    pod labels, for its last 40 minutes (the inventory does not list it yet: ATTR-002);
    `relabelled`: (node, namespace, pod) whose last GPU runs busy for the last 40 minutes with
    its samples labelled with that pod (DCGM-Exporter names only its own node's pods, so a pod
    the sync has elsewhere makes the label stale or forged: ATTR-001, `labels_named`)."""
    # On the 5-minute grid, so a demo run again within those minutes writes the same samples.
    end = now.replace(minute=now.minute - now.minute % 5, second=0, microsecond=0)
    start = end - timedelta(hours=HOURS)
    times = [start + STEP * i for i in range(int(timedelta(hours=HOURS) / STEP))]
    out: list[GpuSample] = []
    for node in nodes:
        if node.name in silent:
            continue
        samples = _node_samples(node, times, hijacked == node.name, handovers)
        if node.name == relabelled[0]:
            _, namespace, pod = relabelled
            samples = _relabelled(samples, node, times[-1], DemoPod(namespace, pod, 1))
        if node.name in unlabelled:
            samples = (replace(x, namespace="", pod="", container="") for x in samples)
        out += list(samples)
    host, model, gpus = newcomer
    if host:
        node = DemoNode(host, model, gpus, "none")
        recent = [t for t in times if t >= times[-1] - timedelta(minutes=40)]
        out += [
            replace(x, util=95.0, gr_active=0.95) for x in _node_samples(node, recent, False, ())
        ]
    return out


def _relabelled(
    samples: Iterator[GpuSample], node: DemoNode, last: datetime, pod: DemoPod
) -> Iterator[GpuSample]:
    """The node's samples, its last GPU busy for the last 40 minutes under `pod`'s label."""
    rng = random.Random(f"{node.name}/relabelled")
    since = last - timedelta(minutes=40)
    for x in samples:
        if x.gpu == str(node.gpu_count - 1) and x.time >= since:
            busy = min(100.0, rng.gauss(96, 2.0))
            x = replace(
                x,
                util=busy,
                gr_active=busy / 100.0,
                fb_used_mib=61000.0,
                namespace=pod.namespace,
                pod=pod.name,
                container="main",
            )
        yield x


def _node_samples(
    node: DemoNode, times: list[datetime], hijacked: bool, handovers
) -> Iterator[GpuSample]:
    rng = random.Random(node.name)
    base = {"hostname": node.name, "model": node.model}
    hijack_from = times[-1] - timedelta(minutes=40)
    if node.sharing in SHARED:
        for index in range(node.gpu_count):
            for t in times:
                busy = _load("train", t, rng) if node.pods else 0.0
                labels = [(p.namespace, p.name) for p in node.pods] or [("", "")]
                for namespace, pod in labels:  # the exporter copies the GPU-wide value
                    yield GpuSample(
                        time=t,
                        gpu=str(index),
                        uuid=uuid_of(node.name, index),
                        util=busy,
                        namespace=namespace,
                        pod=pod,
                        container="main" if pod else "",
                        **base,
                    )
        return
    handover = next((h for h in handovers if h[0] == node.name), None)
    slots = _assign(node)
    for index in range(node.gpu_count):
        holders = slots.get(index, [])
        for t in times:
            for gi_id, profile, pod in holders or [("", "", None)]:  # type: ignore[list-item]  # an idle GPU: one slot, no pod
                if handover and index == 0 and gi_id == "" and t < times[len(times) // 2]:
                    pod = DemoPod(handover[1], "job-0", 1)  # finished since: another tenant's
                busy = _load(pod.name, t, rng) if pod else 0.0
                if hijacked and index == node.gpu_count - 1 and t >= hijack_from:
                    busy = min(100.0, rng.gauss(97, 1.5))
                yield GpuSample(
                    time=t,
                    gpu=str(index),
                    uuid=uuid_of(node.name, index),
                    gi_id=gi_id,
                    gi_profile=profile,
                    util=None if gi_id else busy,
                    gr_active=busy / 100.0,
                    fb_used_mib=(20000.0 if pod else 0.0) * (busy > 1),
                    namespace=pod.namespace if pod else "",
                    pod=pod.name if pod else "",
                    container="main" if pod else "",
                    **base,
                )


def _assign(node: DemoNode) -> dict[int, list[tuple[str, str, DemoPod]]]:
    """GPU index -> [(MIG instance id or "", profile, pod)], pods taking GPUs in turn."""
    slots: dict[int, list[tuple[str, str, DemoPod]]] = {}
    index, instance = 0, 0
    for pod in node.pods:
        if pod.mig_profile:
            instance += 1
            slots.setdefault(instance // 7 % max(node.gpu_count, 1), []).append(
                (str(instance), pod.mig_profile, pod)
            )
            continue
        for _ in range(pod.gpus):
            if index < node.gpu_count:
                slots.setdefault(index, []).append(("", "", pod))
                index += 1
    return slots
