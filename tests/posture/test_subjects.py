"""One finding per cause: the subject builders (posture/rules/subjects.py) and the merge step
in registry.evaluate that joins the replicas of one workload."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from inventory.snapshot import Container, OwnerLink
from posture.exemptions import Exemption
from posture.rules.registry import FindingDraft, evaluate, merge_drafts
from tests.posture.builders import gpu_node, inputs, pod, run, tenant

TEAM = tenant("team", namespaces=("team-a",))
RULES = Path(__file__).resolve().parents[2] / "posture" / "rules"


def replicas(count: int, rs: str = "trainer-5d9c7b8f6", start: int = 0, **fields):
    """`count` pods of Deployment team-a/trainer through ReplicaSet `rs`, privileged."""
    return tuple(
        pod(
            "team-a",
            f"{rs}-{i:05d}",
            node=f"gpu-{i % 3}",
            containers=(Container("main", "registry.example.com/t:1", privileged=True),),
            labels={"app": "trainer", "pod-template-hash": rs.rsplit("-", 1)[1]},
            owner_kind="ReplicaSet",
            owner_name=rs,
            **fields,
        )
        for i in range(start, start + count)
    )


def test_twelve_privileged_replicas_are_one_pod001_finding():
    world = inputs(pods=replicas(12), tenants=(TEAM,))
    (draft,) = run("POD-001", world)
    assert (draft.subject_kind, draft.subject_namespace, draft.subject_name, draft.key) == (
        "Deployment",
        "team-a",
        "trainer",
        "",
    )
    assert draft.evidence["replicas"] == draft.exposure == 12
    assert len(draft.evidence["pods"]) == 12
    assert draft.evidence["pods"][0] == {
        "pod": "team-a/trainer-5d9c7b8f6-00000",
        "node": "gpu-0",
        "phase": "Running",
    }
    (entry,) = draft.evidence["containers"]
    assert entry["field"] == "spec.containers[0].securityContext.privileged"
    assert draft.evidence["resolved_by"] == "pod-template-hash label"
    assert draft.tenants == ("team",)
    assert draft.subject_labels == {"app": "trainer"}  # the template's, not the pod's hash
    assert draft.title == "Container main of Deployment team-a/trainer is privileged"


def test_the_pod_list_is_capped_and_the_count_is_not():
    (draft,) = run("POD-001", inputs(pods=replicas(25), tenants=(TEAM,)))
    assert (len(draft.evidence["pods"]), draft.evidence["replicas"], draft.exposure) == (20, 25, 25)


def test_two_rollout_versions_of_one_deployment_are_one_finding():
    pods = replicas(2) + replicas(3, rs="trainer-7f8e9d0c1")
    world = inputs(pods=pods, tenants=(TEAM,))
    (draft,) = run("POD-001", world)
    assert (draft.subject_name, draft.evidence["replicas"]) == ("trainer", 5)


def test_the_owner_index_names_the_deployment_without_the_label():
    pods = tuple(replace(p, labels={"app": "trainer"}) for p in replicas(2))
    links = (OwnerLink("ReplicaSet", "team-a", "trainer-5d9c7b8f6", "Deployment", "trainer"),)
    (draft,) = run("POD-001", inputs(pods=pods, tenants=(TEAM,), owners=links))
    assert (draft.subject_kind, draft.subject_name) == ("Deployment", "trainer")
    assert draft.evidence["resolved_by"] == "owner index"


def test_a_leaderworkersets_leaders_and_workers_are_one_finding():
    """Two groups of one LeaderWorkerSet: leaders in StatefulSet `infer`, each group's workers
    in `infer-<group>`; one template, so one finding with every pod counted."""
    lws = "leaderworkerset.sigs.k8s.io/"
    owners = {"infer-0": "infer", "infer-1": "infer"}  # leader pod -> its StatefulSet
    owners |= {"infer-0-1": "infer-0", "infer-1-1": "infer-1"}  # worker pod -> its group
    pods = tuple(
        replace(
            replicas(1)[0],
            name=name,
            owner_kind="StatefulSet",
            owner_name=sts,
            labels={f"{lws}name": "infer", f"{lws}group-index": name.split("-")[1]},
        )
        for name, sts in owners.items()
    )
    (draft,) = run("POD-001", inputs(pods=pods, tenants=(TEAM,)))
    assert (draft.subject_kind, draft.subject_name) == ("LeaderWorkerSet", "infer")
    assert draft.evidence["replicas"] == draft.exposure == 4
    assert draft.subject_labels == {f"{lws}name": "infer"}


def test_bare_pods_stay_one_finding_each():
    pods = (pod("team-a", "a", **{"host_pid": True}), pod("team-a", "b", **{"host_pid": True}))
    drafts = run("POD-002", inputs(pods=pods, tenants=(TEAM,)))
    assert [(d.subject_kind, d.subject_name, d.exposure) for d in drafts] == [
        ("Pod", "a", 1),
        ("Pod", "b", 1),
    ]


def test_a_stack_problem_on_a_node_with_five_tenants_is_one_finding_for_all_five():
    tenants = tuple(tenant(f"t{i}") for i in range(5))
    world = inputs(
        nodes=(gpu_node(driver_version=None, gpu_count=8),),
        pods=tuple(pod(t.slug, "p") for t in tenants) + (pod("kube-system", "agent"),),
        tenants=tenants,
    )
    (draft,) = run("STACK-004", world)
    assert draft.tenants == ("t0", "t1", "t2", "t3", "t4")
    assert (draft.subject_kind, draft.subject_name, draft.exposure) == ("Node", "gpu-1", 8)


def _draft(**fields) -> FindingDraft:
    base = {
        "check_id": "POD-001",
        "tenants": ("a",),
        "subject_kind": "Deployment",
        "subject_namespace": "ns",
        "subject_name": "w",
        "key": "main",
        "evidence": {"field": "x", "pods": [{"pod": "ns/w-0"}], "replicas": 1},
    }
    return FindingDraft(**{**base, **fields})


def test_merge_joins_drafts_of_one_identity_only():
    first = _draft(title="first", severity="high")
    second = _draft(
        tenants=("b",),
        evidence={"field": "y", "pods": [{"pod": "ns/w-1"}], "replicas": 1},
        severity="critical",
        exposure=2,
    )
    other_key = _draft(key="sidecar")
    merged, kept = merge_drafts([first, second, other_key])
    assert kept == other_key
    assert merged.tenants == ("a", "b")
    assert merged.exposure == 3
    assert merged.evidence == {
        "field": "x",  # the first draft's, whatever the second says
        "pods": [{"pod": "ns/w-0"}, {"pod": "ns/w-1"}],
        "replicas": 2,
    }
    assert (merged.title, merged.severity) == ("first", "critical")  # the worse severity
    assert merge_drafts([_draft(severity=""), _draft(severity="low")])[0].severity == "low"


def test_evaluate_merges_before_exemptions_match_the_workloads_labels():
    world = inputs(pods=replicas(4), tenants=(TEAM,))
    (draft,) = evaluate(world, only=["POD-001"]).drafts
    assert draft.evidence["replicas"] == 4
    exempt = Exemption(1, "POD-001", namespace="team-a", labels={"app": "trainer"})
    evaluation = evaluate(replace(world, exemptions=(exempt,)), only=["POD-001"])
    assert evaluation.drafts == ()
    assert [(d.subject_name, exemption) for d, exemption in evaluation.exempted] == [("trainer", 1)]


def test_no_check_builds_a_finding_draft_by_hand():
    """subjects.py is THE way to build a draft: labels, tenants and exposure set alike."""
    builders = {"registry.py", "subjects.py"}
    offenders = [
        str(path.relative_to(RULES))
        for path in RULES.rglob("*.py")
        if path.name not in builders and re.search(r"FindingDraft\(", path.read_text())
    ]
    assert offenders == []
