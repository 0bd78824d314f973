"""STACK-001, STACK-002 and STACK-003 each own their components' bulletin exposures, by id: a
toolkit exposure is STACK-002 only, a device plugin's STACK-003 only, and a clean node is none."""

from __future__ import annotations

from dataclasses import replace

import pytest

from posture.rules import CHECKS
from tests.posture.builders import gpu_node, inputs, pod, run, tenant

ALPHA = tenant("alpha", namespaces=("alpha",))
STACK_IDS = ("STACK-001", "STACK-002", "STACK-003")


def exposure(component: str, installed: str, fixed: str, severity: str = "high") -> dict:
    return {
        "component": component,
        "installed": installed,
        "fixed_version": fixed,
        "severity": severity,
        "cves": ["CVE-2025-23266"],
        "bulletin": "demo-5659",
        "released": "2026-07-15",
    }


def world(*exposures: dict):
    base = inputs(
        nodes=(gpu_node("gpu-1"),),
        pods=(pod("alpha", "trainer", node="gpu-1", gpu={"nvidia.com/gpu": 1}),),
        tenants=(ALPHA,),
    )
    return replace(base, patch={"gpu-1": {"exposures": list(exposures)}} if exposures else {})


@pytest.mark.parametrize(
    ("component", "owner"),
    [
        ("driver", "STACK-001"),
        ("container_toolkit", "STACK-002"),
        ("device_plugin", "STACK-003"),
        ("gpu_operator", "STACK-003"),
        ("dcgm_exporter", "STACK-003"),
        ("mig_manager", "STACK-003"),
    ],
)
def test_each_component_belongs_to_one_stack_check(component, owner):
    found = {check: run(check, world(exposure(component, "1.0.0", "1.0.1"))) for check in STACK_IDS}
    assert [c for c, drafts in found.items() if drafts] == [owner]
    (draft,) = found[owner]
    assert draft.subject_name == "gpu-1"
    assert draft.tenants == ("alpha",)
    assert draft.evidence["move_to"] == "1.0.1"
    assert draft.evidence["cves"] == ["CVE-2025-23266"]


def test_a_node_without_exposures_raises_none_of_them():
    assert all(run(check, world()) == [] for check in STACK_IDS)


def test_stack002_takes_the_worst_severity_of_its_exposures():
    drafts = run(
        "STACK-002",
        world(
            exposure("container_toolkit", "1.16.1", "1.16.2", "medium"),
            exposure("container_toolkit", "1.16.1", "1.17.8", "critical"),
        ),
    )
    (draft,) = drafts
    assert draft.severity == "critical"
    assert draft.evidence["move_to"] == "1.17.8"


def test_stack002_and_stack003_are_registered_with_their_mappings():
    assert "ATT&CK:T1611" in CHECKS["STACK-002"].mappings
    assert "SP800-53:SI-2" in CHECKS["STACK-003"].mappings
