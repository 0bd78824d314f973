"""A finding's identity is (check, subject) (DESIGN §5): the checks that judge each container
(POD-001, POD-004, POD-006, POD-007, POD-008, POD-011) report one finding per workload, listing
the containers concerned, never one per container (posture/rules/pod/container_findings.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from inventory.snapshot import TEMPLATE_PHASE, Container, Pod, Workload
from posture.actions import ActionFinding, actions_for
from posture.rules.registry import evaluate
from posture.scoring import exposure_factor, finding_risk
from tests.posture.builders import env, gpu_node, inputs, pod, run, tenant

TEAM = tenant("team", namespaces=("team-a",))
# A random-looking secret (not the vendor's documented example), 40 characters.
SECRET = "q8Zr4Lw1Nc7Vt2Kx9Pb5Hs3Jd6Fg0Ym8Ue4Ao1Ri"
IMAGE = "registry.example.com/trainer:1"  # tag only: every tenant class requires a digest

# What makes each check fire in a container (POD-007 fires on IMAGE in all of them).
FIRES: dict[str, dict[str, Any]] = {
    "POD-001": {"privileged": True},
    "POD-004": {"capabilities_add": ("SYS_ADMIN",)},
    "POD-006": {"gpu_requests": {"nvidia.com/gpu": "1"}},
    "POD-007": {},
    "POD-008": {"env": (env("AWS_SECRET_ACCESS_KEY", SECRET),)},
    "POD-011": {"env": (env("NVIDIA_VISIBLE_DEVICES", "all"),)},
}


def deployment(count: int, *containers: Container, rs: str = "trainer-5d9c7b8f6") -> tuple:
    """`count` pods of Deployment team-a/trainer (through ReplicaSet `rs`) on GPU nodes."""
    return tuple(
        pod(
            "team-a",
            f"{rs}-{i:05d}",
            node=f"gpu-{i % 2}",
            containers=containers,
            labels={"app": "trainer", "pod-template-hash": rs.rsplit("-", 1)[1]},
            owner_kind="ReplicaSet",
            owner_name=rs,
        )
        for i in range(count)
    )


def world(*pods):
    return inputs(pods=pods, nodes=(gpu_node("gpu-0"), gpu_node("gpu-1")), tenants=(TEAM,))


@pytest.mark.parametrize("check_id", sorted(FIRES))
def test_two_containers_of_one_deployment_are_one_finding_per_check(check_id):
    fields = FIRES[check_id]
    pods = deployment(3, Container("app", IMAGE, **fields), Container("sidecar", IMAGE, **fields))
    (draft,) = run(check_id, world(*pods))
    assert (draft.subject_kind, draft.subject_namespace, draft.subject_name, draft.key) == (
        "Deployment",
        "team-a",
        "trainer",
        "",
    )
    assert [c["container"] for c in draft.evidence["containers"]] == ["app", "sidecar"]
    assert "Containers app, sidecar of Deployment team-a/trainer" in draft.title
    # Pods count once, not once per container: 3 replicas, exposure 3.
    assert (draft.evidence["replicas"], draft.exposure, len(draft.evidence["pods"])) == (3, 3, 3)


def test_a_deployment_whose_two_containers_are_privileged_is_one_pod001():
    pods = deployment(
        2,
        Container("app", IMAGE, privileged=True),
        Container("prep", IMAGE, privileged=True, init=True),
    )
    (draft,) = run("POD-001", world(*pods))
    assert draft.title == "Containers app, prep of Deployment team-a/trainer are privileged"
    assert draft.evidence["containers"] == [
        {
            "container": "app",
            "image": IMAGE,
            "init_container": False,
            "field": "spec.containers[0].securityContext.privileged",
            "value": True,
        },
        {
            "container": "prep",
            "image": IMAGE,
            "init_container": True,
            "field": "spec.initContainers[0].securityContext.privileged",
            "value": True,
        },
    ]


def test_one_container_keeps_its_name_in_the_title():
    pods = deployment(2, Container("app", IMAGE, privileged=True), Container("log", IMAGE))
    (draft,) = run("POD-001", world(*pods))
    assert draft.title == "Container app of Deployment team-a/trainer is privileged"
    assert [c["container"] for c in draft.evidence["containers"]] == ["app"]


def test_pod004_is_rated_by_its_worst_container_and_keeps_each_capabilitys_rating():
    pods = deployment(
        1,
        Container("app", IMAGE, capabilities_add=("NET_RAW",)),
        Container("debugger", IMAGE, capabilities_add=("SYS_ADMIN",)),
    )
    (draft,) = run("POD-004", world(*pods))
    assert draft.severity == "critical"
    assert (
        draft.title
        == "Containers app, debugger of Deployment team-a/trainer add NET_RAW, SYS_ADMIN"
    )
    ratings = {
        c["container"]: [(f["capability"], f["severity"]) for f in c["flagged"]]
        for c in draft.evidence["containers"]
    }
    assert ratings == {"app": [("NET_RAW", "high")], "debugger": [("SYS_ADMIN", "critical")]}


def test_an_init_container_injected_with_the_users_image_adds_no_second_pod007():
    """KubeRay injects `wait-gcs-ready` into worker pods, with the user's image: one POD-007 on
    the RayCluster, listing the three containers (head, worker, the injected init)."""
    ray = "rayproject/ray:2.9.0"
    owner = {"owner_kind": "RayCluster", "owner_name": "vision-ray"}
    head = pod("team-a", "vision-ray-head-x1", containers=(Container("ray-head", ray),), **owner)
    workers = tuple(
        pod(
            "team-a",
            f"vision-ray-worker-{i}",
            containers=(
                Container("wait-gcs-ready", ray, init=True),
                Container("ray-worker", ray),
            ),
            **owner,
        )
        for i in range(2)
    )
    (draft,) = run("POD-007", world(head, *workers))
    assert (draft.subject_kind, draft.subject_name) == ("RayCluster", "vision-ray")
    names = [c["container"] for c in draft.evidence["containers"]]
    assert names == ["ray-head", "wait-gcs-ready", "ray-worker"]
    assert (draft.evidence["replicas"], draft.exposure) == (3, 3)
    assert draft.title == (
        "Containers ray-head, wait-gcs-ready, ray-worker of RayCluster team-a/vision-ray run "
        "rayproject/ray:2.9.0: not pinned by an @sha256: digest"
    )


def test_the_risk_of_a_workload_counts_its_pods_once():
    """Head (1 pod) and workers (2 pods) with literal credentials: one POD-008 of exposure 3,
    1 + log2 3 times the weight, not w + w (1 + log2 2) as two findings were."""
    owner = {"owner_kind": "RayCluster", "owner_name": "batch"}
    secret = (env("AWS_SECRET_ACCESS_KEY", SECRET),)
    head = pod(
        "team-a", "batch-head", containers=(Container("ray-head", IMAGE, env=secret),), **owner
    )
    workers = tuple(
        pod(
            "team-a",
            f"batch-worker-{i}",
            containers=(Container("ray-worker", IMAGE, env=secret),),
            **owner,
        )
        for i in range(2)
    )
    (draft,) = run("POD-008", world(head, *workers))
    assert draft.exposure == 3
    assert exposure_factor(draft.exposure) == pytest.approx(1 + 1.584962500721156)


def test_rollout_versions_with_different_containers_are_one_finding_naming_all():
    old = deployment(2, Container("app", IMAGE, privileged=True))
    new = deployment(
        1,
        Container("app", IMAGE, privileged=True),
        Container("agent", IMAGE, privileged=True),
        rs="trainer-7f8e9d0c1",
    )
    (draft,) = run("POD-001", world(*old, *new))
    assert [c["container"] for c in draft.evidence["containers"]] == ["app", "agent"]
    assert draft.title == "Containers app, agent of Deployment team-a/trainer are privileged"
    assert (draft.evidence["replicas"], draft.exposure) == (3, 3)


def test_a_debug_container_stays_the_pods_own_finding():
    """`kubectl debug` adds a container to one running pod, never to the template: its finding
    is the Pod's, and the workload's containers stay one finding of the workload."""
    debug = Container("debugger", IMAGE, privileged=True, ephemeral=True)
    (first, second) = deployment(2, Container("app", IMAGE, privileged=True))
    first = replace(first, containers=(*first.containers, debug))
    drafts = run("POD-001", world(first, second))
    subjects = {(d.subject_kind, d.subject_name): d for d in drafts}
    assert set(subjects) == {("Deployment", "trainer"), ("Pod", first.name)}
    pod_draft = subjects[("Pod", first.name)]
    assert [c["container"] for c in pod_draft.evidence["containers"]] == ["debugger"]
    assert pod_draft.evidence["debug_container_in"] == "Deployment team-a/trainer"
    assert subjects[("Deployment", "trainer")].evidence["replicas"] == 2


def test_a_template_with_two_containers_is_one_finding_with_the_specs_replicas():
    """A Deployment scaled to 0 is judged from its template: two privileged containers are one
    finding, and the spec's replica count is not doubled."""
    template = Pod(
        namespace="team-a",
        name="idle",
        phase=TEMPLATE_PHASE,
        owner_kind="Deployment",
        owner_name="idle",
        containers=(
            Container("app", IMAGE, privileged=True),
            Container("side", IMAGE, privileged=True),
        ),
    )
    idle = Workload("Deployment", "team-a", "idle", template=template, replicas=2)
    (draft,) = run("POD-001", inputs(tenants=(TEAM,), workloads=(idle,), namespaces=("team-a",)))
    assert draft.evidence["from_template"] is True
    assert [c["container"] for c in draft.evidence["containers"]] == ["app", "side"]
    assert (draft.evidence["replicas"], draft.exposure) == (2, 1)


