"""NVIDIA nodes the demo clusters gained after the first tables, generated after every other object
(demo/additions.py) so those keep the ids they had.

- prod-east: a vGPU guest VM of the on-prem vSphere farm (NVIDIA AI Enterprise), its one vGPU a
  MIG-backed NVIDIA A100-4-20C (a GPU instance of its own: mig_gi), its driver installed by the
  GPU Operator from NVAIE's guest driver image; clinical's report generator runs on it.
- neo-west: an A100 node the NVIDIA DRA driver serves without GPU Feature Discovery (the
  driver baked into the host image): its model and driver version only the ResourceSlice says.
- neo-west: the cloud's fractional pool, where Koordinator's GPU share puts orbital's embedding
  service and research's burst eval on one L40S (GPU minor 1): SHARE-001, SHARE-003.
- neo-west: an H200 node handed from kestrel (last week) through the cloud's burn-in job
  (mid-week, demo/history.py) to orbital (now) with no reset recorded: LEAK-001 from sync
  history, naming the burn-in in between.
- neo-west: one of orbital's pods carries a build tool's annotation holding a NUL byte, which
  the sync reads without it and names in its warnings.

Pure Python: no Django, no network; deterministic for the `Ids` it is given.
"""

from __future__ import annotations

import json
from dataclasses import replace

from demo import k8s
from demo.cluster_parts import (
    CLIN,
    CLOUD_CLASS_KEY,
    GPU,
    H200,
    KES,
    L40S,
    ORB,
    RES,
    Cluster,
    Work,
    gpu_node,
)
from demo.clusters import NEO_WEST
from demo.k8s import GpuModel, Ids, NodeSpec, Obj
from demo.k8s_dra import slice_of
from demo.k8s_platform import HARDENED_TOOLKIT_ENV
from demo.k8s_workloads import tenant_pods_of

# ruff: noqa: E501
# fmt: off
# (a) NVAIE's guest driver image; GFD labels the vGPU type as the product, and the host's vGPU
# Manager in labels of its own (never the guest's driver).
GUEST = "pe-vgpu-01"
GUEST_DRIVER = "nvcr.io/nvaie/vgpu-guest-driver-4:535.104.05-ubuntu22.04"
A100_4_20C = GpuModel("NVIDIA-A100-4-20C", 20475, "ampere", (8, 0), False, "VMware-Virtual-Platform", 16, 128)
GUEST_LABELS = {
    "nvidia.com/vgpu.present": "true",
    "nvidia.com/vgpu.host-driver-version": "535.104.06",
    "nvidia.com/vgpu.host-driver-branch": "r535_00",
}
DS_GUEST_DRIVER = k8s.DaemonSetSpec("nvidia-vgpu-guest-driver-ubuntu22.04", "nvidia-driver-ctr", GUEST_DRIVER,
                                    host_paths=("/run/nvidia", "/var/log"),
                                    node_selector=(("gpuposture.io/pool", "sensitive-vgpu"),))
# (b) No GFD, no device plugin: the DRA driver's slice publishes the model and the driver in
# its own (semver) spelling, 550.144.3 for NVIDIA's 550.144.03.
DRA_ONLY = "nw-a100-01"
DRA_PRODUCT, DRA_DRIVER_VERSION = "NVIDIA A100-SXM4-80GB", "550.144.3"
# (c) Koordinator's GPU share: half a GPU's cores and memory each, on the minor it allocated.
KOORD = "nw-l40s-03"
KOORD_NS = "koordinator-system"
KOORD_SHARE = {"koordinator.sh/gpu-core": 50, "koordinator.sh/gpu-memory-ratio": 50}
KOORD_MINOR = 1
KOORDLET = k8s.DaemonSetSpec("koordlet", "koordlet", "ghcr.io/koordinator-sh/koordlet:v1.5.0", KOORD_NS,
                             host_paths=("/sys/fs/cgroup", "/var/run/koordlet", "/dev"))
KOORD_DEPLOYMENTS = (("koord-scheduler", "ghcr.io/koordinator-sh/koord-scheduler:v1.5.0"),
                     ("koord-manager", "ghcr.io/koordinator-sh/koord-manager:v1.5.0"))
