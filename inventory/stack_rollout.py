"""Whether a bulletin's fix is a rollout the GPU Operator still has to finish, and which
driver branch the ClusterPolicy tells the Operator to run precompiled. PURE.

Where the ClusterPolicy already asks for a version at or above every fix a node's exposures
name (past the bound of a range whose fix is unknown), and the node still runs below it,
setting the version again changes nothing: the fix is to let the Operator finish rolling it
out (inventory/stack_managers.py says who upgrades what).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from inventory.bulletins.csaf.versions import compare, parse_version
from inventory.patching.targets import closed_bound
from inventory.patching.versions import driver_branch
from inventory.snapshot import GpuOperatorPolicy
from inventory.stack_managers import OPERATOR, UpgradePath


def rollout_pending(paths: Mapping[str, UpgradePath], exposures: Iterable[dict]) -> dict[str, str]:
    """component -> the version the ClusterPolicy already asks for, where that version is at or
    above every fixed version the node's exposures of it name (a driver on another branch: its
    own branch's fix, per the bulletin) and the node still runs below it:
    the Operator has not rolled it out to the node yet (its driver upgrade controller is at
    work, held, or failing; or, without it, the driver pod waits to be deleted). Setting the
    version again would change nothing."""
    fixes: dict[str, list[dict]] = {}
    for exposure in exposures:
        fixes.setdefault(str(exposure.get("component") or ""), []).append(exposure)
    pending = {}
    for component, listed in fixes.items():
        path = paths.get(component)
        desired = path.desired_version if path and path.managed_by == OPERATOR else None
        if not desired or not parse_version(desired):
            continue
        if all(_asked_past(desired, e) for e in listed):
            pending[component] = desired
    return pending


def _asked_past(desired: str, exposure: dict) -> bool:
    fixed, installed = (
        _fix_for(desired, exposure),
        str(exposure.get("installed") or ""),
    )
    if not parse_version(installed) or compare(installed, desired) >= 0:
        return False
    if parse_version(fixed):
        return compare(desired, fixed) >= 0
    # No fixed version known for it, but a range closed above on the node's branch: a version
    # past the bound on that branch closes it (inventory.patching.targets; NVIDIA 5703's R535
    # row, its fix a typo the import drops). A version on another branch is judged by its own.
    bound = closed_bound(exposure)
    same_branch = exposure.get("component") != "driver" or (
        driver_branch(desired) == driver_branch(installed)
    )
    return bound is not None and same_branch and bound.cleared_by(desired)


def _fix_for(desired: str, exposure: dict) -> str:
    """The fixed version that judges `desired`: for a driver, its own branch's (a number above
    another branch's fix is no fix: 580.105.08 > 570.211.01, but R580 is fixed at 580.159.03),
    as the bulletin names it (`branch_fixes`); "" where the bulletin names no fix for that
    branch, or (a record without `branch_fixes`) where it is another branch than the fix's."""
    fixed = str(exposure.get("fixed_version") or "")
    if exposure.get("component") != "driver":
        return fixed
    branch = driver_branch(desired)
    by_branch = exposure.get("branch_fixes")
    if isinstance(by_branch, Mapping):
        return str(by_branch.get(branch) or "") if branch else ""
    return fixed if branch and branch == driver_branch(fixed) else ""


def precompiled_branch(policies: Sequence[GpuOperatorPolicy]) -> str | None:
    """The driver branch ("535") the ClusterPolicy tells the Operator to run, where it runs a
    precompiled driver (`driver.usePrecompiled: true`): `driver.version` then names a branch,
    and the image tag <branch>-<kernel>-<os> no exact version, so the node page can say what
    the Operator was told where the running version is unknown. Never a version: nothing
    judges patch status by it (stack_managers._desired asks for none). None unless every
    ClusterPolicy was read and they agree (the Operator acts on one, the snapshot does not say
    which), and only where NVIDIADriver objects do not set the driver instead."""
    found: set[str | None] = set()
    for policy in policies:
        spec = policy.spec
        if policy.error or "driver_use_crd" not in spec or spec["driver_use_crd"] is True:
            return None
        branch = spec.get("driver_version")
        precompiled = spec.get("driver_use_precompiled") is True
        enabled = spec.get("driver_enabled") is not False
        found.add(branch if precompiled and enabled and isinstance(branch, str) else None)
    found.discard("")
    return found.pop() if len(found) == 1 else None
