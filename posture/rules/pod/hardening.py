"""POD-001, POD-002, POD-004: privileged containers, host namespaces and added capabilities of
tenant pods (DESIGN §2). Platform pods never count."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from inventory.snapshot import Container, Pod
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import containers_with_paths, hardening_pods, nodes_by_name
from posture.rules.pod.container_findings import (
    ContainerHit,
    PodHits,
    agree,
    container_drafts,
    containers_named,
    listed,
)
from posture.rules.pod.neighbours import AFFECTS, HOST_NAMESPACES_AFFECT, reaching_neighbours
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import workload_draft


@check(
    id="POD-001",
    title="Privileged container in a tenant pod",
    severity="critical",
    scope="tenant",
    rationale=(
        "A privileged container gets every capability, every host device under /dev (all "
        "GPUs, /dev/nvidia-caps, disks) and no seccomp or AppArmor confinement: it can load "
        "kernel modules, reconfigure MIG for every tenant on the node and escape to the host "
        "(ATT&CK T1611). A Windows HostProcess container (`windowsOptions.hostProcess: "
        "true`) is the same on a Windows node: a process on the host with its full access. No "
        "tenant workload needs either to use a GPU: the device plugin injects the devices it "
        "was allocated." + AFFECTS
    ),
    remediation=(
        "Remove `securityContext.privileged: true` (or `windowsOptions.hostProcess: true`) "
        "from the securityContext at the path in the evidence (or set it to false), request "
        "GPUs through `resources.limits` (`nvidia.com/gpu` or a MIG resource), and enforce "
        "the Pod Security Standard `baseline` or `restricted` on the tenant namespace with the "
        "label "
        "`pod-security.kubernetes.io/enforce: restricted`."
    ),
    mappings=("ATT&CK:T1611", "SP800-53:AC-6"),
)
def privileged_container(inputs: PostureInputs) -> Iterator[FindingDraft]:
    found = (PodHits(pod, tenant, _privileged(pod)) for pod, tenant in hardening_pods(inputs))
    drafts = container_drafts("POD-001", inputs, found, title=_privileged_title)
    yield from reaching_neighbours(inputs, drafts)


def _privileged(pod: Pod) -> list[ContainerHit]:
    hits = []
    for container, path in containers_with_paths(pod):
        field = _privilege_field(container, path)
        if field is None:
            continue
        evidence = {
            "container": container.name,
            "image": container.image,
            "init_container": container.init,
            "field": field,
            "value": True,
        }
        hits.append(ContainerHit(container, evidence))
    return hits


def _privileged_title(ref: str, entries: list[dict[str, Any]], _: list[ContainerHit]) -> str:
    host = {str(e["field"]).endswith(".hostProcess") for e in entries}
    if len(entries) == 1:
        what = "a Windows HostProcess container" if host == {True} else "privileged"
    else:
        kinds = {frozenset({False}): "privileged", frozenset({True}): "Windows HostProcess"}
        what = kinds.get(frozenset(host), "privileged or Windows HostProcess")
        what += " containers" if host != {False} else ""
    return f"{containers_named(entries)} of {ref} {agree(entries, 'is', 'are')} {what}"


def _privilege_field(container: Container, path: str) -> str | None:
    """The field that gives the container the node: privileged, else a HostProcess flag (its
    own or the pod's, which it inherits)."""
    if container.privileged:
        return f"{path}.securityContext.privileged"
    if container.host_process == "container":
        return f"{path}.securityContext.windowsOptions.hostProcess"
    if container.host_process == "pod":
        return "spec.securityContext.windowsOptions.hostProcess"
    return None


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
        + HOST_NAMESPACES_AFFECT
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
    yield from reaching_neighbours(inputs, _host_namespace_drafts(inputs), _reaches_node)


def _reaches_node(draft: FindingDraft) -> bool:
    """hostPID and hostNetwork reach what every pod on the node runs (its processes, its
    traffic, node-local services): the tenants there are affected. hostIPC alone joins the
    host's IPC namespace, which no other tenant's ordinary pod shares: only the owner's."""
    fields = draft.evidence["fields"]
    return "spec.hostPID" in fields or "spec.hostNetwork" in fields


def _host_namespace_drafts(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for pod, tenant in hardening_pods(inputs):
        shared = {
            "spec.hostPID": pod.host_pid,
            "spec.hostIPC": pod.host_ipc,
            "spec.hostNetwork": pod.host_network,
        }
        fields = {name: True for name, on in shared.items() if on}
        if not fields:
            continue
        which = ", ".join(name.removeprefix("spec.") for name in fields)
        title = f"{inputs.workload_of(pod).ref()} uses {which}"
        yield workload_draft("POD-002", inputs, pod, tenant, {"fields": fields}, title=title)


# What the NVIDIA Container Toolkit counts as privileged: its hook looks for CAP_SYS_ADMIN, and ALL
# includes it. No other capability widens what the toolkit hands a container.
TOOLKIT_CAPABILITIES = ("SYS_ADMIN", "ALL")
# Critical: each gives a documented container escape or full control of the node's kernel on its
# own. The reason goes into the finding's evidence, so a reader sees the basis.
CRITICAL_CAPABILITIES: dict[str, str] = {
    "SYS_ADMIN": "every NVIDIA capability (MIG control of the node's GPUs) and the mount and "
    "namespace operations of container escapes",
    "ALL": "every capability, SYS_ADMIN included",
    "SYS_MODULE": "loads kernel modules: full node control",
    "SYS_RAWIO": "raw port I/O and /dev/mem: direct access to the node's hardware and memory",
    "SYS_PTRACE": "reads and injects code into any process it can see (with hostPID, every "
    "process on the node: an escape to the host)",
    "DAC_READ_SEARCH": "open_by_handle_at reads any file of the node (the 'shocker' escape)",
    "BPF": "loads BPF programs where unprivileged BPF is off: kernel memory reads and verifier "
    "exploits",
}
# High: each weakens the kernel boundary or the pod's network on its own, but gives no escape
# by itself. NET_RAW is in containerd's and Docker's default set; SETPCAP is in kubescape's
# insecure-capabilities list.
HIGH_CAPABILITIES: dict[str, str] = {
    "NET_ADMIN": "reconfigures the pod's interfaces, routes and firewall; opens netfilter code "
    "that container escapes have used",
    "NET_RAW": "raw sockets: spoofs packets on the pod's network (in containerd's and Docker's "
    "default set)",
    "PERFMON": "system-wide performance monitoring: observes the kernel and other processes",
    "SYS_BOOT": "kexec_load: can restart the node into another kernel where seccomp and "
    "lockdown allow it",
    "MAC_ADMIN": "changes the node's AppArmor or SELinux policy, its own confinement included",
    "MAC_OVERRIDE": "overrides mandatory access control (Smack)",
    "SETPCAP": "changes capability sets within its bounding set",
}
# Every capability POD-004 reports; the admission rule and the SCC check use the same set.
DANGEROUS_CAPABILITIES = (*CRITICAL_CAPABILITIES, *HIGH_CAPABILITIES)
# With hostPID, ptrace reaches the node's processes: a documented escape (T1611).
_PTRACE_HOST_PID = (
    "with hostPID: reads and injects code into every process on the node, an escape to the host"
)
# In its own user namespace a capability is not valid on the host (kernel user_namespaces(7)).
_USER_NAMESPACE_NOTE = "own user namespace (hostUsers: false): not valid on the host"


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
        "ALL includes it. Others give an escape or the node's kernel on their own: SYS_MODULE "
        "loads kernel modules, SYS_RAWIO reaches /dev/mem and raw I/O ports, SYS_PTRACE reads "
        "and injects into other processes (every process on the node with hostPID), "
        "DAC_READ_SEARCH opens any host file by handle (the 'shocker' escape) and BPF loads "
        "kernel programs (kernel memory reads, verifier exploits). NET_ADMIN, NET_RAW, PERFMON, "
        "SYS_BOOT, MAC_ADMIN, MAC_OVERRIDE and SETPCAP weaken the kernel boundary or the pod's "
        "network without an escape on their own (NET_RAW is even in containerd's and Docker's "
        "default set). In a pod with its own user namespace (`hostUsers: false`) capabilities "
        "are not valid on the host, so SYS_ADMIN no longer reaches the GPUs' MIG controls, but "
        "it still opens kernel interfaces that container escapes have used (CVE-2022-0185)."
        + AFFECTS
        + " Only for a critical capability: a high one reaches no further than its pod."
    ),
    remediation=(
        "Remove the capabilities listed in the evidence from "
        "`securityContext.capabilities.add` of the container at the path shown, and set "
        '`capabilities.drop: ["ALL"]` (add back only NET_BIND_SERVICE if needed). GPU '
        "workloads need no added capability. Enforce "
        "`pod-security.kubernetes.io/enforce: restricted` on the tenant namespace."
    ),
    severity_rule=(
        "Critical for SYS_ADMIN, ALL, SYS_MODULE, SYS_RAWIO, SYS_PTRACE, DAC_READ_SEARCH or BPF "
        "(each an escape or the node's kernel on its own); high for NET_ADMIN, NET_RAW, "
        "PERFMON, SYS_BOOT, MAC_ADMIN, MAC_OVERRIDE or SETPCAP, and for any of them in a pod "
        "with its own user namespace (`hostUsers: false`). The evidence gives each flagged "
        "capability its severity and reason. A name written with the CAP_ prefix counts only "
        "where the runtime grants it: not on a containerd node (containerd adds the prefix "
        "itself and runc ignores CAP_CAP_SYS_ADMIN)."
    ),
    mappings=("ATT&CK:T1611", "SP800-53:AC-6"),
)
def dangerous_capabilities(inputs: PostureInputs) -> Iterator[FindingDraft]:
    found = (_capability_hits(inputs, pod, tenant) for pod, tenant in hardening_pods(inputs))
    drafts = container_drafts("POD-004", inputs, found, title=_capability_title)
    # A critical capability is an escape or the node's kernel on its own; a high one (or any
    # in the pod's own user namespace) weakens the boundary without one: only its tenant's.
    yield from reaching_neighbours(inputs, drafts, lambda d: d.severity == "critical")