def test_every_check_gives_one_finding_per_subject():
    """Across every registered check over a world of multi-container workloads, no two findings
    of one check share a subject (the co-tenancy pairs and bulletin exposures excepted, which
    carry their own key)."""
    fields: dict[str, Any] = {}
    for f in FIRES.values():
        fields |= f
    fields["env"] = FIRES["POD-008"]["env"] + FIRES["POD-011"]["env"]
    pods = deployment(2, Container("app", IMAGE, **fields), Container("side", IMAGE, **fields))
    drafts = evaluate(world(*pods)).drafts
    pod_drafts = [d for d in drafts if d.check_id.startswith("POD-")]
    subjects = [
        (d.check_id, d.subject_kind, d.subject_namespace, d.subject_name) for d in pod_drafts
    ]
    assert len(subjects) == len(set(subjects))
    assert {d.check_id for d in pod_drafts} >= set(FIRES)


def test_a_workloads_containers_are_one_action_whose_risk_counts_each_pod_once():
    """The action (one fix of one workload) closes the one finding; the risk it removes is the
    workload's 3 pods once: finding_risk at exposure 3, not a sum over containers."""
    pods = deployment(
        3,
        Container("app", IMAGE, privileged=True),
        Container("sidecar", IMAGE, privileged=True),
    )
    (draft,) = run("POD-001", world(*pods))
    found = ActionFinding(
        id=1,
        check_id=draft.check_id,
        severity=draft.severity or "critical",
        cluster="test",
        subject_kind=draft.subject_kind,
        subject_namespace=draft.subject_namespace,
        subject_name=draft.subject_name,
        title=draft.title,
        evidence=draft.evidence,
        exposure=draft.exposure,
        tenant_weights={"team": 1.0},
    )
    (action,) = actions_for([found])
    assert action.title == "Remove privileged from Deployment team-a/trainer"
    assert action.finding_ids == (1,)
    risk = finding_risk(severity="critical", exposure=3, class_weight=1.0)
    assert action.risk_removed == pytest.approx(risk)
