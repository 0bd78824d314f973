"""Container image references: repository, vendor version, and which GPU-stack component.

The API reports versions of the GPU host stack only through image tags (`k8s-device-plugin:v0.17.0`,
`driver:550.90.07-ubuntu22.04`), so these rules decide what we may call a version. Anything that
does not start with a dotted release number is unknown, never guessed.
"""

from __future__ import annotations

import functools
import re

# A release number: at least major.minor, so a driver branch alone ("535" in the precompiled
# driver tag "535-5.15.0-1048-nvidia-ubuntu22.04") is not mistaken for a full version.
_RELEASE = re.compile(r"\d+(?:\.\d+)+")
# Pre-release markers stay part of the version: "0.15.0-rc.1" is below 0.15.0, not equal to it.
_PRERELEASE = re.compile(r"(?:rc|alpha|beta)\.?\d*", re.IGNORECASE)

# GKE's own device plugin (gke.gcr.io/nvidia-gpu-device-plugin), which GKE runs in kube-system
# instead of NVIDIA's; its tags are GKE builds (stack_version).
GKE_DEVICE_PLUGIN = "nvidia-gpu-device-plugin"
GKE_DCGM_EXPORTER = "gke-dcgm-exporter"
VGPU_MANAGER = "vgpu-manager"
VGPU_DEVICE_MANAGER = "vgpu-device-manager"
# Last path segment of the image repository -> the component it runs (NVIDIA's image names).
COMPONENTS: dict[str, str] = {
    "driver": "driver",
    # The GPU Operator's vGPU Manager (nvidia-vgpu-manager-daemonset, an image the user builds
    # as `<registry>/vgpu-manager:<version>-<os>`): the host driver of a vm-vgpu node.
    VGPU_MANAGER: "driver",
    "k8s-device-plugin": "device_plugin",
    "container-toolkit": "container_toolkit",
    "k8s-container-toolkit": "container_toolkit",
    "dcgm-exporter": "dcgm_exporter",
    "k8s-mig-manager": "mig_manager",
    "gpu-operator": "gpu_operator",
    "k8s-dra-driver-gpu": "dra_driver",  # its kubelet plugin hands out GPUs under DRA
    # The same driver before NVIDIA renamed it (nvcr.io/nvidia/cloud-native/k8s-dra-driver,
    # ghcr.io/nvidia/k8s-dra-driver, v0.x): its tag numbers the releases "NVIDIA DRA Driver for
    # GPUs" bulletins count from. Other vendors' DRA drivers (intel-gpu-resource-driver,
    # dra-example-driver) are named otherwise and stay unread.
    "k8s-dra-driver": "dra_driver",
    GKE_DEVICE_PLUGIN: "device_plugin",
    # GKE's managed DCGM exporter (gke-managed-system, gke.gcr.io): the same exporter, GKE-built.
    GKE_DCGM_EXPORTER: "dcgm_exporter",
    "nvidia-dcgm-exporter": "dcgm_exporter",
}
# NVIDIA AI Enterprise's pre-built vGPU guest driver, which the GPU Operator runs as the driver
# of a vGPU guest VM (`nvcr.io/nvaie/vgpu-guest-driver-<N>:<version>-<os>`, N the NVAIE major
# release; `vgpu-guest-driver` before NVAIE numbered it, and so in a private registry's mirror):
# the driver of that VM, read as `driver`. Its tag is the guest driver's version (535.104.05 of
# vGPU 16.1), never the host's vGPU Manager (550.90.05 beside guest 550.90.07), which runs on
# the hypervisor and is not this node's.
_VGPU_GUEST_DRIVER = re.compile(r"vgpu-guest-driver(?:-\d+)?")
# A GKE build suffix ("v0.0.35-gke.1"): the number before it is GKE's, not an NVIDIA release.
_GKE_BUILD = re.compile(r"-gke\.\d+", re.IGNORECASE)
GKE_BUILD_NOTE = "its image tag {tag!r} is a GKE build, not an NVIDIA release: version unknown"


# A cluster runs a few hundred distinct images in tens of thousands of containers: the pure
# functions below are cached by image reference.
@functools.lru_cache(maxsize=8192)
def image_version(image: str) -> tuple[str, str | None]:
    """(repository, version or None) of an image reference.

    `nvcr.io/nvidia/k8s-device-plugin:v0.14.5-ubi8` -> (`nvcr.io/nvidia/k8s-device-plugin`,
    `0.14.5`); `nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04` keeps `3.3.9-3.6.1`
    (DCGM version, then exporter version). A reference pinned only by digest has no version.
    """
    reference = image.strip().partition("@")[0]
    # A colon before the last slash belongs to a registry port (registry:5000/repo), not a tag.
    colon = reference.rfind(":")
    if colon > reference.rfind("/"):
        return reference[:colon], version_from_tag(reference[colon + 1 :])
    return reference, None


