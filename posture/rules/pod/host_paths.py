"""POD-003, POD-005: host paths that hand a tenant pod the node, and /dev/nvidia-caps
(DESIGN §2)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from typing import Any

from inventory.components import NOT_INSTALLED
from inventory.node_components import node_components
from inventory.snapshot import Node, Pod, Volume
from posture.inputs import PostureInputs
from posture.rules.common import (
    containers_with_paths,
    hardening_pods,
    mounts_of,
    nodes_by_name,
    path_within,
)
from posture.rules.pod.container_findings import listed
from posture.rules.pod.hardening import toolkit_privileged
from posture.rules.pod.host_areas import (
    canonical_host_path,
    dangerous_host_path,
    local_volume_node_path,
)
from posture.rules.pod.injectors import injected_volumes
from posture.rules.pod.neighbours import AFFECTS, reaching_neighbours
from posture.rules.pod.nvidia_free import other_vendor_only
from posture.rules.registry import TITLE_MAX, FindingDraft, check
from posture.rules.subjects import workload_draft

NVIDIA_CAPS = "/dev/nvidia-caps"
# NVIDIA Container Toolkit variables that inject /dev/nvidia-caps mig-config / mig-monitor.
MIG_CAP_ENV = ("NVIDIA_MIG_CONFIG_DEVICES", "NVIDIA_MIG_MONITOR_DEVICES")
MIG_CAP_ENV_OFF = ("", "none", "void")


@check(
    id="POD-003",
    title="Tenant pod mounts a dangerous host path (devices, node files, kubelet or runtime state)",
    severity="high",
    scope="tenant",
    rationale=(
        "A hostPath hands the container part of the node. Under /dev it reaches every GPU, "
        "including ones the scheduler did not allocate, and /dev/nvidia-caps; /, /proc and /sys "
        "expose the node's files and kernel; /etc, /root and /home hold the kubelet's "
        "kubeconfig and people's keys; /var/lib/kubelet holds every other pod's Secret and "
        "token volumes and the device-plugin sockets; the runtime's storage and sockets "
        "(/var/lib/containerd, /run/containerd, docker.sock) let the pod read other "
        "containers' filesystems or start a privileged one; /var/log holds other tenants' logs "
        "and, writable, allows the log-mount escape. Host programs, libraries, kernel modules "
        "and /boot count when writable. Any of them is a container escape or a cross-tenant "
        "read (T1611). A PersistentVolume of type hostPath or local bound to the pod's claim "
        "(a generic ephemeral volume's too) hands over its node path the same way, and Pod "
        "Security's baseline does not stop it; a local PV on one disk or partition under /dev "
        "(known by its kernel name, /dev/disk/... or /dev/mapper/...) hands over that disk, "
        "not the node's /dev; any other path under /dev is taken as the directory of device "
        "nodes it may be." + AFFECTS
    ),
    remediation=(
        "Remove the volume at `spec.volumes[].hostPath` named in the evidence and its "
        "`volumeMounts`. GPUs come from `resources.limits` through the device plugin (or CDI), "
        "never from a /dev hostPath; logs go to stdout for the platform's collector; use an "
        "emptyDir, a PersistentVolumeClaim or a projected volume for data. Enforce "
        "`pod-security.kubernetes.io/enforce: baseline` on the tenant namespace, which "
        "forbids hostPath volumes. For a claim, delete the hostPath or local PersistentVolume "
        "named in the evidence (or give it a path of its own under a data directory) and "
        "let tenants claim storage only from a provisioner. A volume the evidence says was "
        "`injected_by` an OpenKruise SidecarSet is not in the workload's template: remove it "
        "from that SidecarSet (its `spec.volumes` and its containers' `volumeMounts`), which "
        "injects it into every pod it selects."
    ),
    mappings=("ATT&CK:T1611",),
)
def dangerous_host_path_volume(inputs: PostureInputs) -> Iterator[FindingDraft]:
    yield from reaching_neighbours(inputs, _host_path_drafts(inputs))


def _host_path_drafts(inputs: PostureInputs) -> Iterator[FindingDraft]:
    # One finding per workload (DESIGN §5: removing its host path volumes is one change to
    # it), listing each dangerous volume in `volumes`. Every pod is read before the first
    # draft, so each replica's draft carries the title naming all of the workload's volumes.
    found = [
        (pod, tenant, _injected_marked(inputs, pod, volumes))
        for pod, tenant in hardening_pods(inputs)
        if (volumes := dangerous_volumes(pod))
    ]
    named: dict[str, dict[str, dict[str, Any]]] = {}  # workload -> volume name -> entry
    for pod, _, volumes in found:
        for entry in volumes:
            named.setdefault(inputs.workload_of(pod).ref(), {}).setdefault(entry["volume"], entry)
    for pod, tenant, volumes in found:
        ref = inputs.workload_of(pod).ref()
        title = host_paths_title(ref, list(named[ref].values()))
        yield workload_draft("POD-003", inputs, pod, tenant, {"volumes": volumes}, title=title)


def _injected_marked(
    inputs: PostureInputs, pod: Pod, volumes: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The entries, each volume an OpenKruise SidecarSet added saying so (`injected_by`): the
    workload's template holds none of it, the SidecarSet is where it is removed (injectors)."""
    template = inputs.workload_template(inputs.workload_of(pod))
    injected = injected_volumes(pod, template)
    return [
        {**entry, "injected_by": injected[entry["volume"]]}
        if entry["volume"] in injected
        else entry
        for entry in volumes
    ]


