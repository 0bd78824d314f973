"""What kind of GPU node a Node object is, beyond "N whole NVIDIA GPUs". PURE.

- Which `nvidia.com/` resources are GPUs. NVIDIA's Network Operator advertises its NICs under
  the same prefix (SR-IOV VFs as `nvidia.com/hostdev`, `nvidia.com/sriov_rdma_vf`, any name the
  NicClusterPolicy chooses): a node with only those is not a GPU node. A GPU resource is the
  device plugin's (`nvidia.com/gpu`, `.shared`, MIG profiles, the names a sharing config
  advertises); any other `nvidia.com/` resource counts only on a node that says it has NVIDIA
  GPUs (GFD's or the operator's labels, or NFD's PCI vendor label 10de).
- GPU Operator sandbox workloads (`nvidia.com/gpu.workload.config`): on `vm-passthrough` nodes
  the GPUs are bound to vfio-pci and handed whole to KubeVirt VMs; on `vm-vgpu` nodes the vGPU
  Manager splits them into vGPUs for VMs. The operator runs its sandbox device plugin there,
  which advertises each GPU or vGPU type under its own name (`nvidia.com/GH100_H100_SXM5_80GB`,
  `nvidia.com/NVIDIA_A10-12Q`) and reads no device-plugin ConfigMap; no host driver (passthrough)
  and no container toolkit run there.
- MIG `single` strategy: GFD then overwrites `nvidia.com/gpu.count` with the number of MIG
  devices and appends `-MIG-<profile>` to `nvidia.com/gpu.product`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from inventory.snapshot import Pod
from inventory.snapshot.accelerators import sharing_judged
from inventory.snapshot.pods import is_nic_resource
from inventory.sources.images import is_sandbox_device_plugin

NV = "nvidia.com/"
WORKLOAD = NV + "gpu.workload.config"
# The vGPU config vgpu-device-manager applies to a vm-vgpu node (a name from its ConfigMap).
VGPU_CONFIG = NV + "vgpu.config"
PASSTHROUGH, VGPU_HOST = "vm-passthrough", "vm-vgpu"
# The node sharing strategy of each sandbox workload: a passthrough GPU is one VM's whole GPU.
SANDBOX_SHARING = {PASSTHROUGH: "none", VGPU_HOST: "vgpu"}
# Labels that say the node has NVIDIA GPUs, whatever its capacity shows.
GPU_LABELS = (
    NV + "gpu.present",
    NV + "gpu.product",
    NV + "gpu.count",
    WORKLOAD,
    "feature.node.kubernetes.io/pci-10de.present",
)
MIG_PRODUCT = "-MIG-"
DEVICE_PLUGIN_RESOURCES = (NV + "gpu", NV + "mig-")
FRACTIONAL = (NV + "gpumem", NV + "gpucores", NV + "gpumem-percentage")
# The sandbox device plugin's names: a passthrough GPU by its PCI device name, which starts with
# the NVIDIA chip ("GA100 [A100 PCIe 40GB]" -> GA100_A100_PCIE_40GB, TU104GL_TESLA_T4,
# GH100_H100_SXM5_80GB, AD102GL_L40S); a vGPU by its type ("NVIDIA A10-12Q" -> NVIDIA_A10-12Q,
# GRID_T4-16Q, NVIDIA_A100-1-5C for a MIG-backed vGPU): framebuffer size, then the series letter.
_PASSTHROUGH = re.compile(r"^nvidia\.com/(?:G[KMPVAHB]|TU|AD)\d{3}[A-Z]*_[A-Z0-9_]+$")
# The Kata sandbox device plugin (sandboxWorkloads.mode kata): a whole GPU for a Kata VM.
KATA_PASSTHROUGH = NV + "pgpu"
_VGPU_TYPE = re.compile(r"^nvidia\.com/(?:NVIDIA|GRID)_[A-Z0-9]+[A-Za-z0-9_-]*-\d+[A-Z]$")
# A MIG-backed vGPU type (NVIDIA vGPU types reference): `<gpu>-<GPU-instance slices>-<framebuffer
# GB><series>` ("NVIDIA A100-3-20C", "A30-2-12C", "H100XM-1-10C", a media-extension "A100-1-5CME"):
# the vGPU lives in a MIG GPU instance. A time-sliced type has no slice count ("A10-12Q",
# "H100XM-40C").
_MIG_BACKED = re.compile(r"^nvidia\.com/(?:NVIDIA|GRID)_([A-Z0-9]+)-(\d+)-\d+[A-Z]+$")
# GPUs on which a MIG-backed vGPU has its GPU instance to itself: Ampere (A100, A30, A800) and
# Hopper (H100, H200, H800, H20, GH200). Several time-sliced vGPUs in one GPU instance
# ("time-sliced MIG-backed vGPU") came with Blackwell (RTX PRO 4500/6000, named alike:
# "DC-2-8C" beside "DC-2-32C"), so elsewhere the name does not say whether the instance is shared.
_OWN_INSTANCE_GPUS = re.compile(r"^(?:A100|A30|A800|H100|H200|H800|H20|GH200)[A-Z]*$")


def vm_device_kind(resource: str) -> str | None:
    """ "passthrough" (a whole GPU for one VM) or "vgpu" (a vGPU of a shared GPU) for a resource
    the GPU Operator's sandbox device plugin advertises; None for any other name."""
    if resource == KATA_PASSTHROUGH:
        return "passthrough"
    if _VGPU_TYPE.match(resource) or _MIG_BACKED.match(resource):
        return "vgpu"
    return "passthrough" if _PASSTHROUGH.match(resource) else None


