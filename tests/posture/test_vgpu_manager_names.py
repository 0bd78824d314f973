"""On a vm-vgpu node the host driver is NVIDIA's vGPU Manager: STACK-001's title and evidence,
and STACK-005's evidence, name it so, while the exposures keep component `driver` (the
contract the actions, VEX and the rollout plan read)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import time_machine

from inventory.sources.node_versions import VGPU_MANAGER_POD
from tests.posture.builders import gpu_node, inputs, pod, run, tenant

RELEASED = datetime(2025, 4, 24, tzinfo=UTC)
VGPU = "nvidia.com/NVIDIA_A10-12Q"
EXPOSURE = {
    "component": "driver",
    "installed": "550.90.05",
    "fixed_version": "550.163.02",
    "severity": "medium",
    "advisory_id": "5630",
    "released": RELEASED.isoformat(),
    "cves": ["CVE-2025-23245"],
}


def _world(**node_fields):
    node = gpu_node("vm-1", driver_version="550.90.05", gpu_capacity={VGPU: 4}, **node_fields)
    world = inputs(
        nodes=(node,),
        pods=(pod("team-a", "virt-launcher-a", node="vm-1", gpu={VGPU: 1}),),
        tenants=(tenant("team", namespaces=("team-a",)),),
    )
    patch = {"vm-1": {"status": "below_baseline", "exposures": [EXPOSURE], "notes": []}}
    return dataclasses.replace(world, patch=patch)


VGPU_HOSTS = (
    {"labels": {"nvidia.com/gpu.workload.config": "vm-vgpu"}},
    {"driver_version_source": VGPU_MANAGER_POD},
)


def test_stack_001_names_the_vgpu_manager_on_a_vgpu_host():
    for fields in VGPU_HOSTS:
        (draft,) = run("STACK-001", _world(**fields))
        assert draft.title == "GPU node vm-1: vGPU Manager 550.90.05 below the bulletin baseline"
        assert draft.evidence["components"] == ["vGPU Manager 550.90.05"]
        assert "vGPU Manager" in draft.evidence["host_driver"]
        assert [e["component"] for e in draft.evidence["exposures"]] == ["driver"]


def test_stack_005_evidence_names_the_vgpu_manager_on_a_vgpu_host():
    with time_machine.travel(RELEASED + timedelta(days=200), tick=False):
        (draft,) = run("STACK-005", _world(**VGPU_HOSTS[0]))
    assert "driver" not in draft.title  # its title names no component
    assert "vGPU Manager" in draft.evidence["host_driver"]
    assert [e["component"] for e in draft.evidence["late_exposures"]] == ["driver"]


def test_a_data_center_node_keeps_its_driver():
    (draft,) = run("STACK-001", _world())
    assert draft.title == "GPU node vm-1: driver 550.90.05 below the bulletin baseline"
    assert "host_driver" not in draft.evidence
