"""POD-011 on other vendors' nodes: a tenant container that sets HABANA_VISIBLE_DEVICES on a
Gaudi node, or AMD_VISIBLE_DEVICES on an AMD node, without requesting one of those devices
reaches them outside the scheduler where the vendor's runtime (habana-container-runtime, AMD's
Container Toolkit) runs it: reported, the access unverified, with the reason in the evidence.
Never on a node without that vendor's devices; ROCR_/HIP_VISIBLE_DEVICES only narrow what a
container already has: no finding. The mixed cluster of test_mixed_vendor_accelerators."""

from __future__ import annotations

from typing import Any

from inventory.sources.normalise import normalise
from tests.posture.gpu_access_world import container, pod, run
from tests.posture.test_mixed_vendor_accelerators import mixed

ROCM = "rocm/pytorch:rocm6.2"


def env_pod(ns: str, name: str, node: str, gpu: dict | None = None, **env: str) -> dict[str, Any]:
    values = [{"name": k, "value": v} for k, v in env.items()]
    return pod(ns, name, container(image=ROCM, gpu=gpu, env=values), node_name=node)


def by_pod(drafts) -> dict[str, Any]:
    return {d.subject_name: d for d in drafts}


def test_the_vendor_variable_on_a_node_of_its_devices_is_gpu_access_outside_the_scheduler():
    found = by_pod(
        run(
            "POD-011",
            mixed(
                env_pod("ext", "hl-env-0", "gaudi-a", HABANA_VISIBLE_DEVICES="all"),
                env_pod("alpha", "amd-env-0", "mi300-a", AMD_VISIBLE_DEVICES="all"),
            ),
        )
    )
    assert set(found) == {"hl-env-0", "amd-env-0"}
    gaudi = found["hl-env-0"]
    assert gaudi.severity == "high" and list(gaudi.tenants) == ["ext"]
    assert gaudi.title.startswith("Container main of Pod ext/hl-env-0 sets HABANA_VISIBLE_DEVICES")
    assert "habana-container-runtime" in gaudi.title
    entry = gaudi.evidence["containers"][0]
    assert (entry["variable"], entry["value"], entry["field"]) == (
        "HABANA_VISIBLE_DEVICES",
        "all",
        "spec.containers[0].env[0]",
    )
    facts = gaudi.evidence["pods"][0]
    assert facts["node_accelerators"] == {"habana.ai/gaudi": 8}
    reason = facts["containers"][0]
    assert reason["honoured_here"] == "unverified"
    assert "habana-container-runtime" in reason["honoured_because"]
    amd = found["amd-env-0"]
    assert amd.evidence["containers"][0]["variable"] == "AMD_VISIBLE_DEVICES"
    assert "amd-container-runtime" in amd.evidence["pods"][0]["containers"][0]["honoured_because"]


def test_no_finding_without_the_vendors_devices_or_for_what_only_narrows_or_turns_off():
    drafts = run(
        "POD-011",
        mixed(
            # No Gaudi on the AMD node, no AMD GPU on the Gaudi node or the CPU node.
            env_pod("alpha", "hl-on-amd", "mi300-a", HABANA_VISIBLE_DEVICES="all"),
            env_pod("alpha", "amd-on-gaudi", "gaudi-a", AMD_VISIBLE_DEVICES="all"),
            env_pod("alpha", "amd-on-cpu", "cpu-a", AMD_VISIBLE_DEVICES="all"),
            # ROCm's own variables narrow what the container already has.
            env_pod("alpha", "rocr-0", "mi300-a", ROCR_VISIBLE_DEVICES="0"),
            env_pod("alpha", "hip-0", "mi300-a", HIP_VISIBLE_DEVICES="0"),
            # Off, and the device plugin's own allocation.
            env_pod("alpha", "amd-void", "mi300-a", AMD_VISIBLE_DEVICES="none"),
            env_pod("alpha", "amd-held", "mi300-a", {"amd.com/gpu": "1"}, AMD_VISIBLE_DEVICES="0"),
        ),
    )
    assert drafts == []


def test_nvidia_behaviour_is_unchanged_beside_the_vendor_variables():
    found = by_pod(
        run(
            "POD-011",
            mixed(env_pod("alpha", "nv-env-0", "h100-a", NVIDIA_VISIBLE_DEVICES="all")),
        )
    )
    assert "nv-env-0" in found
    assert "NVIDIA_VISIBLE_DEVICES without requesting a GPU" in found["nv-env-0"].title
    assert "variable" not in found["nv-env-0"].evidence["containers"][0]


def test_the_sync_keeps_the_vendor_variables_value():
    snapshot = normalise([env_pod("alpha", "amd-env-0", "mi300-a", AMD_VISIBLE_DEVICES="all")])
    env = snapshot.pods[0].containers[0].env
    assert [(v.name, v.value) for v in env] == [("AMD_VISIBLE_DEVICES", "all")]