# The sandbox device plugin names a passthrough GPU by its pci.ids device name, upper-cased,
# "/" and "." and blanks made "_", brackets dropped: "GH100 [H100 SXM5 80GB]" ->
# GH100_H100_SXM5_80GB. After the chip, the bracketed marketing name; a "/" between two
# models ("GA107GL [A2 / A16]" -> GA107GL_A2___A16) leaves a run of "_": no one model.
_PASSTHROUGH_MODEL = re.compile(
    r"^nvidia\.com/(?:G[KMPVAHB]|TU|AD)\d{3}[A-Z]*_((?:[A-Z0-9]+)(?:_[A-Z0-9]+)*)$"
)


def passthrough_model(capacity: Mapping[str, int]) -> str | None:
    """The GPU model of a vm-passthrough node, from the PCI device name the sandbox device
    plugin advertises its GPUs under ("nvidia.com/GH100_H100_SXM5_80GB" -> NVIDIA-H100-SXM5-80GB,
    "AD102GL_L40S" -> NVIDIA-L40S), as GFD's product label spells models ("NVIDIA-" and the
    words, "-" between); None where no such name is offered, two models are, or a name holds
    no single model. A vGPU type names a vGPU, not the board (A100 40GB or 80GB), so it is
    not read."""
    models = {
        "NVIDIA-" + found.group(1).replace("_", "-")
        for name, count in capacity.items()
        if count > 0 and (found := _PASSTHROUGH_MODEL.match(name))
    }
    return models.pop() if len(models) == 1 else None


def mig_backed_vgpu(resource: str) -> tuple[str, int, bool] | None:
    """(GPU in the type name, GPU-instance slices, whether the vGPU surely has its GPU instance
    to itself) for a MIG-backed vGPU type the sandbox device plugin advertises; None for any
    other name. The last is False where the type name cannot say (a GPU that may time-slice
    several vGPUs in one instance, or one not known here): unknown, not unshared."""
    found = _MIG_BACKED.match(resource)
    if not found:
        return None
    gpu, slices = found.group(1), int(found.group(2))
    return gpu, slices, bool(_OWN_INSTANCE_GPUS.match(gpu))


# GFD's product label on a vGPU guest VM names the vGPU type NVML in the guest reports, spaces
# made "-" ("NVIDIA A100-4-20C" -> NVIDIA-A100-4-20C, "GRID A100-40C" -> GRID-A100-40C), where
# the sandbox device plugin makes the first one "_" (NVIDIA_A100-4-20C).
_GUEST_TYPE = re.compile(r"^(NVIDIA|GRID)-(.+)$")


