"""Which change closes a node's bulletin exposures (inventory/stack_managers.py). PURE.

A finding is one cause, the thing one change fixes (DESIGN §5): a node whose driver is
pre-installed (upgraded by a new node image) and whose toolkit is the GPU Operator's (upgraded
through the ClusterPolicy) needs two changes, often by two owners, so its exposures of one
check are split into one finding per change. Where a check's exposures on a node all take one
change (the usual case), and for the GPU Operator's part of a split, the finding keeps its
historical key, the check id, so its history and any accepted risk carry over.
"""

from __future__ import annotations

from collections import defaultdict

from inventory.snapshot import Node
from inventory.stack_managers import UNKNOWN, UpgradePath, upgrade_paths
from inventory.stack_rollout import rollout_pending
from posture.inputs import PostureInputs

# How a split finding's title names its change.
_TITLE_BY = {
    "gpu_operator": "through the GPU Operator",
    "pre_installed": "pre-installed on the node",
    "own_deployment": "by {change}",
    "firmware": "firmware",
    "gke": "managed by GKE",
    UNKNOWN: "who installs it is unknown",
}


def paths_of(inputs: PostureInputs, node: Node) -> dict[str, UpgradePath]:
    """component -> its UpgradePath on the node (once per inputs: four checks ask)."""
    key = ("upgrade_paths", node.name)
    if key not in inputs.memo:
        # The platform's pods only, as the node's versions (inventory.sources.nodes): a
        # tenant's pod running a stack image is no component of the node's to upgrade.
        platform = inputs.platform_namespaces
        pods = [p for p in inputs.pods_by_node.get(node.name, ()) if p.namespace in platform]
        inputs.memo[key] = upgrade_paths(node, inputs.snapshot.gpu_operator_policies, pods)
    return inputs.memo[key]  # type: ignore[return-value]  # what this function stored under it


def split_by_change(
    exposures: list[dict], paths: dict[str, UpgradePath]
) -> list[tuple[UpgradePath, list[dict]]]:
    """The exposures grouped by the change that closes each, in the order first met."""
    groups: dict[str, list[dict]] = defaultdict(list)
    by_change: dict[str, UpgradePath] = {}
    for exposure in exposures:
        component = str(exposure.get("component") or "")
        path = paths.get(component) or UpgradePath(
            UNKNOWN, f"unknown {component}", "find out what installed it", "not a known component"
        )
        by_change.setdefault(path.change, path)
        groups[path.change].append(exposure)
    return [(by_change[change], members) for change, members in groups.items()]


def upgrade_evidence(
    path: UpgradePath,
    exposures: list[dict],
    paths: dict[str, UpgradePath] | None = None,
    node: Node | None = None,
) -> dict[str, object]:
    """The evidence's `upgrade_by`: who manages the components and how to upgrade them,
    `gpu_operator`: where the GPU Operator runs ("Deployment ns/name") when it is one of them
    (one for the cluster, so one action upgrades it for every node), and `rollout_pending`:
    the components whose fixed version the ClusterPolicy already asks for while the node
    still runs below it (the change is done; its rollout is not)."""
    components = sorted({str(e.get("component")) for e in exposures})
    evidence: dict[str, object] = {**path.as_dict(), "components": components}
    seen = node.deployed.get("gpu_operator", "") if node is not None else ""
    if "gpu_operator" in components and seen.startswith("Deployment "):
        # Only a Deployment names what is upgraded (seen through its ClusterPolicy or a bare
        # pod, the Operator's own object is not known).
        evidence["gpu_operator"] = seen
    pending = rollout_pending(paths or {}, exposures)
    if pending:
        evidence["rollout_pending"] = pending
    if pending and set(pending) == set(components):
        driver = (paths or {}).get("driver")
        evidence["how"] = _finish_rollout(pending, driver.auto_upgrade if driver else None)
    return evidence


def _finish_rollout(pending: dict[str, str], auto_upgrade: bool | None = None) -> str:
    """`auto_upgrade`: the ClusterPolicy's driver.upgradePolicy.autoUpgrade (None: unknown)."""
    asked = ", ".join(f"{c} {v}" for c, v in sorted(pending.items()))
    how = (
        f"the ClusterPolicy already asks for {asked}, at or above the fixed version, but the "
        "GPU Operator has not rolled it out to this node yet: setting it again changes "
        "nothing; let the rollout finish"
    )
    state = (
        "the node's nvidia.com/gpu-driver-upgrade-state label says where it stands "
        "(upgrade-failed, or a drain waiting on pods, needs you)"
    )
    manual = (
        "drain the node and delete its driver pod so the DaemonSet restarts it on the new version"
    )
    if "driver" in pending and auto_upgrade is True:
        how += (
            ". The ClusterPolicy sets driver.upgradePolicy.autoUpgrade: the Operator's upgrade "
            f"controller rolls the driver, maxParallelUpgrades nodes at a time: {state}"
        )
    elif "driver" in pending and auto_upgrade is False:
        how += f". The ClusterPolicy turns driver.upgradePolicy.autoUpgrade off: {manual}"
    elif "driver" in pending:
        how += (
            ". With driver.upgradePolicy.autoUpgrade the Operator's upgrade controller moves "
            f"nodes maxParallelUpgrades at a time: {state}; without it, {manual}"
        )
    else:
        how += ": check the Operator's DaemonSet for it (kubectl rollout status) and the "
        how += "ClusterPolicy's status for why its pod on the node was not replaced"
    return how


def split_key(check_id: str, path: UpgradePath, parts: int) -> str:
    """The check id alone for an unsplit finding and for the GPU Operator's part of a split
    one (the finding it was before), the check id and the change for the other parts."""
    if parts == 1 or path.change == "gpu_operator":
        return check_id
    return f"{check_id} {path.change}"


def split_title(title: str, path: UpgradePath, parts: int) -> str:
    if parts == 1:
        return title
    return f"{title} ({_TITLE_BY.get(path.managed_by, path.managed_by).format(change=path.change)})"
