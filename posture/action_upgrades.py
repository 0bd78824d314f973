"""The upgrade actions' words (posture.actions): which component moves to what, and by which
change (`upgrade_by`, inventory/stack_managers.py). PURE."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from inventory.patching.rollout import component_key, highest_version
from inventory.patching.targets import ClosedBound, Target, target, unfixed

if TYPE_CHECKING:
    from posture.actions import ActionFinding

COMPONENT_NAMES = {
    "driver": "the GPU driver",
    "container_toolkit": "the container toolkit",
    "device_plugin": "the device plugin",
    "dra_driver": "the DRA driver",  # the device-plugin layer where DRA hands out GPUs
    "gpu_operator": "the GPU Operator",
    "mig_manager": "the MIG manager",
    "dcgm_exporter": "the DCGM exporter",
    "firmware": "the GPU firmware",
}
OPERATOR = "gpu_operator"


def _exposures(finding: ActionFinding) -> list[dict]:
    listed = finding.evidence.get("exposures") or finding.evidence.get("late_exposures") or []
    return [e for e in listed if isinstance(e, dict)]


def _moves(finding: ActionFinding) -> tuple[str, ...]:
    """The components (the driver by branch) whose move closes a stack finding."""
    return tuple(sorted({component_key(e) for e in _exposures(finding)}))


def _targets(members: list[ActionFinding]) -> dict[str, Target]:
    """component key -> where the members' moves of it go: the highest fixed version any
    names, past every closed bound whose fixed version is unknown (inventory.patching.targets),
    else past that bound."""
    exposures: dict[str, list[dict]] = defaultdict(list)
    for finding in members:
        for exposure in _exposures(finding):
            exposures[component_key(exposure)].append(exposure)
    return {key: target(listed) for key, listed in exposures.items()}


def unfixed_exposures(finding: ActionFinding) -> list[dict]:
    """The exposures of a stack finding no version closes: the vendor says it has no fix, or
    names no fixed version for a range with no upper end. While one stays the finding stays
    open, whatever the pool is upgraded to. A range closed above whose fixed version is
    unknown (NVIDIA 5703's R535 vGPU Manager row, its fix a typo the import drops) is not one:
    any version past its bound closes it."""
    return [e for e in _exposures(finding) if unfixed(e)]


def component_name(key: str) -> str:
    name, _, branch = key.partition(" ")
    return f"{COMPONENT_NAMES.get(name, name)}{f' {branch}' if branch else ''}"


def _component_order(item: tuple[str, object]) -> tuple[int, str]:
    """The stack from the bottom up (driver, toolkit, ...), as COMPONENT_NAMES lists it."""
    name = item[0].partition(" ")[0]
    names = list(COMPONENT_NAMES)
    return (names.index(name) if name in names else len(names), item[0])


def upgrade_title(members: list[ActionFinding], where: str) -> str:
    """ "Upgrade the X to v and the Y past w on pool p": every move of a per-node component the
    pool's findings need, each to the highest fixed version any of them names (as the rollout
    plan targets), or past the bound of a range whose fixed version is unknown where no named
    version passes it. The GPU Operator is not one (operator_clause says it)."""
    targets = _targets(members)
    targets.pop(OPERATOR, None)
    hosts = _vgpu_hosts(members)
    parts = [
        f"{_named(k, hosts)} {t.words()}" for k, t in sorted(targets.items(), key=_component_order)
    ]
    return f"Upgrade {_listed(parts) or 'the GPU stack'} on {where}"


def operator_only(finding: ActionFinding) -> bool:
    """Every move that closes the finding is the GPU Operator's own upgrade: a change to the
    cluster's one Operator Deployment, not to the pool's nodes."""
    moves = _moves(finding)
    return bool(moves) and all(key == OPERATOR for key in moves)


def _operator_target(members: list[ActionFinding]) -> tuple[str, str]:
    """(where to, where it runs) of the GPU Operator move the members name: "to" the highest
    fixed version (or past a bound), and the Deployment (`upgrade_by.gpu_operator`) the sync
    saw it in, if recorded."""
    moved = _targets(members).get(OPERATOR) or Target(None)
    seen = sorted({str(upgrade_by(f).get(OPERATOR) or "") for f in members} - {""})
    return moved.words(), ", ".join(seen)


def operator_upgrade_title(members: list[ActionFinding]) -> str:
    """ "Upgrade the GPU Operator to v (Deployment ns/name)": its findings on every node of
    the cluster close with the one Deployment's upgrade (the gpu-operator Helm release)."""
    moved, seen = _operator_target(members)
    return f"Upgrade the GPU Operator {moved} ({seen or 'one for the cluster'})"


def operator_clause(members: list[ActionFinding]) -> str:
    """ ", with the GPU Operator itself to v (Deployment ns/name, one for the cluster)" where a
    pool's findings also need the Operator's upgrade: said apart from the pool, since the
    Deployment is the cluster's (upgrading it is no change "on pool p")."""
    if not any(OPERATOR in _moves(f) for f in members):
        return ""
    moved, seen = _operator_target(members)
    where = f"{seen}, one for the cluster" if seen else "one for the cluster"
    return f", with the GPU Operator itself {moved} ({where})"


def _vgpu_hosts(members: list[ActionFinding]) -> str:
    """Whether the driver the members move is the vGPU Manager (a vGPU host's host driver,
    which STACK-001 names in `host_driver`): "all", "some" or ""."""
    movers = [f for f in members if any(k.partition(" ")[0] == "driver" for k in _moves(f))]
    hosts = [f for f in movers if f.evidence.get("host_driver")]
    return "" if not hosts else "all" if len(hosts) == len(movers) else "some"