def version_from_tag(tag: str) -> str | None:
    """The vendor version at the start of a tag, without a leading `v` and without the
    `-ubuntu22.04` / `-ubi8` / `-distroless` flavour suffix; None when the tag is not a version
    (`latest`, `devel`, a branch-only precompiled driver tag)."""
    segments = tag.strip().split("-")
    first = segments[0][1:] if segments[0][:1] in ("v", "V") else segments[0]
    if not _RELEASE.fullmatch(first):
        return None
    kept = [first]
    for segment in segments[1:]:
        if not (_RELEASE.fullmatch(segment) or _PRERELEASE.fullmatch(segment)):
            break
        kept.append(segment)
    return "-".join(kept)


def stack_version(image: str) -> str | None:
    """The version of a GPU-stack component's image: image_version's, except a GKE build tag,
    which numbers GKE's own build and is never compared with an NVIDIA bulletin."""
    if gke_build_tag(image) and not _gke_dcgm_release(image):
        return None
    return image_version(image)[1]


# GKE tags its DCGM exporter as NVIDIA tags theirs, `<DCGM>-<exporter>`, with its build number
# in place of the OS flavour (4.4.1-4.6.0-gke.17 beside NVIDIA's 4.4.1-4.6.0-ubuntu22.04): the
# two numbers are NVIDIA's releases, read as for NVIDIA's image (DCGM 4.4.1, exporter 4.6.0).
_GKE_DCGM_TAG = re.compile(r"\d+(?:\.\d+)+-\d+(?:\.\d+)+-gke\.\d+", re.IGNORECASE)


def _gke_dcgm_release(image: str) -> bool:
    repository, _ = image_version(image)
    tag = gke_build_tag(image) or ""
    return repository.rsplit("/", 1)[-1] == GKE_DCGM_EXPORTER and bool(_GKE_DCGM_TAG.fullmatch(tag))


def is_vgpu_manager(image: str) -> bool:
    """The GPU Operator's vGPU Manager image: a driver whose bulletin rows are its own."""
    repository = image_version(image)[0]
    return "/" in repository and repository.rsplit("/", 1)[1] == VGPU_MANAGER


def is_vgpu_guest_driver(image: str) -> bool:
    """NVIDIA AI Enterprise's vGPU guest driver image (`vgpu-guest-driver-<N>`): the node is a
    vGPU guest VM and this is its own driver."""
    repository = image_version(image)[0]
    return "/" in repository and bool(_VGPU_GUEST_DRIVER.fullmatch(repository.rsplit("/", 1)[1]))


def is_vgpu_device_manager(image: str) -> bool:
    """The GPU Operator's vGPU Device Manager (nvcr.io/nvidia/cloud-native/vgpu-device-manager):
    no versioned stack component (COMPONENTS), but it reads the ConfigMap that splits each GPU
    of a vm-vgpu node into vGPUs (inventory.sources.gpu_config)."""
    repository = image_version(image)[0]
    return "/" in repository and repository.rsplit("/", 1)[1] == VGPU_DEVICE_MANAGER


def is_gke_device_plugin(image: str) -> bool:
    """GKE's own device plugin: none of NVIDIA's plugin flags or defaults apply to it."""
    return image_version(image)[0].rsplit("/", 1)[-1] == GKE_DEVICE_PLUGIN


def gke_build_tag(image: str) -> str | None:
    """The tag of an image tagged as a GKE build ("v0.0.35-gke.1"), else None."""
    reference = image.strip().partition("@")[0]
    colon = reference.rfind(":")
    tag = reference[colon + 1 :] if colon > reference.rfind("/") else ""
    return tag if _GKE_BUILD.search(tag) else None


# Other accelerator vendors, by a word their registries and repository paths carry: their
# images reuse NVIDIA's names (AMD's GPU Operator is `rocm/gpu-operator`, its device plugin
# `rocm/k8s-device-plugin`), so the last segment alone would take them for NVIDIA's and give a
# node AMD's version under NVIDIA's bulletins.
OTHER_VENDORS: dict[str, str] = {
    **dict.fromkeys(("amd", "amdgpu", "rocm", "radeon", "radeonopencompute", "xilinx"), "AMD"),
    **dict.fromkeys(("intel", "habana", "habanalabs", "gaudi"), "Intel"),
    **dict.fromkeys(("ascend", "ascendhub", "huawei"), "Huawei Ascend"),
    "cambricon": "Cambricon",
    "mthreads": "Moore Threads",
    "iluvatar": "Iluvatar CoreX",
    "metax": "MetaX",
    "hygon": "Hygon",
    "enflame": "Enflame",
}
_WORDS = re.compile(r"[^a-z0-9]+")