# (d) The node handed over, and who held it at each sync demo/history.py replays.
HANDOVER = "nw-h200-04"
BURNIN_NS = "nimbus-burnin"  # the cloud's own namespace, labelled the platform's
HANDOVER_WORKS = {
    "last-week": Work(KES, "vit-pretrain", "kestrel/vit-train:2.2.0", {GPU: 8}, "Job"),
    "mid-week": Work(BURNIN_NS, "gpu-burnin", "platform/gpu-burn:2024.11", {GPU: 8}, "Job"),
    "now": Work(ORB, "md-sim", "orbital/md-sim:1.0.3", {GPU: 8}, "Job"),
}
NODES = {
    "prod-east": (
        gpu_node(GUEST, "sensitive-vgpu", A100_4_20C, 1, "sensitive", driver="535.104.05", driver_labels="none"),
    ),
    "neo-west": (
        NodeSpec(DRA_ONLY, "shared-dra", taints=(("gpuposture.io/trust-class", "internal", "NoSchedule"),)),
        gpu_node(KOORD, "fractional", L40S, 4, "external", driver="550.127.05", taint_key=CLOUD_CLASS_KEY),
        gpu_node(HANDOVER, "external-h200", H200, 8, "external", driver="550.127.05", taint_key=CLOUD_CLASS_KEY),
    ),
}
WORKS = {
    GUEST: (Work(CLIN, "ct-report-gen", "clinical/ct-report-gen:0.7.1", {GPU: 1}, "Job"),),
    KOORD: (Work(ORB, "esm-embed", "orbital/esm-embed:1.1.0", dict(KOORD_SHARE)),
            Work(RES, "eval-burst", "research/eval-harness:0.4.5", dict(KOORD_SHARE), "Job")),
}
# fmt: on


def later_nodes(ids: Ids, c: Cluster, items: list[Obj], cni: k8s.DaemonSetSpec | None) -> list[Obj]:
    """The nodes above of cluster `c`, their platform pods and tenants' pods; the DaemonSets of
    `items` that gain a pod on them count it (in place)."""
    nodes = NODES.get(c.name, ())
    if not nodes:
        return []
    ours = [_node(ids, c, n) for n in nodes]
    agents = k8s.Platform(ids)  # pods of DaemonSets `items` already holds
    own = k8s.Platform(ids)  # DaemonSets of their own, with their pods
    proxy = k8s.DaemonSetSpec(
        "kube-proxy", "kube-proxy", f"registry.k8s.io/kube-proxy:{c.host.kubelet}", "kube-system"
    )
    for n in nodes:
        for ds in (proxy, cni, k8s.DS_NFD):
            if ds is not None:
                agents.place(ds, n.name)
        if n.name == DRA_ONLY:
            agents.place(
                k8s.DS_TOOLKIT, n.name, n.toolkit_image, env=HARDENED_TOOLKIT_ENV if c.cdi else None
            )
            agents.place(k8s.DS_DRA_PLUGIN, n.name)
        elif n.model:
            k8s.gpu_operator_pods(agents, n, driver_managed=c.driver_managed, hardened=c.cdi)
        if n.name == GUEST:
            own.place(DS_GUEST_DRIVER, n.name)
        if n.name == KOORD:
            own.place(KOORDLET, n.name)
    count_pods(items, agents.pods)
    ours += agents.pods + own.objects()
    if c.name == "neo-west":
        ours += _koordinator(ids, c) + _dra_only_slice(ids)
        ours.append(k8s.namespace(ids, BURNIN_NS, {"gpuposture.io/platform": "true"}))
    works = {n.name: WORKS.get(n.name, ()) for n in nodes}
    if c.name == "neo-west":
        works[HANDOVER] = (HANDOVER_WORKS["now"],)
    pods, controllers = tenant_pods_of(ids, replace(c, nodes=nodes, works=works, reservations=()))
    _koordinator_allocated(pods)
    _build_note_with_a_nul(pods)
    return ours + pods + controllers


def _build_note_with_a_nul(pods: list[Obj]) -> None:
    """A build tool's annotation on the first of orbital's pods here, holding a NUL byte (the
    API server accepts one in an annotation value): the sync reads it without the NUL and says so,
    rather than refusing the cluster's snapshot."""
    for p in pods:
        if p["metadata"]["namespace"] == ORB:
            p["metadata"].setdefault("annotations", {})["ci.orbital.example/build-note"] = (
                "nightly\x00rc2"
            )
            return