def guest_mig_backed_vgpu(labels: Mapping[str, str]) -> tuple[str, str, int, bool] | None:
    """(vGPU type, then mig_backed_vgpu's GPU, slices, own instance) of a vGPU guest VM whose
    GFD product label names a MIG-backed vGPU type (`nvidia.com/vgpu.present=true`,
    `nvidia.com/gpu.product=NVIDIA-A100-4-20C`); None for a time-sliced type (A100-40C), any
    other node or a product it cannot read. Read by the same parser as the host's vGPU names."""
    if str(labels.get(NV + "vgpu.present", "")).strip().lower() != "true":
        return None
    product = str(labels.get(NV + "gpu.product", "")).strip()
    found = _GUEST_TYPE.match(product)
    backed = mig_backed_vgpu(f"{NV}{found.group(1)}_{found.group(2)}") if found else None
    return (product, *backed) if backed else None


def sandbox_workload(
    labels: Mapping[str, str], default: str = "", capacity: Mapping[str, int] | None = None
) -> str | None:
    """`vm-passthrough` or `vm-vgpu` when the GPU Operator gives this node's GPUs to VMs: its
    label, else the ClusterPolicy's `sandboxWorkloads.defaultWorkload` (`default`).

    Not while the node still advertises container GPU resources (`nvidia.com/gpu`,
    `nvidia.com/mig-*`: `capacity`): the label states the intent, but until the Operator has
    moved the node its container device plugin and toolkit still hand GPUs to pods, so it is
    judged as the container node it still is."""
    value = str(labels.get(WORKLOAD, default) or "").strip().lower()
    if value not in SANDBOX_SHARING:
        return None
    if capacity and any(n > 0 for r, n in capacity.items() if _container_gpu_resource(r)):
        return None
    return value


def _container_gpu_resource(resource: str) -> bool:
    return resource == "nvidia.com/gpu" or resource.startswith("nvidia.com/mig-")


def sandbox_default(specs: Iterable[Mapping[str, object]]) -> str:
    """The workload of unlabelled GPU nodes the ClusterPolicies set with sandbox workloads
    enabled; "" when none does, or two disagree."""
    found = {
        str(spec.get("sandbox_workloads_default") or "container")
        for spec in specs
        if spec.get("sandbox_workloads_enabled")
    }
    return found.pop() if len(found) == 1 else ""


def sandbox_gpus(
    workload: str | None,
    stated: int | None,
    labels: Mapping[str, str],
    capacity: Mapping[str, int],
) -> tuple[int | None, str]:
    """(physical GPUs, basis) of a GPU Operator sandbox node, whose capacity counts the devices
    VMs get. A count an input states (GFD's `nvidia.com/gpu.count` where GFD ran, a cloud's
    label or instance type: `stated`) is kept and named. Else a vm-passthrough node's capacity
    counts its GPUs one to one (the sandbox device plugin advertises each GPU bound to vfio-pci
    once, under its PCI device name). A vm-vgpu node's capacity counts vGPUs, and how many of
    its type one GPU holds is not read (vgpu-device-manager's `nvidia.com/vgpu.config` names a
    config, not a count): its count stays unknown, saying so, never the capacity divided by a
    guess. (stated, "") on any other node."""
    if workload not in SANDBOX_SHARING:
        return stated, ""
    if stated is not None:
        gfd = str(labels.get(NV + "gpu.count", "")).strip()
        source = (
            f"label {NV}gpu.count={gfd} (GPU Feature Discovery)"
            if gfd == str(stated)
            else "the cloud's GPU count label or instance type"
        )
        return stated, f"{source}; the node's capacity counts what VMs get, not GPUs"
    kind = "passthrough" if workload == PASSTHROUGH else "vgpu"
    found = {
        name: count
        for name, count in sorted(capacity.items())
        if count > 0 and vm_device_kind(name) == kind
    }
    listed = ", ".join(f"{name}={count}" for name, count in found.items())
    if kind == "passthrough":
        if not found:
            return None, ""
        return sum(found.values()), (
            f"capacity {listed}: the sandbox device plugin advertises each passthrough GPU once"
        )
    config = str(labels.get(VGPU_CONFIG, "")).strip()
    named = f"; {VGPU_CONFIG}={config} names the vGPU type, not a number of GPUs" if config else ""
    return None, (
        f"the capacity{f' {listed}' if listed else ''} counts vGPUs{named}; no input "
        f"states the physical GPUs ({NV}gpu.count, which GPU Feature Discovery writes but the "
        "GPU Operator does not run on vm-vgpu nodes, a cloud label, or an nvidia-smi import)"
    )


