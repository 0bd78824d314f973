"""prod-east's first GPUs that are not NVIDIA's, added after every other object (demo/additions.py)
so those keep the ids they had.

- An AMD Instinct MI300X node, its eight GPUs in CPX compute partitioning (eight partitions
  each: `amd.com/gpu` 64) with NPS1 memory, run by AMD's GPU Operator in `kube-amd-gpu`
  (its DeviceConfig `default`: device plugin and node labeller). Research and analytics each
  hold one partition: partitions of one GPU share its memory under NPS1, and which GPU each is
  on is not visible (LEAK-002 "may share partitions", SHARE-002 and SHARE-003 as `mig_ci`).
- An Intel Data Center GPU Flex 170 node whose GPU plugin (Intel's device plugins operator)
  runs with sharedDevNum 4: one card as four `gpu.intel.com/i915`, two of them held by
  research's and analytics' render pods, which time-share the card (SHARE-001, certain).

Both pools carry only their vendor's generic taint, as the NVIDIA pools of K8S-002 do. Pure
Python: no Django, no network; deterministic for the `Ids` it is given.
"""

from __future__ import annotations

from dataclasses import replace

from demo import k8s
from demo.cluster_parts import ANA, NB, RES, Cluster, Work
from demo.k8s import Ids, NodeSpec, Obj
from demo.k8s_workloads import tenant_pods_of

# ruff: noqa: E501
# fmt: off
CLUSTER = "prod-east"
AMD_NS, INTEL_NS = "kube-amd-gpu", "inteldeviceplugins-system"
AMD_GPU, INTEL_GPU = "amd.com/gpu", "gpu.intel.com/i915"
NODES = (
    NodeSpec("pe-mi300x-01", "research-amd", taints=((AMD_GPU, None, "NoSchedule"),)),
    NodeSpec("pe-flex-01", "media-flex", taints=((INTEL_GPU, None, "NoSchedule"),)),
)
# What NFD and each vendor's labeller write, and what each device plugin advertises.
LABELS = {
    "pe-mi300x-01": {
        "feature.node.kubernetes.io/amd-gpu": "true",
        "amd.com/gpu.family": "AI",
        "amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM",
        "amd.com/gpu.device-id": "74a1",
        "amd.com/gpu.vram": "192G",
        "amd.com/gpu.driver-version": "6.10.5",
        "amd.com/compute-partitioning-supported": "true",
        "amd.com/memory-partitioning-supported": "true",
        "amd.com/compute-memory-partition": "cpx_nps1",
    },
    "pe-flex-01": {
        "feature.node.kubernetes.io/pci-0300_8086.present": "true",
        "gpu.intel.com/device-id.0300-56c0.present": "true",
        "gpu.intel.com/device-id.0300-56c0.count": "1",
        "gpu.intel.com/cards": "card0",
        "gpu.intel.com/memory.max": "17179869184",
    },
}
CAPACITY = {"pe-mi300x-01": {AMD_GPU: "64"}, "pe-flex-01": {INTEL_GPU: "4"}}
WORKS = {
    "pe-mi300x-01": (
        Work(RES, "rocm-finetune", "research/rocm-finetune:6.2-r1", {AMD_GPU: 1}, "Job"),
        Work(ANA, "rocm-forecast", "analytics/rocm-forecast:0.4.0", {AMD_GPU: 1}),
    ),
    "pe-flex-01": (
        Work(RES, "sim-render", "research/sim-render:2.3.1", {INTEL_GPU: 1}, "Job"),
        Work(NB, "clip-render", "analytics/clip-render:1.0.2", {INTEL_GPU: 1}),
    ),
}
PLUGIN_PATHS = ("/var/lib/kubelet/device-plugins", "/sys", "/dev")
AMD_PLUGIN = k8s.DaemonSetSpec("default-device-plugin", "device-plugin", "docker.io/rocm/k8s-device-plugin:1.31.0.6", AMD_NS, host_paths=PLUGIN_PATHS)
AMD_LABELLER = k8s.DaemonSetSpec("default-node-labeller", "node-labeller", "docker.io/rocm/k8s-device-plugin:labeller-1.31.0.6", AMD_NS, host_paths=("/sys", "/dev"))
INTEL_PLUGIN = k8s.DaemonSetSpec("intel-gpu-plugin-gpudeviceplugin", "intel-gpu-plugin", "docker.io/intel/intel-gpu-plugin:0.31.1", INTEL_NS,
                                 privileged=False, host_paths=("/dev/dri", "/sys/class/drm", "/var/lib/kubelet/device-plugins"))
OPERATORS = (  # (namespace, Deployment and its service account, image)
    (AMD_NS, "amd-gpu-operator-gpu-operator-charts-controller-manager", "docker.io/rocm/gpu-operator:v1.2.0"),
    (INTEL_NS, "inteldeviceplugins-controller-manager", "docker.io/intel/intel-deviceplugin-operator:0.31.1"),
)
# fmt: on


def other_vendors(ids: Ids, c: Cluster, items: list[Obj], cni: k8s.DaemonSetSpec) -> list[Obj]:
    """The two nodes, both vendors' operators and plugins, and the tenants' pods on them; the
    kube-proxy and CNI DaemonSets of `items` are given a pod on each node (in place)."""
    if c.name != CLUSTER:
        return []
    agents = k8s.Platform(ids)
    proxy = f"registry.k8s.io/kube-proxy:{c.host.kubelet}"
    for ds in (k8s.DaemonSetSpec("kube-proxy", "kube-proxy", proxy, "kube-system"), cni):
        for n in NODES:
            agents.place(ds, n.name)
    for o in items:  # their DaemonSets now count the new nodes' pods too
        if o["kind"] == "DaemonSet" and o["metadata"]["name"] in ("kube-proxy", cni.name):
            status = o["status"]
            for key in ("current", "desired", "updated"):
                status[f"{key}NumberScheduled"] += len(NODES)
            status["numberAvailable"] += len(NODES)
            status["numberReady"] += len(NODES)
    # gpuposture knows AMD's operator by its images; Intel's namespace the platform team labels.
    ours = [
        k8s.namespace(ids, AMD_NS),
        k8s.namespace(ids, INTEL_NS, {"gpuposture.io/platform": "true"}),
    ]
    ours += [
        k8s.obj("v1", "ServiceAccount", k8s.meta(ids, "ServiceAccount", "default", ns))
        for ns, _, _ in OPERATORS
    ]
    for n in NODES:
        node = k8s.node(ids, n, c.host, mig_strategy=c.mig_strategy, zone=c.zone)
        node["metadata"]["labels"].update(LABELS[n.name])
        for counts in ("capacity", "allocatable"):
            node["status"][counts].update(CAPACITY[n.name])
        ours.append(node)
    platform = k8s.Platform(ids)
    for ds in (AMD_PLUGIN, AMD_LABELLER):
        platform.place(ds, NODES[0].name)
    platform.place(INTEL_PLUGIN, NODES[1].name)
    for ns, name, image in OPERATORS:
        platform.deploy(name, ns, image, c.nodes[0].name)
    # The operators' charts bind their managers cluster-wide, as the GPU Operator's does.
    rules = [k8s.rule(["", "apps"], ["*"], ["*"])]
    ours += platform.objects() + agents.pods
    ours += [k8s.role(ids, name, rules) for _, name, _ in OPERATORS]
    ours += [
        k8s.binding(ids, name, name, f"ServiceAccount:{ns}/{name}") for ns, name, _ in OPERATORS
    ]
    pods, controllers = tenant_pods_of(ids, replace(c, nodes=NODES, works=WORKS, reservations=()))
    return ours + pods + controllers