def handover_stage(cluster: str, objects: list[Obj], stage: str, seed: int = 7) -> list[Obj]:
    """`objects` (the cluster now) with HANDOVER's job as it was at `stage` ("last-week",
    "mid-week"): now's job and its pods out, that stage's in (ids of their own, so the rest
    keeps its own)."""
    if cluster != NEO_WEST.name or stage == "now":
        return objects
    c = NEO_WEST
    now = HANDOVER_WORKS["now"]
    kept = [o for o in objects if not _of_job(o, now.ns, now.name)]
    node = next(n for n in NODES[c.name] if n.name == HANDOVER)
    earlier = replace(c, nodes=(node,), works={HANDOVER: (HANDOVER_WORKS[stage],)}, reservations=())
    pods, controllers = tenant_pods_of(Ids(seed, f"{c.name}/{stage}"), earlier)
    return kept + pods + controllers


def _of_job(o: Obj, ns: str, job: str) -> bool:
    m = o["metadata"]
    if m.get("namespace") != ns:
        return False
    if o["kind"] == "Job":
        return m["name"] == job
    return o["kind"] == "Pod" and any(r["name"] == job for r in m.get("ownerReferences", []))


def _node(ids: Ids, c: Cluster, n: NodeSpec) -> Obj:
    node = k8s.node(ids, n, c.host, mig_strategy=c.mig_strategy, zone=c.zone)
    labels, counts = node["metadata"]["labels"], node["status"]
    if n.name == GUEST:
        labels.update(GUEST_LABELS)
    if n.name == DRA_ONLY:  # NFD's PCI label and the operator's deploy labels; no GFD's
        labels.update(
            {
                "feature.node.kubernetes.io/pci-10de.present": "true",
                "nvidia.com/gpu.deploy.container-toolkit": "true",
                "nvidia.com/gpu.deploy.driver": "false",
                "nvidia.com/gpu.deploy.device-plugin": "false",
                "nvidia.com/gpu.deploy.gpu-feature-discovery": "false",
            }
        )
    if n.name == KOORD:  # what koordlet reports of the node's GPUs, 100 per GPU
        gpus = {
            "koordinator.sh/gpu-core": "400",
            "koordinator.sh/gpu-memory-ratio": "400",
            "koordinator.sh/gpu-memory": f"{4 * L40S.memory_mib}Mi",
        }
        for key in ("capacity", "allocatable"):
            counts[key].update(gpus)
    return node


def count_pods(items: list[Obj], pods: list[Obj]) -> None:
    """The DaemonSets of `items` count the pods placed on the new nodes."""
    added: dict[tuple[str, str], int] = {}
    for p in pods:
        (ref,) = p["metadata"]["ownerReferences"]
        key = (p["metadata"]["namespace"], ref["name"])
        added[key] = added.get(key, 0) + 1
    for o in items:
        n = added.get((o["metadata"].get("namespace", ""), o["metadata"]["name"]), 0)
        if o["kind"] != "DaemonSet" or not n:
            continue
        status = o["status"]
        for key in ("current", "desired", "updated"):
            status[f"{key}NumberScheduled"] += n
        status["numberAvailable"] += n
        status["numberReady"] += n


def _dra_only_slice(ids: Ids) -> list[Obj]:
    """The node's ResourceSlice: eight A100s, as the kubelet plugin publishes them."""
    return [
        slice_of(
            ids,
            DRA_ONLY,
            8,
            DRA_PRODUCT,
            driver=DRA_DRIVER_VERSION,
            architecture="Ampere",
            compute="8.0.0",
            memory="81920Mi",
            cuda="12.4.0",
        )
    ]


def _koordinator(ids: Ids, c: Cluster) -> list[Obj]:
    """Koordinator's scheduler and manager, in a namespace the platform team labels theirs."""
    platform = k8s.Platform(ids)
    for name, image in KOORD_DEPLOYMENTS:
        platform.deploy(name, KOORD_NS, image, c.nodes[0].name)
    ns = k8s.namespace(ids, KOORD_NS, {"gpuposture.io/platform": "true"})
    return [ns, *platform.objects()]


def _koordinator_allocated(pods: list[Obj]) -> None:
    """koord-scheduler's pods: the GPU minor and share it allocated each, as it annotates them."""
    for p in pods:
        limits = p["spec"]["containers"][0]["resources"].get("limits", {})
        if "koordinator.sh/gpu-core" not in limits:
            continue
        share = {k: v for k, v in limits.items() if k.startswith("koordinator.sh/")}
        allocated = {"gpu": [{"minor": KOORD_MINOR, "resources": share}]}
        p["metadata"].setdefault("annotations", {})[
            "scheduling.koordinator.sh/device-allocated"
        ] = json.dumps(allocated)
        p["spec"]["schedulerName"] = "koord-scheduler"