def vfio_gpus_beside(
    workload: str | None, stated: int | None, labels: Mapping[str, str], capacity: Mapping[str, int]
) -> tuple[int, str]:
    """(GPUs, basis) a container-mode node holds bound to vfio-pci beside those its NVIDIA
    driver runs: half a node's GPUs handed to KubeVirt VMs by a kubevirt-gpu-device-plugin,
    one passthrough resource per GPU (`nvidia.com/GH100_H100_SXM5_80GB: 4`). GFD's
    `nvidia.com/gpu.count` is NVML's count, and NVML never sees a GPU bound to vfio-pci, so
    the two are disjoint and the node's physical count is their sum, as a vm-passthrough
    node's is its passthrough capacity (sandbox_gpus). (0, "") on a sandbox node, where the
    count is not GFD's (a cloud's label counts every GPU of the instance), or no such
    resource is offered."""
    gfd = str(labels.get(NV + "gpu.count", "")).strip()
    if workload is not None or stated is None or gfd != str(stated):
        return 0, ""
    found = {
        name: count
        for name, count in sorted(capacity.items())
        if count > 0 and vm_device_kind(name) == "passthrough"
    }
    if not found:
        return 0, ""
    listed = ", ".join(f"{name}={count}" for name, count in found.items())
    vfio = sum(found.values())
    return vfio, (
        f"{stated + vfio}: label {NV}gpu.count={gfd} (GPU Feature Discovery, NVML's count of "
        f"the GPUs the NVIDIA driver holds) plus capacity {listed} (GPUs bound to vfio-pci for "
        "VMs, one resource each, which NVML does not see)"
    )


def sandbox_absent(workload: str) -> dict[str, str]:
    """What a GPU Operator sandbox node runs no version of: the container toolkit (no container
    gets a GPU there), and on passthrough nodes the host driver (vfio-pci holds the GPUs; the
    driver runs in each VM's guest). The vGPU Manager of a vm-vgpu node is its host driver."""
    why = f"nvidia.com/gpu.workload.config={workload}: the node's GPUs go to VMs"
    absent = {"container_toolkit": f"{why}; no container toolkit runs there"}
    if workload == PASSTHROUGH:
        absent["driver"] = f"{why} bound to vfio-pci; the NVIDIA driver runs in each guest"
    return absent


def sandbox_plugin_note(pods: Iterable[Pod]) -> str | None:
    """Why NVIDIA's device plugin is absent from a sandbox node though a device plugin serves
    it: the GPU Operator's sandbox device plugin pod on it, named with its image."""
    for pod in sorted(pods, key=lambda p: (p.namespace, p.name)):
        for container in pod.containers if pod.is_active else ():
            if is_sandbox_device_plugin(container.image):
                return (
                    f"NVIDIA's k8s-device-plugin does not run here: the sandbox device plugin "
                    f"serves the node's VMs (pod {pod.namespace}/{pod.name}, {container.image}); "
                    "NVIDIA's device-plugin bulletins do not name it"
                )
    return None


def says_nvidia_gpu(labels: Mapping[str, str]) -> bool:
    """A label of GFD, the operator or NFD (PCI vendor 10de) says the node has NVIDIA GPUs."""
    return any(
        str(labels.get(label, "")).strip().lower() not in ("", "false") for label in GPU_LABELS
    )


def is_gpu_resource(name: str, advertised: Iterable[str] = ()) -> bool:
    """A resource that is a GPU, a MIG device or a share of one by NVIDIA's device plugin or
    HAMi, a GPU or vGPU the sandbox device plugin gives to VMs, or a name the node's sharing
    config advertises (`advertised`)."""
    return (
        is_plugin_resource(name, advertised)
        or name in FRACTIONAL
        or vm_device_kind(name) is not None
    )


def is_plugin_resource(name: str, advertised: Iterable[str] = ()) -> bool:
    """A resource NVIDIA's device plugin advertises: a GPU, a MIG device, a share of one, or a
    name the node's sharing config advertises (`advertised`)."""
    base = name.removesuffix(".shared")
    return base == NV + "gpu" or base.startswith(NV + "mig-") or name in set(advertised)


