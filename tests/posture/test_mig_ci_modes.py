"""SHARE-003 on NVIDIA MIG compute instances: two tenants holding compute instances of one
GPU-instance profile (`mig-1c.3g.40gb` beside `mig-2c.3g.40gb`) may share one GPU instance, so
SHARE-003 judges mig_ci for the very pairs SHARE-002 reports, with SHARE-002's co-residence; and
time-slicing pairs agree with SHARE-001's where two names are one physical pool."""

from __future__ import annotations

from dataclasses import replace

import pytest

import posture.rules.share  # noqa: F401  (registers the SHARE checks)
from tests.posture.builders import gpu_node, inputs, pod, run, sliced_node, tenant, trust_class

ALPHA = tenant("alpha")  # internal: exclusive, mig_gi, vgpu_fixed, vgpu_equal (no mig_ci)
GAMMA = tenant("gamma")
EXT = tenant("ext", "external")
# A class edited to allow compute instances between tenants (the seeds' only one is platform).
CI_OK = replace(
    trust_class("internal_trusted"),
    slug="ci_ok",
    allowed_modes=(*trust_class("internal_trusted").allowed_modes, "mig_ci"),
)
LAB, LAB2 = (replace(tenant(slug), trust_class=CI_OK) for slug in ("lab", "lab2"))
TENANTS = (ALPHA, GAMMA, EXT, LAB, LAB2)
C1, C2 = "nvidia.com/mig-1c.3g.40gb", "nvidia.com/mig-2c.3g.40gb"
C4 = "nvidia.com/mig-1c.4g.40gb"  # only one 4g GPU instance fits on a GPU
OTHER_GI = "nvidia.com/mig-1c.2g.20gb"


def mig_node(capacity: dict[str, int]):
    return gpu_node(
        gpu_count=1,
        gpu_capacity=capacity,
        sharing_strategy="mig",
        mig_strategy="mixed",
    )


def world(node, *placed):
    """placed: (namespace, resource) per pod."""
    pods = tuple(pod(ns, f"p{i}", gpu={res: 1}) for i, (ns, res) in enumerate(placed))
    return inputs(nodes=(node,), pods=pods, tenants=TENANTS)


def pairs(check_id: str, w) -> set[tuple[str, ...]]:
    return {d.tenants for d in run(check_id, w)}


def test_two_ci_sizes_of_one_gi_profile_fire_share003_as_possible():
    w = world(mig_node({C1: 1, C2: 1}), ("alpha", C1), ("gamma", C2))
    (found,) = run("SHARE-003", w)
    assert found.tenants == ("alpha", "gamma")
    assert found.evidence["sharing_mode"] == "mig_ci"
    assert found.evidence["forbidden_by"] == ["internal"]
    assert found.evidence["gpu_instance_profile"] == "3g.40gb"
    assert found.evidence["co_residence"] == "possible"
    assert found.key == "3g.40gb:mig_ci:alpha:gamma"
    assert "compute instances of 3g.40gb GPU instances by mig_ci" in found.title
    assert found.title.endswith("(possible co-residence)")
    # SHARE-002's words and verdict for the same pair on the same node.
    (share002,) = run("SHARE-002", w)
    (node_entry,) = found.evidence["nodes"]
    assert node_entry == share002.evidence["nodes"][0]


def test_one_gpu_instance_on_the_node_is_certain_like_share002():
    w = world(mig_node({C4: 2, "nvidia.com/mig-2c.4g.40gb": 1}), ("alpha", C4), ("ext", C4))
    (found,) = run("SHARE-003", w)
    (share002,) = run("SHARE-002", w)
    assert found.evidence["co_residence"] == share002.evidence["co_residence"] == "certain"
    assert set(found.evidence["forbidden_by"]) == {"internal", "external"}


@pytest.mark.parametrize(
    ("placed", "expected"),
    [
        ((("alpha", C1), ("gamma", C2)), {("alpha", "gamma")}),
        ((("alpha", C1), ("gamma", C1)), {("alpha", "gamma")}),
        (
            (("alpha", C1), ("ext", C2), ("gamma", C2)),
            {("alpha", "ext"), ("alpha", "gamma"), ("ext", "gamma")},
        ),
        # one tenant on two CI sizes shares with nobody
        ((("alpha", C1), ("alpha", C2)), set()),
        # different GPU-instance profiles are different GPU instances
        ((("alpha", C1), ("gamma", OTHER_GI)), set()),
    ],
)
def test_share003_pairs_are_share002_pairs_where_classes_forbid_mig_ci(placed, expected):
    w = world(mig_node({C1: 1, C2: 2, OTHER_GI: 1}), *placed)
    assert pairs("SHARE-003", w) == pairs("SHARE-002", w) == expected


def test_classes_that_both_allow_mig_ci_stay_quiet_while_share002_reports():
    w = world(mig_node({C1: 1, C2: 1}), ("lab", C1), ("lab2", C2))
    assert run("SHARE-003", w) == []
    assert pairs("SHARE-002", w) == {("lab", "lab2")}


def test_platform_pod_on_another_ci_size_meets_a_tenant_whose_class_forbids_it():
    w = world(mig_node({C1: 1, C2: 1}), ("alpha", C1), ("kube-system", C2))
    (found,) = run("SHARE-003", w)
    assert found.tenants == ("alpha",)
    assert [p["party"] for p in found.evidence["parties"]] == ["platform", "alpha"]
    assert found.evidence["co_residence"] == "possible"


@pytest.mark.parametrize(
    "names",
    [
        ("nvidia.com/gpu", "nvidia.com/gpu.shared"),  # renameByDefault and the plain name
        ("nvidia.com/gpu.shared", "nvidia.com/gpu.shared"),
    ],
)
def test_time_slicing_pairs_agree_with_share001_across_the_shared_rename(names):
    node = sliced_node(gpu_capacity={"nvidia.com/gpu.shared": 4})
    w = world(node, ("alpha", names[0]), ("ext", names[1]))
    assert pairs("SHARE-003", w) == pairs("SHARE-001", w) == {("alpha", "ext")}
