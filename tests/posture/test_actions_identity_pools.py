"""The actions for POD-010 and POD-009 findings say what closes them: a shared identity is not
GPU sharing, and a pod inside another class's tainted pool is not fixed by tainting it."""

from __future__ import annotations

from posture.actions import group_of
from tests.posture.test_actions import finding

TWO = {"alpha": "internal", "beta": "internal"}
PARTIES = [{"party": "alpha"}, {"party": "beta"}]


def test_a_shared_cloud_identity_is_no_gpu_sharing_pair():
    role = "arn:aws:iam::111122223333:role/ml"
    shared = finding("POD-010", "CloudIdentity", role, tenants=TWO, evidence={"parties": PARTIES})
    _identity, title = group_of(shared)
    assert "sharing GPUs" not in title and title.startswith("Fix POD-010")


def test_a_pod_inside_another_class_pool_is_a_workload_fix():
    inside = finding(
        "POD-009",
        "Deployment",
        "train",
        namespace="int-a",
        pools=("sensitive-pool",),
        evidence={"pods": [{"pod": "int-a/train-1", "inside_pool_of": [{"class": "sensitive"}]}]},
    )
    identity, title = group_of(inside)
    assert identity[1] == "workload"
    assert title == "Keep Deployment int-a/train out of another class's pool"
    outside = finding("POD-009", "Deployment", "x", namespace="e", pools=("p",), evidence={})
    assert group_of(outside)[1] == "Taint pool p"
