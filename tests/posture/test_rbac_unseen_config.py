"""K8S-004 where the snapshot did not hold the GPU configuration a grant reaches: the GPU
Operator's ClusterPolicy left out of `kubectl get` (the documented command long did), or no
sharing ConfigMap read beside a ClusterPolicy that was. A tenant that may write them is still
reported, with what was not seen said (`target_seen` false)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from inventory.snapshot import Workload
from posture.rules.k8s.rbac_gpu_targets import NO_OPERATOR
from posture.rules.registry import run_checks
from tests.posture.test_rules_rbac import (
    DEVS,
    OPERATOR_WORKLOAD,
    OPS,
    cluster_role,
    crb,
    rb,
    rule,
    world,
)

OPERATOR = Workload(
    "Deployment", OPS, "gpu-operator", images={"o": "nvcr.io/nvidia/gpu-operator:v24.9.2"}
)


def _k8s004(roles, bindings, *, policies=False, workloads=(OPERATOR, OPERATOR_WORKLOAD), cms=True):
    inputs = world(roles, bindings)
    snapshot = replace(
        inputs.snapshot,
        gpu_operator_policies=inputs.snapshot.gpu_operator_policies if policies else (),
        configmaps=inputs.snapshot.configmaps if cms else (),
        workloads=tuple(workloads),
    )
    return run_checks(replace(inputs, snapshot=snapshot), only=["K8S-004"])


def _nvidia(resource="clusterpolicies", verbs=("patch",), names=(), groups=("nvidia.com",)):
    return cluster_role("r", rule(groups, (resource,), verbs, names))


@pytest.mark.parametrize(
    ("role", "fires"),
    [
        pytest.param(_nvidia(), True, id="patch-clusterpolicies"),
        pytest.param(_nvidia(names=("cluster-policy",)), True, id="by-name"),
        pytest.param(_nvidia(names=("whatever-it-is-called",)), True, id="by-any-name"),
        pytest.param(_nvidia(verbs=("update",), names=("*",)), True, id="name-star"),
        pytest.param(_nvidia("nvidiadrivers"), True, id="patch-nvidiadrivers"),
        pytest.param(_nvidia(verbs=("create",)), True, id="create"),
        pytest.param(
            _nvidia(verbs=("create",), names=("cluster-policy",)), False, id="create-by-name"
        ),
        pytest.param(_nvidia(verbs=("get", "list", "watch")), False, id="read-only"),
        pytest.param(_nvidia(groups=("example.com",)), False, id="other-group"),
    ],
)
def test_operator_running_without_its_clusterpolicy_in_the_snapshot(role, fires):
    found = _k8s004([role], [crb("beta-cp", "r", DEVS)])
    assert bool(found) is fires
    if fires:
        (draft,) = found
        assert draft.severity == ""  # the check's: high
        assert draft.evidence["target_seen"] is False
        assert "no ClusterPolicy was in the snapshot" in draft.evidence["target_unseen"]
        assert f"runs in namespace {OPS} but" in draft.evidence["target_unseen"]
        assert all(o["seen"] is False for o in draft.evidence["objects"])
        assert draft.evidence["objects"][0]["object"] in ("any ClusterPolicy", "any NVIDIADriver")


def test_a_clusterpolicy_read_is_named_and_seen():
    (draft,) = _k8s004([_nvidia()], [crb("b", "r", DEVS)], policies=True)
    assert "target_seen" not in draft.evidence
    assert draft.evidence["objects"][0] == {
        "object": "ClusterPolicy cluster-policy",
        "purpose": "gpu_operator",
        "verbs": ["patch"],
    }


def test_seen_configmaps_and_unseen_clusterpolicy_in_one_finding():
    both = cluster_role(
        "r",
        rule(resources=("configmaps",), verbs=("update",)),
        rule(("nvidia.com",), ("clusterpolicies",), ("patch",)),
    )
    (draft,) = _k8s004([both], [crb("b", "r", DEVS)])
    by_object = {o["object"]: o for o in draft.evidence["objects"]}
    assert "seen" not in by_object["ConfigMap gpu-operator/time-slicing-config"]
    assert by_object["any ClusterPolicy"]["seen"] is False
    assert draft.evidence["target_seen"] is False


# --- no GPU Operator seen at all: said low, and only for a rule that names NVIDIA's resources --


@pytest.mark.parametrize(
    ("role", "fires"),
    [
        pytest.param(_nvidia(), True, id="names-clusterpolicies"),
        pytest.param(_nvidia("*"), True, id="names-the-group"),
        pytest.param(_nvidia(groups=("*",)), True, id="names-the-resource"),
        pytest.param(_nvidia("nvidiadrivers", names=("pool-a",)), True, id="nvidiadriver-by-name"),
        pytest.param(_nvidia(verbs=("get",)), False, id="read-only"),
    ],
)
def test_no_operator_seen(role, fires):
    found = _k8s004([role], [crb("b", "r", DEVS)], workloads=(OPERATOR_WORKLOAD,))
    assert bool(found) is fires
    if fires:
        (draft,) = found
        assert draft.severity == "low"
        assert draft.evidence["target_seen"] is False
        assert draft.evidence["target_unseen"] == NO_OPERATOR


def test_no_operator_a_wildcard_grant_is_judged_by_what_was_read():
    admin = cluster_role("r", rule(("*",), ("*",), ("*",)))
    (draft,) = _k8s004([admin], [rb(OPS, "b", "r", DEVS)], workloads=(OPERATOR_WORKLOAD,))
    # The sharing ConfigMaps it may write, high; nothing said of ClusterPolicies.
    assert draft.severity == ""
    assert "target_seen" not in draft.evidence
    assert all("ClusterPolicy" not in o["object"] for o in draft.evidence["objects"])


def test_a_low_stand_in_with_a_real_target_is_high():
    both = cluster_role(
        "r",
        rule(resources=("configmaps",), verbs=("update",)),
        rule(("nvidia.com",), ("clusterpolicies",), ("patch",)),
    )
    (draft,) = _k8s004([both], [crb("b", "r", DEVS)], workloads=(OPERATOR_WORKLOAD,))
    assert draft.severity == ""
    assert draft.evidence["target_unseen"] == NO_OPERATOR


# --- the ConfigMap stand-in also where a ClusterPolicy was read --------------------------------


def test_configmaps_of_the_stack_namespace_stand_in_beside_a_clusterpolicy():
    editor = cluster_role("r", rule(resources=("configmaps",), verbs=("update", "patch")))
    (draft,) = _k8s004([editor], [rb(OPS, "b", "r", DEVS)], policies=True, cms=False)
    assert [o["object"] for o in draft.evidence["objects"]] == [
        f"every ConfigMap in namespace {OPS}"
    ]
    assert draft.evidence["target_seen"] is False
    assert "no device-plugin/MIG ConfigMap was seen" in draft.evidence["target_unseen"]
    # In a namespace of no GPU component, still nothing.
    assert _k8s004([editor], [rb("tools", "b", "r", DEVS)], policies=True, cms=False) == []


def test_with_sharing_configmaps_read_writing_others_is_not_k8s004():
    editor = cluster_role("r", rule(resources=("configmaps",), verbs=("update",), names=("x",)))
    assert _k8s004([editor], [rb(OPS, "b", "r", DEVS)], policies=True) == []