def _capability_hits(inputs: PostureInputs, pod: Pod, tenant: TenantInfo) -> PodHits:
    hits = [
        hit
        for container, path in containers_with_paths(pod)
        if (hit := _capability_hit(inputs, pod, container, path)) is not None
    ]
    # In its own user namespace the pod's capabilities are not valid on the host (each
    # flagged entry's reason says so too).
    shared = {"user_namespace": "spec.hostUsers: false"} if pod.host_users is False else {}
    return PodHits(pod, tenant, hits, evidence=shared)


def _capability_title(ref: str, entries: list[dict[str, Any]], _: list[ContainerHit]) -> str:
    names = listed((f["capability"] for e in entries for f in e["flagged"]), shown=20)
    return f"{containers_named(entries)} of {ref} {agree(entries, 'adds', 'add')} {names}"


# kubernetes/kubernetes#119568: containerd adds the prefix itself and runc ignores the unknown
# CAP_CAP_ name; CRI-O and Docker accept either spelling.
_PREFIX_NOTE = "containerd ignores a CAP_-prefixed name, CRI-O and Docker grant it"


def _node_runtime(inputs: PostureInputs, pod: Pod) -> str:
    """The container runtime of the pod's node as the kubelet reports it ("containerd://1.7.13"),
    "" when not known (a template, an unscheduled pod, a node not in the snapshot)."""
    node = nodes_by_name(inputs).get(pod.node_name or "")
    return (node.container_runtime or "") if node is not None else ""