@functools.lru_cache(maxsize=8192)
def other_vendor(image: str) -> str | None:
    """The vendor other than NVIDIA whose image this is, by a word of its registry host or of
    its repository path before the image's own name (`rocm/gpu-operator` -> AMD,
    `vault.habana.ai/...` -> Intel); None where none names one. Words, not substrings: a path
    `amd64/...` or a host `amdahl.example` names no vendor."""
    repository, _ = image_version(image)
    path = repository.lower().split("/")[:-1]
    for word in (w for segment in path for w in _WORDS.split(segment)):
        if word in OTHER_VENDORS:
            return OTHER_VENDORS[word]
    return None


@functools.lru_cache(maxsize=8192)
def component_of(image: str) -> str | None:
    """Which NVIDIA GPU-stack component an image runs, from the last segment of its repository.
    NVIDIA's images always live under a path (`nvcr.io/nvidia/driver`); a bare `driver` is some
    Docker Hub library image, not theirs. Another vendor's image of the same name
    (`rocm/k8s-device-plugin`) is none (other_vendor). A mirror keeps NVIDIA's names
    (`registry.example.com/nvidia/gpu-operator`, or `registry.local/gpu-operator` with no vendor
    in its path at all): it is read as NVIDIA's, as real mirrors are laid out."""
    repository, _ = image_version(image)
    if "/" not in repository or other_vendor(image):
        return None
    if is_vgpu_guest_driver(image):
        return "driver"  # one name per NVAIE release (vgpu-guest-driver-5), not a fixed one
    return COMPONENTS.get(repository.rsplit("/", 1)[1])


def namesake(image: str) -> str | None:
    """The NVIDIA component whose image name another vendor's image carries (AMD's
    `rocm/gpu-operator` -> gpu_operator, `rocm/k8s-device-plugin` -> device_plugin): that
    vendor's GPU stack, never NVIDIA's component. None for NVIDIA's images and any other."""
    repository, _ = image_version(image)
    if "/" not in repository or not other_vendor(image):
        return None
    return COMPONENTS.get(repository.rsplit("/", 1)[1])


# GPU Feature Discovery ships in the device plugin's image since v0.15 and runs from it as
# `gpu-feature-discovery` (the GPU Operator's and the Helm chart's GFD containers are named so):
# the same image labels nodes there, it registers no devices. Read as the plugin, it gave a node
# whose plugin is another (HAMi, a host service) the NVIDIA plugin's version and its bulletins.
_GFD = "gpu-feature-discovery"


def container_component(name: str, image: str, command: tuple[str, ...] = ()) -> str | None:
    """Which GPU-stack component a container runs: its image's (component_of), except a GPU
    Feature Discovery container running the device plugin's image, which is none."""
    component = component_of(image)
    if component != "device_plugin":
        return component
    words = [name, *(part.rsplit("/", 1)[-1] for part in command[:1])]
    if any(word == "gfd" or word.startswith(_GFD) for word in words):
        return None
    return component


# Device plugins of other projects that hand out NVIDIA GPUs, by their image's last repository
# segment: the node's plugin is known to be theirs, so NVIDIA's plugin version is not what is
# missing (and NVIDIA's bulletins do not name their versions).
OTHER_DEVICE_PLUGINS = {
    "hami": "HAMi",
    "volcano-vgpu-device-plugin": "Volcano's vGPU device plugin",
    "gpushare-device-plugin": "Aliyun's gpushare device plugin",
}


# The GPU Operator's sandbox device plugin (nvidia-sandbox-device-plugin-daemonset): it hands
# passthrough GPUs and vGPUs to KubeVirt VMs. Not NVIDIA's k8s-device-plugin, whose bulletins
# never name it: no component of its own is judged, its presence is said (node_kinds).
SANDBOX_DEVICE_PLUGIN = "kubevirt-gpu-device-plugin"


# The GPU Operator's operands on nodes whose GPUs go to VMs (sandbox workloads: vm-passthrough,
# vm-vgpu, Kata, confidential computing), by their DaemonSet names in GPU Operator 24.x/25.x
# (assets/state-*): their images say less (the VFIO manager runs NVIDIA's CUDA base image, the
# sandbox validator the validator's, the sandbox device plugin kubevirt-gpu-device-plugin).
SANDBOX_OPERANDS = frozenset(
    {
        "nvidia-sandbox-device-plugin-daemonset",
        "nvidia-sandbox-validator",
        "nvidia-vfio-manager",
        "nvidia-vgpu-manager-daemonset",
        "nvidia-vgpu-device-manager",
        "nvidia-kata-manager",
        "nvidia-cc-manager",
    }
)


def is_sandbox_device_plugin(image: str) -> bool:
    repository = image_version(image)[0]
    return "/" in repository and repository.rsplit("/", 1)[1] == SANDBOX_DEVICE_PLUGIN


def other_device_plugin(image: str) -> str | None:
    """The project whose (non-NVIDIA) GPU device plugin an image runs, if it is one we know."""
    repository, _ = image_version(image)
    return OTHER_DEVICE_PLUGINS.get(repository.rsplit("/", 1)[-1])