def plugin_resources(
    capacity: Mapping[str, int], allocatable: Mapping[str, int], advertised: Iterable[str] = ()
) -> tuple[str, ...]:
    """The NVIDIA device plugin's resources the node offers. The kubelet advertises them only
    for a registered plugin, and their allocatable falls to 0 when it goes (capacity lingers)."""
    names = set(advertised)
    return tuple(
        sorted(
            name
            for name, count in capacity.items()
            if count > 0 and allocatable.get(name, count) > 0 and is_plugin_resource(name, names)
        )
    )


def gpu_capacity_of(
    capacity: Mapping[str, int], labels: Mapping[str, str], advertised: Iterable[str] = ()
) -> dict[str, int]:
    """The `nvidia.com/` capacity that stands for GPUs: everything on a node that says it has
    NVIDIA GPUs (a sandbox node's VM devices have names of their own) but the Network
    Operator's NICs, which pods' GPU holdings leave out the same way; else only the device
    plugin's resources."""
    if says_nvidia_gpu(labels):
        return {k: v for k, v in capacity.items() if not is_nic_resource(k)}
    names = tuple(advertised)
    return {k: v for k, v in capacity.items() if is_gpu_resource(k, names)}


def mig_single_overrides(labels: Mapping[str, str]) -> bool:
    """GFD ran with the MIG single strategy on MIG devices: its count label counts MIG devices
    and its product label names the profile, not the physical GPUs."""
    return labels.get(NV + "mig.strategy") == "single" and MIG_PRODUCT in labels.get(
        NV + "gpu.product", ""
    )


def physical_model(product: str) -> str:
    """The GPU model in a GFD product label, without GFD's `-MIG-<profile>` (single strategy)."""
    head, found, _profile = product.partition(MIG_PRODUCT)
    return head if found and head else product


# GFD labels each resource it advertises: `<resource>.sharing-strategy` and `.replicas`
# (`nvidia.com/mig-1g.10gb.sharing-strategy=time-slicing` on a mixed-strategy node whose MIG
# devices are time-sliced), not only `nvidia.com/gpu.*`.
_GFD_SHARING = {"time-slicing": "time_slicing", "mps": "mps", "none": "none"}


def gfd_resource_sharing(labels: Mapping[str, str], resource: str) -> tuple[str, int | None] | None:
    """(mode, replicas) GFD states for this resource's devices ("time_slicing", "mps", "none":
    not replicated, or "unknown": a value GFD never writes); None when it has no such label."""
    label = f"{resource}.sharing-strategy"
    if label not in labels:
        return None
    # A value GFD never writes is unknown (STACK-007 says which label), never unshared.
    mode = _GFD_SHARING.get(str(labels[label]).strip().lower(), "unknown")
    replicas = str(labels.get(f"{resource}.replicas", "")).strip()
    return mode, int(replicas) if replicas.isdigit() else None


def not_judged_warning(nodes: Mapping[str, list[str]], shown: int = 5) -> str | None:
    """One sync warning for every node whose accelerators gpuposture does not judge in full:
    their stack and telemetry are not read; their sharing is judged only where the node's
    labels and capacity show it (accelerators.sharing_judged), and said not judged otherwise."""
    if not nodes:
        return None
    names = sorted(nodes)
    listed = "; ".join(f"{n} ({', '.join(nodes[n])})" for n in names[:shown])
    more = f"; and {len(names) - shown} more" if len(names) > shown else ""
    resources = sorted({r for held in nodes.values() for r in held})
    judged = [r for r in resources if sharing_judged(r)]
    unjudged = [r for r in resources if not sharing_judged(r)]
    sharing = (
        f" Their sharing between tenants is judged from the node's labels and capacity for "
        f"{', '.join(judged)} (Intel sharedDevNum, AMD compute partitions: SHARE-001, "
        "SHARE-002 (AMD's), SHARE-003, SHARE-007, LEAK-002)."
        if judged
        else ""
    )
    if unjudged:
        sharing += (
            f" The sharing of {', '.join(unjudged)} is not judged: pods using them appear in "
            "no sharing check."
        )
    return (
        f"{len(names)} node(s) have accelerators gpuposture does not judge in full: {listed}"
        f"{more}. Their model, driver stack and telemetry are not read (no finding there "
        f"means not looked at, not safe).{sharing} AMD, Intel and Gaudi devices still count "
        "as GPUs for ownership, pools and taints, quotas, egress, admission and identity "
        "(TEN-001, POD-009, K8S-002, K8S-001, K8S-007, K8S-009, POD-010)"
    )