def _not_granted(inputs: PostureInputs, pod: Pod, container: Container, index: int) -> bool:
    """The added capability at `index` is written CAP_... and the node runs containerd."""
    prefixed = index in container.capabilities_add_prefixed
    return prefixed and _node_runtime(inputs, pod).startswith("containerd://")


def toolkit_privileged(inputs: PostureInputs, pod: Pod, container: Container) -> bool:
    """What the NVIDIA Container Toolkit counts as privileged (its hook looks for CAP_SYS_ADMIN
    in the container's capabilities): privileged, or SYS_ADMIN / ALL added in a spelling the
    node's runtime grants."""
    if container.privileged:
        return True
    return any(
        _capability(raw) in TOOLKIT_CAPABILITIES and not _not_granted(inputs, pod, container, i)
        for i, raw in enumerate(container.capabilities_add)
    )


def _capability_hit(
    inputs: PostureInputs, pod: Pod, container: Container, path: str
) -> ContainerHit | None:
    flagged: list[dict[str, str]] = []
    other: list[str] = []
    runtime = _node_runtime(inputs, pod)
    for index, raw in enumerate(container.capabilities_add):
        name = _capability(raw)
        if name not in DANGEROUS_CAPABILITIES:
            other.append(raw)
            continue
        if _not_granted(inputs, pod, container, index):
            other.append(f"CAP_{name} (not granted: {_PREFIX_NOTE})")
            continue
        field = f"{path}.securityContext.capabilities.add[{index}]"
        entry = {"capability": raw, "field": field, **_rating(pod, name)}
        if index in container.capabilities_add_prefixed and not runtime:
            entry["note"] = f"written with the CAP_ prefix: {_PREFIX_NOTE}"
        flagged.append(entry)
    if not flagged:
        return None
    critical = any(f["severity"] == "critical" for f in flagged)
    evidence = {
        "container": container.name,
        "image": container.image,
        "init_container": container.init,
        "flagged": flagged,
        "other_added": other,
        "dropped": list(container.capabilities_drop),
    }
    return ContainerHit(container, evidence, severity="critical" if critical else "high")


def _rating(pod: Pod, name: str) -> dict[str, str]:
    """The severity one dangerous capability earns in this pod, and the reason for it."""
    if name in HIGH_CAPABILITIES:
        return {"severity": "high", "reason": HIGH_CAPABILITIES[name]}
    reason = CRITICAL_CAPABILITIES[name]
    if name == "SYS_PTRACE" and pod.host_pid:
        reason = _PTRACE_HOST_PID
    if pod.host_users is False:
        # In its own user namespace the pod's capabilities are not valid on the host.
        return {"severity": "high", "reason": f"{reason}; {_USER_NAMESPACE_NOTE}"}
    return {"severity": "critical", "reason": reason}
