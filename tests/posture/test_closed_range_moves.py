"""A range closed above whose fixed version is not known (NVIDIA 5703's R535 rows: their fix a
typo the import drops) closes past its bound, wherever a move is decided (pure, no database):
the rollout plan's "no fix named", a ClusterPolicy's pending rollout, and the action of a vGPU
guest's hypervisor Manager. tests/posture/test_actions_closed_range.py has the synced worlds."""

from __future__ import annotations

import dataclasses

import pytest

from inventory.bulletins.csaf.document import parse_advisory
from inventory.bulletins.csaf.fixes import fixes
from inventory.bulletins.patch_refresh import exposure_dicts
from inventory.patching.hypervisor import hypervisor_manager, hypervisor_manager_status
from inventory.patching.rollout import RolloutNode, rollout_plan
from inventory.stack_managers import upgrade_paths
from inventory.stack_rollout import rollout_pending
from posture.actions import actions_for
from tests.inventory.test_stack_managers import R570_POD, node, policy
from tests.posture.builders import gpu_node, inputs, pod, run, tenant
from tests.posture.test_actions import finding
from tests.posture.test_actions_closed_range import LATER, TYPO
from tests.posture.test_vgpu_hypervisor_manager import guest_labels

# 5703's R535 row as a node stores it: closed at 535.261.04, no fixed version, none said missing.
CLOSED = {
    "component": "driver",
    "installed": "535.261.04",
    "fixed_version": None,
    "affected": "<= 535.261.04",
    "advisory_id": "5703",
    "no_fix": None,
    "branch_fixes": {"R570": "570.195.02", "R580": "580.95.02"},
}
LATER_FIX = {**CLOSED, "fixed_version": "535.309.01", "affected": "<= 535.288.01",
             "advisory_id": "5821", "branch_fixes": {"R535": "535.309.01"}}  # fmt: skip


def wave(*exposures: dict):
    node_ = RolloutNode("c1", "vdi", "kvm-1", "below_baseline", exposures, {"driver": "535.261.04"})
    (plan,) = rollout_plan([node_])
    (only,) = plan.waves
    return only


def test_the_rollout_plan_lists_no_closed_range_its_target_passes():
    assert wave(CLOSED, LATER_FIX).unfixed == []
    assert wave(CLOSED, LATER_FIX).targets == {"driver R535": "535.309.01"}
    # Alone, no version is named: the plan targets none, and says none is named.
    assert wave(CLOSED).unfixed == ["driver R535 5703"]
    # An open range with no fixed version stays listed whatever the target.
    open_range = {**CLOSED, "affected": "* *", "advisory_id": "OPEN-1"}
    assert wave(open_range, LATER_FIX).unfixed == ["driver R535 OPEN-1"]
    # So does one the vendor says has no fix.
    said = {**CLOSED, "no_fix": "no_fix_planned: not fixed", "advisory_id": "NFP-1"}
    assert wave(said, LATER_FIX).unfixed == ["driver R535 NFP-1"]


R570_CLOSED = {
    "component": "driver",
    "installed": "570.172.08",
    "fixed_version": None,
    "affected": "<= 570.190.01",
    "branch_fixes": {"R580": "580.159.03"},
}


@pytest.mark.parametrize(
    ("asked", "pending"),
    [
        # Past the bound on the node's own branch: the Operator's rollout is all that is left.
        ("570.211.01", {"driver": "570.211.01"}),
        # Inside the range: the ClusterPolicy asks for an affected version.
        ("570.190.01", {}),
        # Another branch is judged by its own fix (R580's 580.159.03), never by R570's bound.
        ("580.105.08", {}),
        ("580.159.03", {"driver": "580.159.03"}),
    ],
)
def test_a_clusterpolicy_asking_past_a_closed_bound_is_a_pending_rollout(asked, pending):
    spec = {"enabled": True, "version": asked}
    paths = upgrade_paths(node(), policy(driver=spec), [R570_POD])
    assert rollout_pending(paths, [R570_CLOSED]) == pending


def hypervisor_action(*bulletins: dict) -> str:
    """The title of the action holding vm-a's hypervisor STACK-001: a vGPU guest whose labels
    show its hypervisor's R535 vGPU Manager 535.261.04, judged by our own bulletins."""
    vm = gpu_node("vm-a", driver_version="535.161.07", labels=guest_labels("535.261.04"))
    world = inputs(
        nodes=(vm,),
        pods=(pod("alpha", "train-0", node="vm-a"),),
        tenants=(tenant("alpha", namespaces=("alpha",)),),
    )
    found = hypervisor_manager(vm.labels, vm.driver_version_source)
    assert found is not None
    read = [f for b in bulletins for f in fixes(parse_advisory(b))[0]]
    judged = hypervisor_manager_status(found, read)
    record = {"version": found.version, "branch_label": found.branch_label,
              "status": judged.status, "exposures": exposure_dicts(judged.exposures)}  # fmt: skip
    patch = {"vm-a": {"status": "current", "exposures": [], "hypervisor_manager": record}}
    (draft,) = run("STACK-001", dataclasses.replace(world, patch=patch))
    (action,) = actions_for([finding("STACK-001", "Node", "vm-a", evidence=draft.evidence)])
    return action.title


def test_a_hypervisor_manager_in_a_closed_range_moves_past_it():
    assert hypervisor_action(TYPO) == (
        "Upgrade the vGPU Manager 535.261.04 past 535.261.04 on the hypervisors of the vGPU "
        "guests that show it (outside the cluster)"
    )
    assert hypervisor_action(TYPO, LATER) == (
        "Upgrade the vGPU Manager 535.261.04 to 535.309.01 on the hypervisors of the vGPU "
        "guests that show it (outside the cluster)"
    )
