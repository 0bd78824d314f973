"""POD-001..005: pod hardening of tenant workloads (DESIGN §2). Platform pods never count."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from inventory.snapshot import Container, Pod, Volume
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import (
    container_path,
    mounts_of,
    normalise_host_path,
    path_within,
    pod_draft,
    tenant_pods,
)
from posture.rules.registry import FindingDraft, check

# Host paths whose mount hands the container the node: devices, kernel interfaces, or the
# container runtime's API. /var/run is a symlink to /run on every current distribution, so
# paths are compared after mapping /var/run to /run.
HOST_DEVICE_ROOTS = ("/dev", "/proc", "/sys")
RUNTIME_SOCKETS = (
    "/run/docker.sock",
    "/run/containerd",  # containerd.sock and the shim sockets live under it
    "/run/crio",
    "/run/cri-dockerd.sock",
    "/run/k3s/containerd",
)
NVIDIA_CAPS = "/dev/nvidia-caps"
# NVIDIA Container Toolkit variables that inject /dev/nvidia-caps mig-config / mig-monitor.
MIG_CAP_ENV = ("NVIDIA_MIG_CONFIG_DEVICES", "NVIDIA_MIG_MONITOR_DEVICES")
MIG_CAP_ENV_OFF = ("", "none", "void")


def _containers(pod: Pod) -> list[tuple[Container, str]]:
    return [(c, container_path(pod, c)) for c in pod.containers]


@check(
    id="POD-001",
    title="Privileged container in a tenant pod",
    severity="critical",
    scope="tenant",
    rationale=(
        "A privileged container gets every capability, every host device under /dev (all "
        "GPUs, /dev/nvidia-caps, disks) and no seccomp or AppArmor confinement: it can load "
        "kernel modules, reconfigure MIG for every tenant on the node and escape to the host "
        "(ATT&CK T1611). No tenant workload needs it to use a GPU: the device plugin injects "
        "the devices it was allocated."
    ),
    remediation=(
        "Remove `securityContext.privileged: true` from the container at the path in the "
        "evidence (or set it to false), request GPUs through `resources.limits` "
        "(`nvidia.com/gpu` or a MIG resource), and enforce the Pod Security Standard "
        "`baseline` or `restricted` on the tenant namespace with the label "
        "`pod-security.kubernetes.io/enforce: restricted`."
    ),
    mappings=("ATT&CK:T1611", "SP800-53:AC-6"),
)
def privileged_container(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for pod, tenant in tenant_pods(inputs):
        for container, path in _containers(pod):
            if not container.privileged:
                continue
            evidence = {
                "container": container.name,
                "image": container.image,
                "init_container": container.init,
                "field": f"{path}.securityContext.privileged",
                "value": True,
            }
            title = f"Container {container.name} of pod {pod.namespace}/{pod.name} is privileged"
            yield pod_draft("POD-001", pod, tenant, evidence, key=container.name, title=title)


@check(
    id="POD-002",
    title="Tenant pod shares the host's PID, IPC or network namespace",
    severity="high",
    scope="tenant",
    rationale=(
        "hostPID lets the pod see and signal every process on the node, including other "
        "tenants' GPU processes and the device plugin, and read their environment through "
        "/proc; hostIPC exposes host shared memory, which CUDA IPC and NCCL use between "
        "processes; hostNetwork bypasses NetworkPolicy and reaches node-local services such "
        "as the kubelet and DCGM-Exporter. Each is a step toward escaping to the node (T1611)."
    ),
    remediation=(
        "Remove `spec.hostPID`, `spec.hostIPC` and `spec.hostNetwork` (or set them to false) "
        "in the pod template named in the evidence; NCCL inside one pod does not need hostIPC. "
        "Enforce `pod-security.kubernetes.io/enforce: baseline` (or restricted) on the "
        "tenant namespace so the API server rejects them."
    ),
    mappings=("ATT&CK:T1611", "SP800-53:SC-39"),
)
def host_namespaces(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for pod, tenant in tenant_pods(inputs):
        shared = {
            "spec.hostPID": pod.host_pid,
            "spec.hostIPC": pod.host_ipc,
            "spec.hostNetwork": pod.host_network,
        }
        fields = {name: True for name, on in shared.items() if on}
        if not fields:
            continue
        which = ", ".join(name.removeprefix("spec.") for name in fields)
        title = f"Pod {pod.namespace}/{pod.name} uses {which}"
        yield pod_draft("POD-002", pod, tenant, {"fields": fields}, title=title)


def _canonical(path: str) -> str:
    path = normalise_host_path(path)
    if path_within(path, "/var/run"):
        return "/run" + path.removeprefix("/var/run")
    return path


def dangerous_host_path(path: str) -> str | None:
    """Why a hostPath hands the container the node, or None when it does not."""
    canonical = _canonical(path)
    if canonical == "/":
        return "the host's root filesystem"
    for root in HOST_DEVICE_ROOTS:
        if path_within(canonical, root):
            return f"under {root}"
    for socket in RUNTIME_SOCKETS:
        if path_within(canonical, socket):
            return f"the container runtime socket {socket}"
        if path_within(socket, canonical):
            return f"a directory holding the container runtime socket {socket}"
    return None


@check(
    id="POD-003",
    title="Tenant pod mounts a host path under /dev, /, /proc, /sys or a runtime socket",
    severity="high",
    scope="tenant",
    rationale=(
        "A hostPath under /dev gives direct access to host devices, including GPUs the "
        "scheduler did not allocate and /dev/nvidia-caps; / , /proc and /sys expose the node's "
        "files and kernel interfaces; the container runtime socket lets the pod start a "
        "privileged container on the node. Any of them is a container escape (T1611)."
    ),
    remediation=(
        "Remove the volume at `spec.volumes[].hostPath` named in the evidence and its "
        "`volumeMounts`. GPUs come from `resources.limits` through the device plugin (or CDI), "
        "never from a /dev hostPath; use an emptyDir, a PersistentVolumeClaim or a projected "
        "volume for data. Enforce `pod-security.kubernetes.io/enforce: baseline` on the "
        "tenant namespace, which forbids hostPath volumes."
    ),
    mappings=("ATT&CK:T1611",),
)
def dangerous_host_path_volume(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for pod, tenant in tenant_pods(inputs):
        for index, volume in enumerate(pod.volumes):
            why = dangerous_host_path(volume.host_path) if volume.host_path else None
            if why is None:
                continue
            yield pod_draft(
                "POD-003",
                pod,
                tenant,
                _volume_evidence(pod, index, volume, why),
                key=volume.name,
                title=(
                    f"Pod {pod.namespace}/{pod.name} mounts host path {volume.host_path} "
                    f"(volume {volume.name})"
                ),
            )


def _volume_evidence(pod: Pod, index: int, volume: Volume, why: str) -> dict[str, Any]:
    return {
        "volume": volume.name,
        "field": f"spec.volumes[{index}].hostPath.path",
        "host_path": volume.host_path,
        "normalised_path": _canonical(volume.host_path or ""),
        "reason": why,
        "mounted_by": mounts_of(pod, volume.name),
    }


CRITICAL_CAPABILITIES = ("SYS_ADMIN", "ALL")
# Beyond SYS_ADMIN: each of these breaks the node or another tenant's isolation on its own.
# SETPCAP is in kubescape's insecure-capabilities list and flagged alike.
DANGEROUS_CAPABILITIES = (
    "NET_ADMIN",
    "SYS_PTRACE",
    "SYS_MODULE",
    "SYS_RAWIO",
    "DAC_READ_SEARCH",
    "BPF",
    "PERFMON",
    "SYS_BOOT",
    "MAC_ADMIN",
    "MAC_OVERRIDE",
    "NET_RAW",
    "SETPCAP",
)


def _capability(name: str) -> str:
    """Kubernetes accepts "SYS_ADMIN" and "CAP_SYS_ADMIN" alike; compare the bare name."""
    return name.strip().upper().removeprefix("CAP_")


@check(
    id="POD-004",
    title="Tenant container adds SYS_ADMIN or another dangerous capability",
    severity="critical",
    scope="tenant",
    rationale=(
        "CAP_SYS_ADMIN implies every NVIDIA capability, so the container can open "
        "/dev/nvidia-caps mig-config and repartition the GPUs of every tenant on the node, and "
        "it allows mount and namespace operations that lead out of the container (T1611). "
        "ALL includes it. SYS_MODULE, SYS_RAWIO, SYS_PTRACE, BPF, PERFMON, DAC_READ_SEARCH, "
        "MAC_ADMIN/MAC_OVERRIDE and NET_ADMIN/NET_RAW each weaken the kernel boundary or the "
        "network isolation between tenants (reported as high)."
    ),
    remediation=(
        "Remove the capabilities listed in the evidence from "
        "`securityContext.capabilities.add` of the container at the path shown, and set "
        '`capabilities.drop: ["ALL"]` (add back only NET_BIND_SERVICE if needed). GPU '
        "workloads need no added capability. Enforce "
        "`pod-security.kubernetes.io/enforce: restricted` on the tenant namespace."
    ),
    mappings=("ATT&CK:T1611", "SP800-53:AC-6"),
)
def dangerous_capabilities(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for pod, tenant in tenant_pods(inputs):
        for container, path in _containers(pod):
            draft = _capability_draft(pod, tenant, container, path)
            if draft is not None:
                yield draft


def _capability_draft(
    pod: Pod, tenant: TenantInfo, container: Container, path: str
) -> FindingDraft | None:
    flagged: list[dict[str, str]] = []
    other: list[str] = []
    for index, raw in enumerate(container.capabilities_add):
        name = _capability(raw)
        if name in CRITICAL_CAPABILITIES or name in DANGEROUS_CAPABILITIES:
            field = f"{path}.securityContext.capabilities.add[{index}]"
            flagged.append({"capability": raw, "field": field})
        else:
            other.append(raw)
    if not flagged:
        return None
    critical = any(_capability(f["capability"]) in CRITICAL_CAPABILITIES for f in flagged)
    evidence = {
        "container": container.name,
        "image": container.image,
        "init_container": container.init,
        "flagged": flagged,
        "other_added": other,
        "dropped": list(container.capabilities_drop),
    }
    names = ", ".join(f["capability"] for f in flagged)
    return pod_draft(
        "POD-004",
        pod,
        tenant,
        evidence,
        key=container.name,
        title=f"Container {container.name} of pod {pod.namespace}/{pod.name} adds {names}",
        severity="critical" if critical else "high",
    )


def _mig_cap_volumes(pod: Pod) -> list[dict[str, Any]]:
    """hostPath volumes that expose /dev/nvidia-caps: it, anything under it, /dev or /."""
    found = []
    for index, volume in enumerate(pod.volumes):
        if not volume.host_path:
            continue
        path = _canonical(volume.host_path)
        if path in ("/", "/dev") or path_within(path, NVIDIA_CAPS):
            found.append(
                {
                    "volume": volume.name,
                    "field": f"spec.volumes[{index}].hostPath.path",
                    "host_path": volume.host_path,
                    "mounted_by": mounts_of(pod, volume.name),
                }
            )
    return found


def _mig_cap_env(pod: Pod) -> list[dict[str, Any]]:
    """Toolkit variables asking for mig-config / mig-monitor; a value from a reference cannot
    be checked here, so it counts as set."""
    found = []
    for container, path in _containers(pod):
        for index, env in enumerate(container.env):
            if env.name not in MIG_CAP_ENV:
                continue
            if env.value is not None and env.value.strip().lower() in MIG_CAP_ENV_OFF:
                continue
            found.append(
                {
                    "container": container.name,
                    "field": f"{path}.env[{index}]",
                    "name": env.name,
                    "value": env.value,
                    "value_from": env.value_from,
                }
            )
    return found


@check(
    id="POD-005",
    title="Tenant pod can reach /dev/nvidia-caps (MIG config or monitor capability)",
    severity="critical",
    scope="tenant",
    rationale=(
        "The mig-config capability under /dev/nvidia-caps lets a process create and destroy "
        "MIG GPU and compute instances on every GPU of the node, wiping or resizing other "
        "tenants' instances; mig-monitor reveals every instance's usage. The NVIDIA Container "
        "Toolkit grants them through NVIDIA_MIG_CONFIG_DEVICES / NVIDIA_MIG_MONITOR_DEVICES, "
        "and a hostPath of /dev/nvidia-caps, /dev or / exposes the device nodes directly."
    ),
    remediation=(
        "Remove the environment variables NVIDIA_MIG_CONFIG_DEVICES and "
        "NVIDIA_MIG_MONITOR_DEVICES (or set them to `none`) from the containers named in the "
        "evidence, and remove hostPath volumes of /dev/nvidia-caps, /dev or /. Only the GPU "
        "Operator's mig-manager, in the operator namespace, needs these; set "
        "`accept-nvidia-visible-devices-envvar-when-unprivileged = false` in the toolkit's "
        "config.toml so unprivileged pods cannot request devices by environment."
    ),
    mappings=("SP800-53:AC-6",),
)
def mig_capability_access(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for pod, tenant in tenant_pods(inputs):
        volumes, env = _mig_cap_volumes(pod), _mig_cap_env(pod)
        if not volumes and not env:
            continue
        evidence = {"host_path_volumes": volumes, "env": env}
        title = f"Pod {pod.namespace}/{pod.name} can reach /dev/nvidia-caps"
        yield pod_draft("POD-005", pod, tenant, evidence, title=title)
