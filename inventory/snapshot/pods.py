"""The pods of a snapshot: containers, their env, volumes and the GPUs they ask for."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from inventory.snapshot.accelerators import is_judged_accelerator
from inventory.snapshot.pod_annotations import (
    FRACTION_ANNOTATIONS,
    FRACTION_CONTAINER_ANNOTATION,
)
from inventory.snapshot.pod_scope import PodScope
from inventory.snapshot.quantity import gpu_count
from inventory.snapshot_dra import PodClaim

GPU_RESOURCE_PREFIX = "nvidia.com/"
# GPU-sharing schedulers that advertise NVIDIA GPUs under their own names, and which one each
# name is: Volcano's vGPU device plugin (`volcano.sh/vgpu-number` shares, with `vgpu-memory` /
# `vgpu-cores` limits), Aliyun's gpushare / cGPU (`aliyun.com/gpu-mem`, GiB of one GPU, and
# cGPU's `gpu-core.percentage`), Koordinator's GPU share (`koordinator.sh/gpu`, `gpu-core`
# and `gpu-memory-ratio` in percent of one GPU, `gpu-memory`, `gpu.shared` GPUs shared) and
# Tencent's qGPU (`tke.cloud.tencent.com/qgpu-core` percent, `qgpu-memory` GiB). None gives
# hardware memory or fault isolation. Read with the nvidia.com/ ones.
SHARE_SCHEDULERS = {
    "volcano.sh/vgpu-number": "Volcano vGPU",
    "volcano.sh/vgpu-memory": "Volcano vGPU",
    "volcano.sh/vgpu-cores": "Volcano vGPU",
    "aliyun.com/gpu-mem": "Aliyun gpushare",
    "aliyun.com/gpu-core.percentage": "Aliyun gpushare",
    "koordinator.sh/gpu": "Koordinator GPU share",
    "koordinator.sh/gpu.shared": "Koordinator GPU share",
    "koordinator.sh/gpu-core": "Koordinator GPU share",
    "koordinator.sh/gpu-memory-ratio": "Koordinator GPU share",
    "koordinator.sh/gpu-memory": "Koordinator GPU share",
    "tke.cloud.tencent.com/qgpu-core": "Tencent qGPU",
    "tke.cloud.tencent.com/qgpu-memory": "Tencent qGPU",
}
SHARE_SCHEDULER_RESOURCES = frozenset(SHARE_SCHEDULERS)
# NVIDIA's Network Operator advertises NICs under the same prefix: SR-IOV VFs (`hostdev`,
# `sriov_rdma_vf`, `mlnx_sriov_netdevice`), shared RDMA devices (`rdma_shared_device_a`),
# InfiniBand VFs (`ib_sriov`). The NicClusterPolicy chooses the names, but they name the
# network kind; a GPU resource (`gpu`, `gpu.shared`, `mig-*`, a rename in a device-plugin
# config, the sandbox plugin's chip or vGPU type) never carries these words.
_NIC_WORDS = re.compile(r"rdma|sriov|hostdev|netdevice|mlnx|infiniband|(^|_)ib(_|$)|(^|_)vf(_|$)")
# The phase of a Pod built from a controller's pod template (Workload.template): a pod that does
# not exist, so it is never active and never counted where pods run; only the pod-hardening
# checks judge it (posture.inputs.PostureInputs.template_pods).
TEMPLATE_PHASE = "Template"


def recorded_time(value: object) -> datetime | None:
    """A time the kubelet recorded (RFC 3339 text as the API gives it: Pod.started_at and
    finished_at, a status's startTime, startedAt, finishedAt) as an aware datetime; None where
    absent or not a timestamp (unknown, never a guess)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


@dataclass(frozen=True)
class EnvVar:
    name: str
    # The literal value, or None when the value comes from a reference (secret, configmap, field).
    value: str | None
    value_from: str | None = None
    # configMapKeyRef / secretKeyRef: the object and key the value is read from (names only).
    source: str | None = None
    key: str | None = None
    # A literal value the product does not read is sealed at the boundary (inventory/env_seal.py):
    # `value` is SEALED_VALUE and only its length and, if it is one, the credential rule that
    # matched are kept, so no secret pasted into a pod spec reaches the database.
    length: int | None = None
    credential_rule: str | None = None
    credential_kind: str | None = None
    credential_hint: str | None = None
    # The vendor whose documented example key the sealed value is ("AWS"), if it is one.
    credential_example: str | None = None


@dataclass(frozen=True)
class VolumeMount:
    name: str
    mount_path: str
    read_only: bool = False
    # Only this part of the volume is mounted: subPath (relative, no "..": the API and the kubelet
    # keep it inside the volume), or subPathExpr, which expands the container's env at start.
    sub_path: str = ""
    sub_path_expr: str = ""


@dataclass(frozen=True)
class Volume:
    name: str
    host_path: str | None = None
    kind: str = "other"
    # persistentVolumeClaim: the claim's name and, when the snapshot holds the PersistentVolume
    # of type hostPath or local bound to it (inventory/sources/persistent_volumes.py), that PV
    # and its path on the node; `pv_local` when that PV is of type local (a disk, partition or
    # directory the kubelet mounts: a path under /dev is then one device, not the node's /dev).
    # A generic ephemeral volume (kind "ephemeral") names the claim made for it likewise.
    claim: str | None = None
    persistent_volume: str | None = None
    pv_path: str | None = None
    pv_local: bool = False
    # configMap: the ConfigMap's name and its `items` as path -> key (none: every key is a file
    # named after it). A device plugin with no config-manager reads its config file from here.
    config_map: str | None = None
    config_items: dict[str, str] = field(default_factory=dict)
    # image (Kubernetes 1.31+): the OCI image or artifact mounted read-only, its
    # `image.reference` as written ("" when the spec names none); POD-007 judges it as it
    # judges a container's image. None for any other volume.
    image: str | None = None


@dataclass(frozen=True)
class Container:
    name: str
    image: str
    init: bool = False
    # An init container with `restartPolicy: Always` (a native sidecar, Kubernetes 1.29+): it
    # starts before the app containers and runs beside them for the pod's life.
    sidecar: bool = False
    ephemeral: bool = False  # a debug container (spec.ephemeralContainers)
    privileged: bool = False
    # A Windows HostProcess container (windowsOptions.hostProcess: true) runs as a process on the
    # node with its full access, the Windows equivalent of privileged: "container" or "pod" says
    # which securityContext sets it (the container's overrides the pod's), None when not one.
    host_process: str | None = None
    allow_privilege_escalation: bool | None = None
    run_as_non_root: bool | None = None
    capabilities_add: tuple[str, ...] = ()
    capabilities_drop: tuple[str, ...] = ()
    # Positions in capabilities_add of names written with the CAP_ prefix. containerd prefixes
    # CAP_ itself, so runc gets CAP_CAP_... and ignores it: only CRI-O and Docker grant these.
    capabilities_add_prefixed: tuple[int, ...] = ()
    # Only resources whose name starts with "nvidia.com/" and SHARE_SCHEDULER_RESOURCES, values
    # as quantity strings.
    gpu_requests: dict[str, str] = field(default_factory=dict)
    gpu_limits: dict[str, str] = field(default_factory=dict)
    # Other vendors' accelerators (inventory.snapshot.accelerators.OTHER_ACCELERATORS:
    # amd.com/gpu, ...), whole devices their device plugins allocate; the limit wins over the
    # request. Their sharing is not judged, but LeftoverLocals (LEAK-002) needs who holds AMD
    # GPUs, and the vendor-neutral checks who holds any (Pod.accelerator_resources).
    accelerators: dict[str, str] = field(default_factory=dict)
    # The same resources' requests and limits as written (POD-006 compares them).
    accelerator_requests: dict[str, str] = field(default_factory=dict)
    accelerator_limits: dict[str, str] = field(default_factory=dict)
    env: tuple[EnvVar, ...] = ()
    volume_mounts: tuple[VolumeMount, ...] = ()
    ports: tuple[int, ...] = ()
    # The names of its ports (a Service's named targetPort resolves against them) and the node
    # ports they are bound to (hostPort: reachable at the node's address, no Service needed).
    named_ports: dict[str, int] = field(default_factory=dict)
    host_ports: tuple[int, ...] = ()
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    # envFrom sources as "secretRef:NAME" / "configMapRef:NAME", with ":PREFIX" appended when the
    # source has a prefix (names cannot hold a colon). Values are resolved only for
    # NVIDIA_VISIBLE_DEVICES, from ClusterSnapshot.env_configmaps.
    env_from: tuple[str, ...] = ()

    def env_from_sources(self) -> list[tuple[str, str, str]]:
        """(kind, name, prefix) of each envFrom source, in the order Kubernetes applies them."""
        parts = [source.split(":", 2) for source in self.env_from]
        return [(p[0], p[1] if len(p) > 1 else "", p[2] if len(p) > 2 else "") for p in parts]


@dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    node_name: str | None = None
    phase: str = "Unknown"
    service_account: str = "default"
    host_pid: bool = False
    host_ipc: bool = False
    host_network: bool = False
    # spec.hostUsers: False runs the pod in its own user namespace (Kubernetes 1.33+ by default),
    # where the capabilities it holds are not valid on the host; None when unset (the host's).
    host_users: bool | None = None
    containers: tuple[Container, ...] = ()
    volumes: tuple[Volume, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)
    owner_kind: str | None = None
    owner_name: str | None = None
    # The owner reference's uid and apiVersion as written ("" where it gives none), and what
    # the snapshot holds of that owner (OWNER_FOUND in inventory.owners: "read", "absent",
    # "replaced" by another object of its name, "elsewhere"; "" where not recorded: a pod
    # stored before it was, a watched pod, a template). Kubernetes knows an owner by its uid.
    owner_uid: str = ""
    owner_api_version: str = ""
    owner_found: str = ""
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[dict[str, str], ...] = ()
    # GPU scheduling annotations only (GPU_ANNOTATIONS: KAI / Run:ai fractions and reservations,
    # HAMi's allocation), the mesh's (MESH_ANNOTATIONS: Istio's traffic capture, a mesh
    # injector's record of its sidecar) and OpenKruise's SidecarSet record (INJECTOR_ANNOTATIONS);
    # every other annotation is dropped when the pod is read.
    annotations: dict[str, str] = field(default_factory=dict)
    # DRA: spec.resourceClaims, each with the claim it resolved to (status.resourceClaimStatuses),
    # then the claim made for its extended-resource requests where DRA serves them (KEP-5004)
    resource_claims: tuple[PodClaim, ...] = ()
    # spec.runtimeClassName, and its RuntimeClass's handler where the snapshot holds that
    # object (None: not read). A Running pod under NVIDIA's runtime shows the node has GPUs
    # (inventory.sources.nvidia_runtime).
    runtime_class: str | None = None
    runtime_handler: str | None = None
    # When the pod began and ceased to hold its devices, as the kubelet recorded them (RFC 3339
    # text as the API gives it, None where not recorded): `started_at` the earliest of
    # status.startTime and its containers' state startedAt; `finished_at` the latest
    # state.terminated.finishedAt once every app container has terminated. ATTR-001 counts a
    # pod as holding its GPUs only between them (telemetry.held_span).
    started_at: str | None = None
    finished_at: str | None = None
    # What scoped ResourceQuotas match it by; None where not read (stored before it was kept).
    quota_scope: PodScope | None = None

    @property
    def gpu_fraction(self) -> dict[str, str]:
        """The KAI Scheduler / Run:ai fraction this pod asks for (`gpu-fraction`, `gpu-memory`):
        a share of a GPU held for it by a reservation pod, with no nvidia.com/* request."""
        return {k: v for k in FRACTION_ANNOTATIONS if (v := self.annotations.get(k, "").strip())}

    @property
    def fraction_container(self) -> Container | None:
        """The container KAI's binder hands the fraction's GPU to (NVIDIA_VISIBLE_DEVICES from
        the `...-shared-gpu-0` ConfigMap), or None for no fraction: the one the
        `gpu-fraction-container-name` annotation names, looked up among the app containers and
        then the init containers (a sidecar may carry it), else the first app container. A
        name that matches no container is None: KAI refuses to bind such a pod."""
        if not self.gpu_fraction:
            return None
        app = [c for c in self.containers if not c.init and not c.ephemeral]
        named = self.annotations.get(FRACTION_CONTAINER_ANNOTATION, "").strip()
        if not named:
            return app[0] if app else None
        init = [c for c in self.containers if c.init and not c.ephemeral]
        return next((c for c in [*app, *init] if c.name == named), None)

    @property
    def uses_gpu(self) -> bool:
        """Holds a GPU resource or a GPU fraction."""
        return bool(self.gpu_resources) or bool(self.gpu_fraction)

    @property
    def gpu_resources(self) -> dict[str, int]:
        """GPU resources this pod holds (not the Network Operator's NICs under the same
        prefix, is_nic_resource), as the scheduler counts them: limits win (requests
        default to limits for extended resources), summed over app containers and native
        sidecars (they run together); an init container runs to completion before the next
        one starts, beside only the sidecars declared before it, so it counts only where
        that exceeds the rest."""
        served = self.dra_served
        return _scheduled(
            self.containers,
            lambda c: {
                name: gpu_count(qty)
                for name, qty in {**c.gpu_requests, **c.gpu_limits}.items()
                if not is_nic_resource(name) and (c.name, name) not in served
            },
        )

    @property
    def dra_served(self) -> frozenset[tuple[str, str]]:
        """The (container, resource) extended-resource requests DRA serves (KEP-5004: the
        claim status.extendedResourceClaimStatus names holds them, PodClaim.extended). No
        device plugin allocates those: the node may list no such capacity at all, so counting
        them as a device-plugin holding would invent a device-less GPU beside the claim's."""
        return frozenset(pair for entry in self.resource_claims for pair in entry.extended)

    @property
    def accelerator_resources(self) -> dict[str, int]:
        """Every accelerator this pod holds through a device plugin, whatever the vendor: its
        NVIDIA GPU resources (gpu_resources) and the other vendors' accelerators the
        vendor-neutral checks judge (accelerators.is_judged_accelerator), counted as the
        scheduler counts them (gpu_resources)."""
        served = self.dra_served
        others = _scheduled(
            self.containers,
            lambda c: {
                name: gpu_count(qty)
                for name, qty in c.accelerators.items()
                if is_judged_accelerator(name) and (c.name, name) not in served
            },
        )
        return {**self.gpu_resources, **others}

    @property
    def held_resources(self) -> dict[str, int]:
        """Every accelerator the pod holds through a device plugin, any vendor's, judged or not
        (an AWS Neuron core too), counted as the scheduler counts them: what the workloads API
        and the node page show as its GPU resources, so a pod holding an AMD GPU never reads
        as holding none."""
        served = self.dra_served
        others = _scheduled(
            self.containers,
            lambda c: {
                n: gpu_count(q) for n, q in c.accelerators.items() if (c.name, n) not in served
            },
        )
        return {**self.gpu_resources, **others}

    @property
    def other_accelerators(self) -> dict[str, int]:
        """Other vendors' accelerators the pod's containers ask for (any container: a debug
        one holds none), with a positive count."""
        found: dict[str, int] = {}
        served = self.dra_served
        for c in self.containers:
            asked = {
                n: gpu_count(q) for n, q in c.accelerators.items() if (c.name, n) not in served
            }
            _add(found, asked)
        return {k: v for k, v in found.items() if v > 0}

    @property
    def is_active(self) -> bool:
        return self.phase in ("Pending", "Running", "Unknown")


def _scheduled(
    containers: tuple[Container, ...], asked_of: Callable[[Container], dict[str, int]]
) -> dict[str, int]:
    """The devices a pod holds of what each container asks (`asked_of`), as the scheduler
    counts them (Pod.gpu_resources), with a positive count."""
    apps: dict[str, int] = {}
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for c in containers:
        asked = asked_of(c)
        if not c.init:
            _add(apps, asked)
            continue
        if c.sidecar:
            _add(sidecars, asked)
        for name in asked:
            running = sidecars.get(name, 0) + (0 if c.sidecar else asked[name])
            init_peak[name] = max(init_peak.get(name, 0), running)
    totals = dict(apps)
    _add(totals, sidecars)
    for name, n in init_peak.items():
        totals[name] = max(totals.get(name, 0), n)
    return {k: v for k, v in totals.items() if v > 0}


def is_nic_resource(name: str) -> bool:
    """An `nvidia.com/` resource of the Network Operator (a NIC, not a GPU): holding one gives
    a pod no GPU, so it counts in no GPU check (quota, egress, admission, pool placement)."""
    if not name.startswith(GPU_RESOURCE_PREFIX):
        return False
    local = name[len(GPU_RESOURCE_PREFIX) :].lower()
    return not local.startswith(("gpu", "mig-")) and bool(_NIC_WORDS.search(local))


def _add(totals: dict[str, int], more: dict[str, int]) -> None:
    for name, n in more.items():
        totals[name] = totals.get(name, 0) + n
