"""A node whose GPUs DRA shares reads as shared in the inventory (DESIGN §2), whatever GFD's
`nvidia.com/gpu.sharing-strategy=none` says: the weakest mode its claims in use hold a device
by, named with the claim; whole devices and the platform's monitoring reach leave it alone."""

from __future__ import annotations

from inventory.sources.normalise import normalise
from posture.rules.share.parties import node_facts
from tests.posture.dra_world import claim, device_class, dra_pod, resource_slice
from tests.posture.gpu_access_world import OPERATOR_NS, namespace, node

GFD_NONE = {"nvidia.com/gpu.sharing-strategy": "none"}


def _node(*objects: dict, labels: dict | None = None):
    snapshot = normalise(
        [
            namespace("alpha"),
            namespace("beta"),
            node("gpu-a", gpus=4, labels=labels if labels is not None else GFD_NONE),
            device_class(),
            resource_slice("gpu-a"),
            *objects,
        ],
        configured_platform=(OPERATOR_NS,),
    )
    (found,) = snapshot.nodes
    return found


def test_a_time_slicing_claim_two_pods_use_makes_the_node_time_sliced():
    found = _node(
        claim("alpha", "shared-gpu", ["gpu-0"], sharing="TimeSlicing", reserved_for=["a-0", "a-1"]),
        dra_pod("alpha", "a-0", "shared-gpu"),
        dra_pod("alpha", "a-1", "shared-gpu"),
    )
    assert found.sharing_strategy == "time_slicing"
    assert "DRA" in found.sharing_basis and "alpha/shared-gpu" in found.sharing_basis
    assert node_facts(found)["node_sharing_strategy"] == "time_slicing"


def test_mps_claims_on_one_device_make_the_node_mps():
    found = _node(
        claim("alpha", "mps-a", ["gpu-1"], sharing="MPS", reserved_for=["a-0"]),
        claim("beta", "mps-b", ["gpu-1"], sharing="MPS", reserved_for=["b-0"]),
        dra_pod("alpha", "a-0", "mps-a"),
        dra_pod("beta", "b-0", "mps-b"),
    )
    assert found.sharing_strategy == "mps"
    assert "by mps" in found.sharing_basis


def test_the_weakest_mode_wins_and_a_tenants_admin_reach_is_time_slicing():
    found = _node(
        claim("alpha", "mps-a", ["gpu-1"], sharing="MPS", reserved_for=["a-0"]),
        claim("alpha", "whole", ["gpu-2"], reserved_for=["a-1"]),
        claim("beta", "peek", ["gpu-2"], admin=True, reserved_for=["b-0"]),
        dra_pod("alpha", "a-0", "mps-a"),
        dra_pod("alpha", "a-1", "whole"),
        dra_pod("beta", "b-0", "peek"),
    )
    assert found.sharing_strategy == "time_slicing"
    assert "adminAccess" in found.sharing_basis


def test_whole_devices_and_the_platforms_monitoring_reach_keep_the_labels_value():
    found = _node(
        claim("alpha", "one", ["gpu-0"], reserved_for=["a-0"]),
        claim("beta", "two", ["gpu-1"], reserved_for=["b-0"]),
        claim(OPERATOR_NS, "dcgm", ["gpu-0", "gpu-1"], admin=True, reserved_for=["dcgm-0"]),
        dra_pod("alpha", "a-0", "one"),
        dra_pod("beta", "b-0", "two"),
        dra_pod(OPERATOR_NS, "dcgm-0", "dcgm"),
    )
    assert (found.sharing_strategy, found.sharing_basis) == ("none", "")


def test_a_claim_no_pod_uses_shares_nothing_and_mps_does_not_strengthen_time_slicing():
    idle = claim("alpha", "idle", ["gpu-0"], sharing="TimeSlicing")
    assert _node(idle).sharing_strategy == "none"
    assert (
        _node(
            claim("alpha", "mps-a", ["gpu-1"], sharing="MPS", reserved_for=["a-0"]),
            claim("beta", "mps-b", ["gpu-1"], sharing="MPS", reserved_for=["b-0"]),
            labels={"nvidia.com/gpu.sharing-strategy": "time-slicing"},
        ).sharing_strategy
        == "time_slicing"
    )
