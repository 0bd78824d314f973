"""The upgrade actions' words (posture.actions): which component moves to what, and by which
change (`upgrade_by`, inventory/stack_managers.py). PURE."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from inventory.patching.rollout import component_key, highest_version

if TYPE_CHECKING:
    from posture.actions import ActionFinding

COMPONENT_NAMES = {
    "driver": "the GPU driver",
    "container_toolkit": "the container toolkit",
    "device_plugin": "the device plugin",
    "gpu_operator": "the GPU Operator",
    "mig_manager": "the MIG manager",
    "dcgm_exporter": "the DCGM exporter",
    "firmware": "the GPU firmware",
}


def _moves(finding: ActionFinding) -> tuple[tuple[str, str | None], ...]:
    """The component moves that close a stack finding: (component key, target version)."""
    listed = finding.evidence.get("exposures") or finding.evidence.get("late_exposures") or []
    fixed: dict[str, list[str]] = defaultdict(list)
    for exposure in listed:
        key = component_key(exposure)
        fixed[key]  # a component with no published fix still needs the move
        if exposure.get("fixed_version"):
            fixed[key].append(str(exposure["fixed_version"]))
    return tuple((k, highest_version(v) if v else None) for k, v in sorted(fixed.items()))


def unfixed_exposures(finding: ActionFinding) -> list[dict]:
    """The exposures of a stack finding no version closes (the vendor names no fix): while
    one stays the finding stays open, whatever the pool is upgraded to."""
    listed = finding.evidence.get("exposures") or finding.evidence.get("late_exposures") or []
    return [e for e in listed if isinstance(e, dict) and not e.get("fixed_version")]


def component_name(key: str) -> str:
    name, _, branch = key.partition(" ")
    return f"{COMPONENT_NAMES.get(name, name)}{f' {branch}' if branch else ''}"


def _component_order(item: tuple[str, object]) -> tuple[int, str]:
    """The stack from the bottom up (driver, toolkit, ...), as COMPONENT_NAMES lists it."""
    name = item[0].partition(" ")[0]
    names = list(COMPONENT_NAMES)
    return (names.index(name) if name in names else len(names), item[0])


def upgrade_title(members: list[ActionFinding], where: str) -> str:
    """ "Upgrade the X to v and the Y to w on pool p": every move the pool's findings need,
    each to the highest fixed version any of them names (as the rollout plan targets)."""
    fixed: dict[str, list[str]] = defaultdict(list)
    for finding in members:
        for key, version in _moves(finding):
            fixed[key].extend([version] if version else [])
    parts = [
        f"{component_name(k)} to {highest_version(v) if v else 'a fixed version'}"
        for k, v in sorted(fixed.items(), key=_component_order)
    ]
    listed = ", ".join(parts[:-1]) + f" and {parts[-1]}" if len(parts) > 1 else "".join(parts)
    return f"Upgrade {listed or 'the GPU stack'} on {where}"


def upgrade_by(finding: ActionFinding) -> Mapping[str, Any]:
    by = finding.evidence.get("upgrade_by")
    return by if isinstance(by, Mapping) else {}


# How each kind of change is done, as the end of an upgrade action's title.
_BY_CHANGE = {
    "gpu_operator": " through the GPU Operator (ClusterPolicy or Helm values)",
    "node image": " by a new node image",
    "host": " with the host's packages or a new node image",
    "unknown": " (who installs it on the node is unknown)",
}


def by_change(by: Mapping[str, Any]) -> str:
    managed_by, change = by.get("managed_by"), str(by.get("change") or "")
    if managed_by == "own_deployment":
        return f" through {change}, outside the GPU Operator"
    if managed_by == "pre_installed":
        return _BY_CHANGE.get(change, "")
    return _BY_CHANGE.get(str(managed_by), "")
