"""STACK-001/002/003 (below the bulletin baseline) and STACK-005 (past the patch SLA), from
the patch status inventory computed against imported bulletins."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

from gpuposture.base.labels import words
from inventory.patching.driver_family import vgpu_host
from inventory.patching.rollout import component_key, highest_version
from inventory.patching.status import SEVERITY_ORDER
from inventory.patching.targets import Target, closed_bound, target
from inventory.snapshot import Node
from inventory.stack_managers import UpgradePath
from posture.inputs import PostureInputs
from posture.rules.common import sorted_nodes, tenants_on_node
from posture.rules.registry import FindingDraft, check
from posture.rules.stack.hypervisor import hypervisor_drafts
from posture.rules.stack.upgrade_by import (
    paths_of,
    split_by_change,
    split_key,
    split_title,
    upgrade_evidence,
)
from posture.rules.subjects import bulletin_draft

STACK_CHECKS = {
    "STACK-001": ("driver",),
    "STACK-002": ("container_toolkit",),
    # Firmware joins only where a bulletin names firmware for the node's GPU model.
    # dcgm: the DCGM library an exporter image bundles (inventory.patching.versions.bundled_dcgm).
    "STACK-003": (
        "device_plugin",
        "gpu_operator",
        "mig_manager",
        "dra_driver",
        "dcgm_exporter",
        "dcgm",
        "firmware",
    ),
}


# What a vm-vgpu node's host driver is: NVIDIA's vGPU Manager (the GPU Operator's vgpu-manager
# image), judged by the bulletins' vGPU Manager rows (inventory.patching.driver_family). Titles
# and evidence name it so; the exposures' `component` stays `driver` (the contract).
VGPU_MANAGER_NAME = "vGPU Manager"


def _vgpu_host(node: Node) -> bool:
    return vgpu_host(node.labels, node.driver_version_source)


def _named(node: Node, exposure: dict, say: Callable[[str], str] = str) -> str:
    """`<component> <installed>` as evidence names it (`say` = words: as a title does): the
    vGPU Manager for a vGPU host's driver."""
    component = str(exposure["component"])
    if component == "driver" and _vgpu_host(node):
        return f"{VGPU_MANAGER_NAME} {exposure['installed']}"
    return f"{say(component)} {exposure['installed']}"


def _host_driver(node: Node, exposures: list[dict]) -> dict[str, str]:
    """The evidence's `host_driver` where a driver exposure is a vGPU host's: what the
    `driver` component is there and how it is upgraded (not by the ClusterPolicy's
    `driver.version`, which the vGPU Manager does not read)."""
    if not _vgpu_host(node) or not any(e.get("component") == "driver" for e in exposures):
        return {}
    return {
        "host_driver": (
            f"the `driver` component of {node.name} is NVIDIA's {VGPU_MANAGER_NAME}, the host "
            "driver of a node that gives its GPUs to VMs as vGPUs (its label "
            "nvidia.com/gpu.workload.config=vm-vgpu or its vgpu-manager pod), judged by the "
            "bulletins' Linux KVM vGPU Manager rows; it is upgraded by a newer vGPU Manager "
            "image (ClusterPolicy `vgpuManager.version` where the GPU Operator deploys it), "
            "not by `driver.version`"
        )
    }


def _severity(exposures: list[dict]) -> str:
    # A fix with no CVSS severity counts as high: never silently low.
    found = {str(e.get("severity") or "high").lower() for e in exposures}
    return next((s for s in SEVERITY_ORDER if s in found), "high")


def _remedies(exposures: list[dict]) -> list[dict]:
    """Each bulletin's remediations for the node's exposures, once, mitigations and
    workarounds first (what can be done before the upgrade), each naming its bulletin."""
    found: list[dict] = []
    for exposure in exposures:
        for remedy in exposure.get("remedies") or ():
            entry = {"advisory_id": exposure.get("advisory_id"), **remedy}
            if entry not in found:
                found.append(entry)
    return sorted(found, key=lambda r: r.get("category") not in ("mitigation", "workaround"))


def _no_fix(exposures: list[dict]) -> list[dict]:
    found = {
        (e.get("advisory_id") or "", e["no_fix"])
        for e in exposures
        if e.get("no_fix") and not e.get("fixed_version")
    }
    return [{"advisory_id": advisory, "no_fix": said} for advisory, said in sorted(found)]


def _targets(exposures: list[dict]) -> dict[str, Target]:
    """component key (the driver by branch) -> where its move goes (inventory.patching.targets)."""
    by_key: dict[str, list[dict]] = defaultdict(list)
    for exposure in exposures:
        by_key[component_key(exposure)].append(exposure)
    return {key: target(listed) for key, listed in by_key.items()}


def _bounded_by(exposures: list[dict], key: str) -> list[str]:
    """The advisories whose closed range, fixed version unknown, the component moves past."""
    return sorted(
        {
            str(e.get("advisory_id") or "")
            for e in exposures
            if component_key(e) == key and closed_bound(e) is not None
        }
    )