def _named(key: str, vgpu_hosts: str) -> str:
    if key.partition(" ")[0] != "driver" or not vgpu_hosts:
        return component_name(key)
    if vgpu_hosts == "all":
        branch = key.partition(" ")[2]
        return f"the vGPU Manager{f' {branch}' if branch else ''}"
    return f"{component_name(key)} (the vGPU Manager on the vGPU hosts)"


def _listed(parts: list[str]) -> str:
    return ", ".join(parts[:-1]) + f" and {parts[-1]}" if len(parts) > 1 else "".join(parts)


def upgrade_action_title(members: list[ActionFinding], where: str) -> str:
    """The upgrade action's title. Where the ClusterPolicy already asks for a fixed version of
    a component (`rollout_pending` in every member moving it) the change is made and only its
    rollout to the nodes is not: the title says to finish that, not to set the version."""
    moved: dict[str, set[str]] = defaultdict(set)  # component key -> its pending versions
    waiting: set[str] = set()  # component keys some member still needs set
    for finding in members:
        pending = upgrade_by(finding).get("rollout_pending") or {}
        for key in _moves(finding):
            asked = pending.get(key.partition(" ")[0]) if isinstance(pending, Mapping) else None
            if asked:
                moved[key].add(str(asked))
            else:
                waiting.add(key)
    done = {k: highest_version(v) for k, v in moved.items() if k not in waiting}
    by = by_change(upgrade_by(members[0])) + operator_clause(members)
    if not done:
        return upgrade_title(members, where) + by
    rollout = _listed(
        [f"{_asked_name(k, v)} {v}" for k, v in sorted(done.items(), key=_component_order)]
    )
    if not waiting:
        return (
            f"Finish the GPU Operator's rollout of {rollout} on {where}: the ClusterPolicy "
            "already asks for it"
        )
    rest = [_without(f, set(done)) for f in members]
    return (
        f"{upgrade_title(rest, where)}{by}; finish its rollout of {rollout} (the ClusterPolicy "
        "already asks for it)"
    )


def _asked_name(key: str, version: str) -> str:
    """The component as the version asked for names it: a driver's branch is its version's
    major, so a ClusterPolicy moving R570 nodes to 580.159.03 rolls out R580, not R570."""
    name, _, branch = key.partition(" ")
    major = version.split(".")[0]
    if re.fullmatch(r"R\d+", branch) and major.isdigit() and branch != f"R{major}":
        return component_name(f"{name} R{major}")
    return component_name(key)


def _without(finding: ActionFinding, keys: set[str]) -> ActionFinding:
    """The finding with the exposures of the given component keys left out (for the title)."""
    field = "exposures" if finding.evidence.get("exposures") else "late_exposures"
    listed = finding.evidence.get(field) or []
    kept = [e for e in listed if component_key(e) not in keys]
    return finding._replace(evidence={**finding.evidence, field: kept})


def hypervisor_upgrade(finding: ActionFinding) -> tuple[str, ...] | None:
    """(vGPU Manager version, its fix[, the bound to move past]) of a STACK-001 on a vGPU
    guest's hypervisor Manager (posture.rules.stack.hypervisor: evidence `where_to_fix`,
    `fixed_in`, `fixed_past`), the action's identity; None for any other finding. The bound
    is there only where no fixed version passes it, so a move to a fixed version keeps the key
    it had."""
    evidence = finding.evidence
    if not evidence.get("where_to_fix") or not evidence.get("vgpu_manager"):
        return None
    manager = (str(evidence["vgpu_manager"]), str(evidence.get("fixed_in") or ""))
    past = "" if manager[1] else str(evidence.get("fixed_past") or "")
    return (*manager, past) if past else manager


def hypervisor_upgrade_title(version: str, fixed_in: str, past: str = "") -> str:
    moved = Target(fixed_in or None, ClosedBound.parse(past)).words()
    return (
        f"Upgrade the vGPU Manager {version} {moved} on the hypervisors of the vGPU guests "
        "that show it (outside the cluster)"
    )


def upgrade_by(finding: ActionFinding) -> Mapping[str, Any]:
    by = finding.evidence.get("upgrade_by")
    return by if isinstance(by, Mapping) else {}


# How each kind of change is done, as the end of an upgrade action's title.
_BY_CHANGE = {
    "gpu_operator": " through the GPU Operator (ClusterPolicy or Helm values)",
    "node image": " by a new node image",
    "host": " with the host's packages or a new node image",
    "gke": " by a GKE node pool upgrade (its GKE version)",
    "unknown": " (who installs it on the node is unknown)",
}


def by_change(by: Mapping[str, Any]) -> str:
    managed_by, change = by.get("managed_by"), str(by.get("change") or "")
    if managed_by == "own_deployment":
        return f" through {change}, outside the GPU Operator"
    if managed_by == "pre_installed":
        return _BY_CHANGE.get(change, "")
    return _BY_CHANGE.get(str(managed_by), "")


def unknown_versions_title(members: list[ActionFinding], where: str) -> str | None:
    """STACK-004's action: "Make the container toolkit and device plugin versions known on
    pool p", naming only the components some member's node has an unknown version of (its
    evidence's `unknown`, node fields such as `driver_version`), the stack from the bottom
    up; None when no member lists one (the caller's generic title stands)."""
    keys = {
        str(field).removesuffix("_version")
        for finding in members
        for field in finding.evidence.get("unknown") or ()
    }
    names = [
        component_name(k).removeprefix("the ")
        for k in sorted(keys, key=lambda k: _component_order((k, None)))
    ]
    if not names:
        return None
    plural = "versions" if len(names) > 1 else "version"
    return f"Make the {_listed(names)} {plural} known on {where}"
