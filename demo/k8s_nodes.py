"""Builders for the demo's Node objects: GFD labels (or, on GKE, GKE's own GPU labels), GPU
capacity, the kubelet's status.

Pure Python: no Django, no network.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from demo.k8s_base import SNAPSHOT_AT, TOOLKIT, Ids, Obj, meta, obj

_CUDA_OF_BRANCH = {"535": "12.2", "550": "12.4", "570": "12.8"}


# --- Nodes -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Host:
    os_image: str
    kernel: str
    runtime: str
    kubelet: str


@dataclass(frozen=True)
class GpuModel:
    product: str  # the GFD nvidia.com/gpu.product label
    memory_mib: int
    family: str
    compute: tuple[int, int]
    mig_capable: bool
    machine: str  # the server, as GFD's nvidia.com/gpu.machine names it
    cpu: int
    memory_gib: int


@dataclass(frozen=True)
class NodeSpec:
    name: str
    pool: str
    model: GpuModel | None = None  # None: a CPU-only node
    count: int = 0  # physical GPUs
    sharing: str = "none"  # GFD nvidia.com/gpu.sharing-strategy: none, time-slicing, mps
    replicas: int = 1
    plugin_config: str | None = None  # a key of the time-slicing-config ConfigMap
    mig_config: str | None = None  # the mig-parted profile; MIG-capable GPUs only
    mig_layout: dict[str, int] = field(default_factory=dict)  # MIG resources per GPU
    taints: tuple[tuple[str, str | None, str], ...] = ()  # (key, value, effect)
    driver: str = "550.90.07"
    driver_labels: str = "full"  # "full" (GFD >= 0.15), "legacy" (GFD 0.8), "none"
    toolkit_image: str = TOOLKIT
    legacy_plugin: bool = False  # a standalone plugin v0.14.5 + GFD v0.8.2, not the operator's
    dcgm_exporter: bool = True  # False: the admin switched the operator's exporter off here
    host: Host | None = None  # overrides the cluster's usual host
    mig_state: str = "success"  # nvidia.com/mig.config.state, as MIG Manager last wrote it
    # Time-slicing of the first N GPUs only, advertised under `sliced_resource` (the device
    # plugin's `rename` and `devices`); the other GPUs stay whole nvidia.com/gpu. 0: all GPUs.
    sliced_devices: int = 0
    sliced_resource: str = "nvidia.com/gpu"
    # A GKE node: its accelerator type (cloud.google.com/gke-accelerator). GKE runs no GFD; its
    # labels say the sharing (`sharing`/`replicas` as GKE time-sharing or MPS) instead.
    gke_accelerator: str | None = None


def _driver_labels(n: NodeSpec) -> dict[str, str]:
    major, minor, rev = n.driver.split(".")
    cuda_major, cuda_minor = _CUDA_OF_BRANCH.get(major, "12.4").split(".")
    if n.driver_labels == "none":
        return {}
    if n.driver_labels == "legacy":
        p = "nvidia.com/cuda"
        return {
            f"{p}.driver.major": major,
            f"{p}.driver.minor": minor,
            f"{p}.driver.rev": rev,
            f"{p}.runtime.major": cuda_major,
            f"{p}.runtime.minor": cuda_minor,
        }
    p = "nvidia.com/cuda.driver-version"
    r = "nvidia.com/cuda.runtime-version"
    return {
        f"{p}.full": n.driver,
        f"{p}.major": major,
        f"{p}.minor": minor,
        f"{p}.revision": rev,
        f"{r}.full": f"{cuda_major}.{cuda_minor}",
        f"{r}.major": cuda_major,
        f"{r}.minor": cuda_minor,
    }


def gfd_labels(n: NodeSpec, mig_strategy: str) -> dict[str, str]:
    """The labels GPU Feature Discovery (and the GPU Operator) put on a GPU node."""
    assert n.model is not None
    m, g = n.model, "nvidia.com/gpu"
    labels = {
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "nvidia.com/gfd.timestamp": str(int(SNAPSHOT_AT.timestamp()) - 3600),
        f"{g}.compute.major": str(m.compute[0]),
        f"{g}.compute.minor": str(m.compute[1]),
        f"{g}.count": str(n.count),
        f"{g}.family": m.family,
        f"{g}.machine": m.machine,
        f"{g}.memory": str(m.memory_mib),
        f"{g}.mode": "compute",
        f"{g}.present": "true",
        # With time-slicing or MPS (renameByDefault false) GFD appends -SHARED to the product.
        f"{g}.product": m.product + ("-SHARED" if n.sharing != "none" else ""),
        f"{g}.replicas": str(n.replicas),
        "nvidia.com/mig.capable": str(m.mig_capable).lower(),
        "nvidia.com/mig.strategy": mig_strategy,
        "nvidia.com/mps.capable": str(n.sharing == "mps").lower(),
        **_driver_labels(n),
    }
    # The operator runs an operand on a node only where its deploy label is "true".
    for part in ("container-toolkit", "driver", "operator-validator"):
        labels[f"{g}.deploy.{part}"] = "true"
    labels[f"{g}.deploy.dcgm-exporter"] = str(n.dcgm_exporter).lower()
    if n.legacy_plugin:  # the operator is told to keep its own plugin and GFD off this node
        labels[f"{g}.deploy.device-plugin"] = "false"
        labels[f"{g}.deploy.gpu-feature-discovery"] = "false"
    else:  # the sharing-strategy label arrived with GFD in plugin v0.15
        labels[f"{g}.sharing-strategy"] = n.sharing
        labels[f"{g}.deploy.device-plugin"] = "true"
        labels[f"{g}.deploy.gpu-feature-discovery"] = "true"
    if n.plugin_config:
        labels["nvidia.com/device-plugin.config"] = n.plugin_config
    if m.mig_capable:
        labels[f"{g}.deploy.mig-manager"] = "true"
        labels["nvidia.com/mig.config"] = n.mig_config or "all-disabled"
        labels["nvidia.com/mig.config.state"] = n.mig_state
        for resource, per_gpu in n.mig_layout.items():
            profile = resource.removeprefix("nvidia.com/mig-")
            labels[f"nvidia.com/mig-{profile}.count"] = str(per_gpu * n.count)
            labels[f"nvidia.com/mig-{profile}.slices.gi"] = profile.split("g.")[0]
    return labels


def gke_labels(n: NodeSpec) -> dict[str, str]:
    """The labels GKE puts on a GPU node of a pool created with GPU sharing (no GFD labels)."""
    g = "cloud.google.com/"
    labels = {
        g + "gke-accelerator": n.gke_accelerator or "",
        g + "gke-nodepool": n.pool,
        g + "gke-gpu-driver-version": "latest",  # a driver channel, not a version
        # Workload Identity on the pool: GKE's metadata server runs on the node.
        "iam.gke.io/gke-metadata-server-enabled": "true",
    }
    if n.sharing != "none":
        labels[g + "gke-gpu-sharing-strategy"] = {"time-slicing": "time-sharing"}.get(
            n.sharing, n.sharing
        )
        labels[g + "gke-max-shared-clients-per-gpu"] = str(n.replicas)
    return labels


def gpu_capacity(n: NodeSpec) -> dict[str, str]:
    if n.sliced_devices:  # replicas of the sliced GPUs under their own name, the rest whole
        whole, sliced = n.count - n.sliced_devices, n.sliced_devices * n.replicas
        return {"nvidia.com/gpu": str(whole), n.sliced_resource: str(sliced)}
    if n.mig_layout:  # mixed strategy: the whole GPUs disappear behind their MIG resources
        return {"nvidia.com/gpu": "0", **{k: str(v * n.count) for k, v in n.mig_layout.items()}}
    return {"nvidia.com/gpu": str(n.count * n.replicas)}  # time-slicing and MPS multiply


def node(ids: Ids, n: NodeSpec, host: Host, *, mig_strategy: str, zone: str | None) -> Obj:
    cpu, mem_gib = (n.model.cpu, n.model.memory_gib) if n.model else (64, 256)
    host = n.host or host
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "gpuposture.io/pool": n.pool,
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": n.name,
        "kubernetes.io/os": "linux",
    }
    if zone:
        labels["topology.kubernetes.io/region"] = zone[:-1]
        labels["topology.kubernetes.io/zone"] = zone
    capacity = {
        "cpu": str(cpu),
        "ephemeral-storage": "1869170768Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{mem_gib * 1024**2}Ki",
        "pods": "110",
    }
    if n.model:
        labels.update(gke_labels(n) if n.gke_accelerator else gfd_labels(n, mig_strategy))
        capacity.update(gpu_capacity(n))
    # The kubelet reserves some CPU and memory for the system; GPUs are never reserved.
    allocatable = {
        **capacity,
        "cpu": f"{cpu * 1000 - 500}m",
        "memory": f"{(mem_gib - 2) * 1024**2}Ki",
    }
    ip = ids.node_ip(n.name)
    spec: Obj = {"podCIDR": f"10.244.{ip.rsplit('.', 1)[1]}.0/24"}
    spec["podCIDRs"] = [spec["podCIDR"]]
    if zone and n.gke_accelerator:
        spec["providerID"] = f"gce://example-ml-project/{zone}/{n.name}"
    elif zone:
        spec["providerID"] = f"nimbus://{zone}/{ids.uid('vm/' + n.name)}"  # the GPU cloud's VM id
    if n.taints:
        spec["taints"] = [
            {k: v for k, v in (("effect", effect), ("key", key), ("value", value)) if v}
            for key, value, effect in n.taints
        ]
    since = ids.ago(24, 24 * 30)
    conditions = [
        {"lastTransitionTime": since, "reason": f"Kubelet{reason}", "status": status, "type": kind}
        for kind, status, reason in (
            ("MemoryPressure", "False", "HasSufficientMemory"),
            ("DiskPressure", "False", "HasNoDiskPressure"),
            ("Ready", "True", "Ready"),
        )
    ]
    node_info = {
        "architecture": "amd64",
        "bootID": ids.uid("boot/" + n.name),
        "containerRuntimeVersion": host.runtime,
        "kernelVersion": host.kernel,
        "kubeProxyVersion": host.kubelet,
        "kubeletVersion": host.kubelet,
        "machineID": ids.uid("machine/" + n.name).replace("-", ""),
        "operatingSystem": "linux",
        "osImage": host.os_image,
        "systemUUID": ids.uid("system/" + n.name).upper(),
    }
    status = {
        "addresses": [
            {"address": ip, "type": "InternalIP"},
            {"address": n.name, "type": "Hostname"},
        ],
        "allocatable": allocatable,
        "capacity": capacity,
        "conditions": conditions,
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": node_info,
    }
    m = meta(ids, "Node", n.name, labels=labels, age_hours=(24 * 30, 24 * 500))
    return obj("v1", "Node", m, spec=spec, status=status)