def _exposures(inputs: PostureInputs, node: str, kinds: tuple[str, ...]) -> list[dict]:
    patch = inputs.patch.get(node) or {}
    return [e for e in patch.get("exposures", []) if e.get("component") in kinds]


def _below_baseline(inputs: PostureInputs, check_id: str) -> Iterator[FindingDraft]:
    kinds = STACK_CHECKS[check_id]
    for node in sorted_nodes(inputs):
        exposures = _exposures(inputs, node.name, kinds)
        if not exposures:
            continue
        # One finding per change that closes them (upgrade_by.py): usually one.
        parts = split_by_change(exposures, paths_of(inputs, node))
        for path, members in parts:
            yield _below_draft(inputs, node, check_id, members, path, len(parts))


def _below_draft(
    inputs: PostureInputs,
    node: Node,
    check_id: str,
    exposures: list[dict],
    path: UpgradePath,
    parts: int,
) -> FindingDraft:
    targets = _targets(exposures)
    moved = [t.version for t in targets.values() if t.version]
    evidence = {
        "node": node.name,
        "components": sorted({_named(node, e) for e in exposures}),
        **_host_driver(node, exposures),
        "move_to": highest_version(moved) if moved else None,
        # A range closed above whose fixed version is unknown (NVIDIA 5703's R535 vGPU Manager
        # row: its fix a typo the import drops) closes past its bound; where no fixed version
        # named passes it, that bound, per component: no version is made up.
        "move_past": [
            {"component": key, "past": str(t.past), "advisories": _bounded_by(exposures, key)}
            for key, t in sorted(targets.items())
            if t.past is not None
        ],
        # Who manages these components on the node, so how the upgrade is done: through the
        # GPU Operator, a new node image or host packages, a chart of its own, or unknown.
        "upgrade_by": upgrade_evidence(path, exposures, paths_of(inputs, node), node),
        # Exposures the vendor says have no fix (none_available, no_fix_planned), each with
        # its advisory: a reader who may not read that advisory sees the category only.
        "no_fix": _no_fix(exposures),
        "exposures": exposures,
        "cves": sorted({c for e in exposures for c in e.get("cves", [])}),
        "conditional": [e for e in exposures if e.get("condition")],
        # What the bulletins say to do: a mitigation or workaround for a node that cannot
        # upgrade yet, the vendor fix's details and errata URL.
        "remedies": _remedies(exposures),
        # A bound the bulletin limits by a condition the node's facts cannot settle.
        "condition_unverified": sorted(
            {e["advisory_id"] for e in exposures if e.get("condition_status") == "unverified"}
        ),
    }
    # The title is read on pages (components in words: "Container Toolkit 1.17.4"); the
    # evidence's `components` keep the codes the API gives.
    named = sorted({_named(node, e, words) for e in exposures})
    title = f"GPU node {node.name}: {', '.join(named)} below the bulletin baseline"
    return bulletin_draft(
        check_id,
        node,
        key=split_key(check_id, path, parts),
        inputs=inputs,
        tenants=tenants_on_node(inputs, node.name),
        evidence=evidence,
        title=split_title(title, path, parts),
        severity=_severity(exposures),
    )


_SEVERITY_RULE = (
    "A finding takes the worst severity the vendor bulletins give the node's exposures "
    "(critical when a fix addresses a critical CVE); high when a bulletin gives none."
)
_REMEDIATION = (
    "Upgrade to the fixed version in the evidence (`move_to`; where it lists `move_past`, a "
    "range whose fixed version is not named, to a version past that bound), pool by pool: a "
    "canary pool first, then waves, keeping the previous version noted for rollback. Upgrade each "
    "component where it is managed, as `upgrade_by` in the evidence says: a component the GPU "
    "Operator deploys, through its ClusterPolicy (or Helm values, or a newer gpu-operator "
    "release); a driver or toolkit pre-installed on the node (ClusterPolicy `driver.enabled: "
    "false`, node label `nvidia.com/gpu.deploy.driver=pre-installed`: AKS, EKS, Bottlerocket, "
    "bare metal), by a new node image or the host's packages, since the Operator ignores "
    "`driver.version` then; a component with a chart or DaemonSet of its own, through that. "
    "Where the evidence says who manages it is unknown, find that out first. Where it says "
    "`rollout_pending`, the ClusterPolicy already asks for the fixed version: let the "
    "Operator's rollout reach the node (its driver upgrade controller; without it, drain the "
    "node and delete its driver pod). Then re-sync the "
    "cluster. Until a node is upgraded (or where no fix exists), apply the mitigations and "
    "workarounds the bulletins give (`remedies` in the evidence)."
)

# A vGPU guest's hypervisor vGPU Manager (evidence `where_to_fix`): no change in the cluster.
_HYPERVISOR_REMEDIATION = (
    " Where the evidence's `where_to_fix` is the hypervisor, the vGPU Manager that hosts the "
    "VM is below the baseline: upgrade the vGPU Manager on that hypervisor (vSphere, KVM or "
    "Citrix Hypervisor host, outside the cluster) to `fixed_in` (or past `fixed_past`), with "
    "a guest driver its "
    "vGPU release supports; upgrading the guest does not close it."
)