def dangerous_volumes(pod: Pod) -> list[dict[str, Any]]:
    """The pod's volumes whose node path is dangerous, each as its entry in `volumes`."""
    found = []
    for index, volume in enumerate(pod.volumes):
        node_path = node_path_of(volume)
        if not node_path:
            continue
        mounts = mounts_of(pod, volume.name)
        reached = reached_host_paths(node_path, mounts)
        danger = _first_danger(reached)
        if danger is None:
            continue
        path, why = danger
        entry = _volume_evidence(index, volume, why, mounts, any(reached.values()))
        if path != entry["normalised_path"]:
            entry["reached_path"] = path  # a subPath narrows what the container sees
        found.append(entry)
    return found


def host_paths_title(ref: str, volumes: list[dict[str, Any]]) -> str:
    """The workload and its volume ("... mounts host path /dev (volume dev)"), or the count
    and each volume where there are several; within TITLE_MAX, paths alone if need be."""
    named = [_volume_named(entry) for entry in volumes]
    if len(named) == 1:
        return f"{ref} mounts host path {named[0]}"
    title = f"{ref} mounts {len(named)} host paths: {listed(named)}"
    if len(title) <= TITLE_MAX:
        return title
    return f"{ref} mounts {len(named)} host paths: {listed(str(v['host_path']) for v in volumes)}"


def _volume_named(entry: dict[str, Any]) -> str:
    through = entry.get("through") or {}
    pv = f", PersistentVolume {through['persistent_volume']}" if through else ""
    by = f", injected by {entry['injected_by']}" if entry.get("injected_by") else ""
    return f"{entry['host_path']} (volume {entry['volume']}{pv}{by})"


def node_path_of(volume: Volume) -> str | None:
    """Where on the node a volume lies: its hostPath, or the path of the hostPath or local
    PersistentVolume its claim is bound to (Pod Security's baseline does not stop that one).
    A local PV naming one disk or partition under /dev reaches no node path: the pod gets that
    device's filesystem (or the block device), not the node's /dev (host_areas)."""
    if volume.host_path:
        return volume.host_path
    if volume.pv_path and volume.pv_local:
        return local_volume_node_path(volume.pv_path)
    return volume.pv_path


def _volume_type(volume: Volume) -> str:
    if volume.host_path:
        return "hostPath"
    return "ephemeral" if volume.kind == "ephemeral" else "persistentVolumeClaim"


def _volume_field(index: int, volume: Volume) -> str:
    if volume.host_path:
        return f"spec.volumes[{index}].hostPath.path"
    if volume.kind == "ephemeral":  # its claim is generated from the template
        return f"spec.volumes[{index}].ephemeral.volumeClaimTemplate"
    return f"spec.volumes[{index}].persistentVolumeClaim.claimName"


def reached_host_paths(host_path: str, mounts: list[dict[str, Any]]) -> dict[str, bool]:
    """The node paths the mounts of a hostPath volume reach, each with whether some mount of it
    is writable. A subPath reaches only that part of the volume; a subPathExpr depends on the
    container's env at start, so it counts as the whole volume. A volume no container mounts
    is judged by its own path, read-only (an ephemeral container may mount it later)."""
    if not mounts:
        return {canonical_host_path(host_path): False}
    reached: dict[str, bool] = {}
    for mount in mounts:
        sub_path = "" if mount.get("sub_path_expr") else mount.get("sub_path", "")
        path = canonical_host_path(posixpath.join(host_path, sub_path) if sub_path else host_path)
        reached[path] = reached.get(path, False) or not mount["read_only"]
    return reached


def _first_danger(reached: dict[str, bool]) -> tuple[str, str] | None:
    """The first reached path that is dangerous, with why."""
    for path, writable in reached.items():
        why = dangerous_host_path(path, writable)
        if why is not None:
            return path, why
    return None


def _volume_evidence(
    index: int, volume: Volume, why: str, mounts: list[dict[str, Any]], writable: bool
) -> dict[str, Any]:
    evidence = {
        "volume": volume.name,
        "type": _volume_type(volume),
        "field": _volume_field(index, volume),
        "host_path": node_path_of(volume),
        "normalised_path": canonical_host_path(node_path_of(volume) or ""),
        "reason": why,
        "writable": writable,
        "mounted_by": mounts,
    }
    if not volume.host_path:
        evidence["through"] = {"claim": volume.claim, "persistent_volume": volume.persistent_volume}
    return evidence