@check(
    id="STACK-001",
    title="GPU driver below the bulletin baseline for its branch",
    severity="high",
    scope="node",
    rationale="The GPU driver runs in the host kernel and every tenant's workload calls "
    "into it; NVIDIA bulletins fix privilege escalation, memory disclosure and "
    "denial of service in it. A node below the fixed version of its branch is "
    "exposed to the listed CVEs. On a node that gives its GPUs to VMs as vGPUs the host "
    "driver is NVIDIA's vGPU Manager, judged by its own bulletin rows and named so. A vGPU "
    "guest VM whose labels show the vGPU Manager of its hypervisor (GFD's "
    "nvidia.com/vgpu.host-driver-version) is exposed through it too: the boundary between "
    "the VMs, whose flaws include guest-to-host escapes and cross-VM leaks; that Manager is "
    "judged by the same rows, in a finding of its own, fixed on the hypervisor.",
    remediation=_REMEDIATION + _HYPERVISOR_REMEDIATION,
    mappings=("SP800-53:SI-2", "CSF 2.0:ID.AM-01"),
    severity_rule=_SEVERITY_RULE,
)
def driver_below_baseline(inputs: PostureInputs) -> Iterator[FindingDraft]:
    yield from _below_baseline(inputs, "STACK-001")
    # A vGPU guest's hypervisor vGPU Manager, as its labels show it (stack/hypervisor.py).
    yield from hypervisor_drafts(inputs, _severity)


@check(
    id="STACK-002",
    title="NVIDIA Container Toolkit below the bulletin baseline",
    severity="high",
    scope="node",
    rationale="The container toolkit sets up every GPU container on the host; its "
    "bulletins include container escapes (e.g. CVE-2024-0132, CVE-2025-23266) "
    "that hand a tenant the node.",
    remediation=_REMEDIATION,
    mappings=("SP800-53:SI-2", "ATT&CK:T1611"),
    severity_rule=_SEVERITY_RULE,
)
def toolkit_below_baseline(inputs: PostureInputs) -> Iterator[FindingDraft]:
    yield from _below_baseline(inputs, "STACK-002")


@check(
    id="STACK-003",
    title="Device plugin, GPU Operator, DCGM exporter or firmware below baseline",
    severity="high",
    scope="node",
    rationale="The device plugin, GPU Operator, MIG manager and DCGM exporter run "
    "privileged on every GPU node, and the GPU's firmware (VBIOS) sits below "
    "every tenant; a known flaw in them is a path from a tenant pod to the host "
    "or to other tenants' GPUs. An exporter image bundles a DCGM (its tag's first "
    "number), judged by DCGM bulletins as component `dcgm`.",
    remediation=_REMEDIATION,
    mappings=("SP800-53:SI-2",),
    severity_rule=_SEVERITY_RULE,
)
def components_below_baseline(inputs: PostureInputs) -> Iterator[FindingDraft]:
    yield from _below_baseline(inputs, "STACK-003")


@check(
    id="STACK-005",
    title="Patch SLA breached: a node is still below a bulletin's fix",
    severity="high",
    scope="node",
    rationale="The patch SLA (days per severity from a bulletin's release) is the promise "
    "the platform makes to tenants; a node still exposed after it is a breach "
    "the security lead must see first.",
    remediation=_REMEDIATION,
    mappings=("SP800-53:SI-2",),
)
def patch_sla_breached(inputs: PostureInputs) -> Iterator[FindingDraft]:
    now = datetime.now().astimezone()
    for node in sorted_nodes(inputs):
        late = []
        for exposure in _exposures(inputs, node.name, sum(STACK_CHECKS.values(), ())):
            if not exposure.get("fixed_version") and exposure.get("no_fix"):
                # The vendor says no fix exists (none_available, no_fix_planned): there is
                # nothing to patch to, so no patch SLA runs; STACK-001..003 keep the exposure.
                continue
            severity = str(exposure.get("severity") or "high").lower()
            days = inputs.patch_sla_days.get(severity, 30)
            released = datetime.fromisoformat(str(exposure["released"]))
            if now - released > timedelta(days=days):
                late.append(
                    {**exposure, "sla_days": days, "days_since_release": (now - released).days}
                )
        if not late:
            continue
        parts = split_by_change(late, paths_of(inputs, node))
        for path, members in parts:
            oldest = max(e["days_since_release"] for e in members)
            evidence = {
                "node": node.name,
                "late_exposures": members,
                "oldest_days": oldest,
                "upgrade_by": upgrade_evidence(path, members, paths_of(inputs, node), node),
                **_host_driver(node, members),
            }
            title = (
                f"GPU node {node.name} is past the patch SLA ({oldest} days since the oldest fix)"
            )
            yield bulletin_draft(
                "STACK-005",
                node,
                key=split_key("STACK-005", path, len(parts)),
                inputs=inputs,
                tenants=tenants_on_node(inputs, node.name),
                evidence=evidence,
                title=split_title(title, path, len(parts)),
            )