def _mig_cap_volumes(inputs: PostureInputs, pod: Pod) -> list[dict[str, Any]]:
    """hostPath volumes that expose /dev/nvidia-caps. A mount reaching /dev/nvidia-caps or
    something under it (after its subPath) states the intent: it counts in any container. A
    mount of all of / or /dev reaches the device nodes as well, but opening one also needs the
    container's device cgroup to allow it, which only a container the toolkit counts as
    privileged has or can give itself (privileged allows every device; CAP_SYS_ADMIN can
    rewrite its own device cgroup): such a mount counts only in such a container. A volume no
    container mounts is judged as mounted by every container of the pod (an ephemeral
    container may mount it later)."""
    pairs = containers_with_paths(pod)
    privileged = {c.name for c, _ in pairs if toolkit_privileged(inputs, pod, c)}
    found = []
    for index, volume in enumerate(pod.volumes):
        node_path = node_path_of(volume)
        if not node_path:
            continue
        mounts = mounts_of(pod, volume.name)
        named, through = _caps_reach(node_path, mounts, [c.name for c, _ in pairs])
        holders = sorted(through & privileged)
        if not named and not holders:
            continue
        entry = {
            "volume": volume.name,
            "field": _volume_field(index, volume),
            "host_path": node_path,
            "mounted_by": mounts,
        }
        if not named:
            # Only a broad mount: say which privileged containers make it a way in.
            entry["privileged_containers"] = holders
        found.append(entry)
    return found


def _caps_reach(
    node_path: str, mounts: list[dict[str, Any]], containers: list[str]
) -> tuple[bool, set[str]]:
    """Whether some mount of a hostPath volume reaches /dev/nvidia-caps or under it, and which
    containers mount all of / or /dev from it."""
    named, through = False, set()
    for mount in mounts or [{"container": name, "read_only": True} for name in containers]:
        for path in reached_host_paths(node_path, [mount]):
            if path_within(path, NVIDIA_CAPS):
                named = True
            elif path in ("/", "/dev"):
                through.add(mount["container"])
    return named, through


def _mig_cap_env(inputs: PostureInputs, pod: Pod) -> list[dict[str, Any]]:
    """Toolkit variables asking for mig-config / mig-monitor in a container the toolkit serves
    them to: its hook refuses them to an unprivileged container, which then fails to start. A
    value from a reference cannot be checked here, so it counts as set."""
    found = []
    for container, path in containers_with_paths(pod):
        if not toolkit_privileged(inputs, pod, container):
            continue
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
        "Toolkit grants them through NVIDIA_MIG_CONFIG_DEVICES / NVIDIA_MIG_MONITOR_DEVICES "
        "to a container it counts as privileged (privileged, or holding CAP_SYS_ADMIN; it "
        "refuses to start any other that sets them). A hostPath of /dev/nvidia-caps (or under "
        "it) asks for the device nodes directly and counts in any container. A hostPath of / "
        "or /dev also holds them, but a device node is opened only where the container's "
        "device cgroup allows it, which a privileged container (every device) or one holding "
        "CAP_SYS_ADMIN (it can rewrite its own device cgroup) has: that mount counts only in "
        "such a container (POD-003 reports the broad mount in any). The host NVIDIA driver "
        "creates /dev/nvidia-caps: on a node whose host driver is known not to be installed "
        "(a vm-passthrough node, its GPUs bound to vfio-pci and the driver in each guest VM) "
        "there is none to reach, and a pod there is not reported (POD-001 and POD-003 still "
        "judge what it mounts or is granted); nor on a node whose accelerators are all "
        "another vendor's (AMD, Intel, Gaudi by its capacity, allocatable or DRA slices) and "
        "that nothing says holds an NVIDIA GPU (no nvidia.com resource, GPU label, NVIDIA "
        "driver or runtime). Where the host driver or the node's GPUs are unknown it is." + AFFECTS
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
    yield from reaching_neighbours(inputs, _mig_capability_drafts(inputs))


def _mig_capability_drafts(inputs: PostureInputs) -> Iterator[FindingDraft]:
    # Judged once per node, not per pod: a node's components are read whole.
    driverless = {
        name
        for name, node in nodes_by_name(inputs).items()
        if _no_host_driver(node) or other_vendor_only(node)
    }
    for pod, tenant in hardening_pods(inputs):
        if pod.node_name in driverless:
            continue
        volumes, env = _mig_cap_volumes(inputs, pod), _mig_cap_env(inputs, pod)
        if not volumes and not env:
            continue
        evidence = {"host_path_volumes": volumes, "env": env}
        title = f"{inputs.workload_of(pod).ref()} can reach /dev/nvidia-caps"
        yield workload_draft("POD-005", inputs, pod, tenant, evidence, title=title)


def _no_host_driver(node: Node) -> bool:
    """The node's host NVIDIA driver is known not to be installed (its components say
    not_installed: vfio-pci holds the GPUs of a vm-passthrough node, the driver runs in each
    guest), so no /dev/nvidia-caps exists on it. A pod on no node (a template) or on a node
    whose driver is installed or unknown is judged as before."""
    return node_components(node)["driver"]["state"] == NOT_INSTALLED
