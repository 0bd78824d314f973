"""The pod-hardening checks judge the template of a tenant workload with no pod running, filed
under the workload its pods would be filed under; a workload with a running pod is judged from
its pods only; platform namespaces and placement checks are untouched."""

from __future__ import annotations

import pytest
import yaml

from inventory.snapshot import TEMPLATE_PHASE, Container, OwnerLink, Pod, Workload
from inventory.sources.normalise import normalise
from posture.inputs import PostureInputs
from tests.posture.builders import inputs, pod, run, tenant
from tests.realworld import realworld

TEAM = tenant("team", namespaces=("team-a",))


def _workload(kind: str, name: str, namespace: str = "team-a", **pod_fields) -> Workload:
    template = Pod(
        namespace=namespace,
        name=name,
        phase=TEMPLATE_PHASE,
        owner_kind=kind,
        owner_name=name,
        labels={"app": name},
        **pod_fields,
    )
    replicas = None if kind == "DaemonSet" else 1
    return Workload(kind, namespace, name, template=template, replicas=replicas)


PRIVILEGED = (Container("main", "registry.example.com/m:1", privileged=True),)


def _world(*workloads: Workload, pods=(), owners=(), namespaces=("team-a",)) -> PostureInputs:
    return inputs(
        pods=tuple(pods),
        tenants=(TEAM,),
        workloads=tuple(workloads),
        owners=tuple(owners),
        namespaces=namespaces,
    )


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job"])
def test_a_privileged_template_with_no_pod_is_a_finding_on_the_workload(kind):
    (draft,) = run("POD-001", _world(_workload(kind, "w", containers=PRIVILEGED)))
    assert (draft.subject_kind, draft.subject_namespace, draft.subject_name) == (
        kind,
        "team-a",
        "w",
    )
    assert draft.tenants == ("team",)
    assert draft.evidence["from_template"] is True
    assert draft.evidence["pods"] == []
    assert draft.evidence["replicas"] == (None if kind == "DaemonSet" else 1)
    assert draft.subject_labels == {"app": "w"}


def test_a_templates_gpu_request_unlike_its_limit_is_a_finding_too():
    # What the pods will ask for is in the template, whether or not one runs now.
    asks = (
        Container(
            "main",
            "registry.example.com/m:1",
            gpu_requests={"nvidia.com/gpu": "1"},
            gpu_limits={"nvidia.com/gpu": "2"},
        ),
    )
    (draft,) = run("POD-006", _world(_workload("Deployment", "w", containers=asks)))
    assert draft.subject_kind == "Deployment" and draft.evidence["from_template"] is True


def test_a_running_pod_is_judged_instead_of_the_template_under_the_same_identity():
    idle = _workload("Deployment", "web", host_pid=True)
    (from_template,) = run("POD-002", _world(idle))
    running = pod(
        "team-a",
        "web-5d8f7-x",
        host_pid=True,
        owner_kind="ReplicaSet",
        owner_name="web-5d8f7",
        labels={"app": "web", "pod-template-hash": "5d8f7"},
    )
    (from_pod,) = run("POD-002", _world(idle, pods=(running,)))
    assert from_pod.identity() == from_template.identity()
    assert "from_template" not in from_pod.evidence and from_pod.evidence["replicas"] == 1


def test_a_cronjob_with_a_running_job_pod_is_judged_once_from_the_pod():
    nightly = _workload("CronJob", "nightly", containers=PRIVILEGED)
    job_pod = pod(
        "team-a", "nightly-29-abc", containers=PRIVILEGED, owner_kind="Job", owner_name="nightly-29"
    )
    link = OwnerLink("Job", "team-a", "nightly-29", "CronJob", "nightly")
    drafts = run("POD-001", _world(nightly, pods=(job_pod,), owners=(link,)))
    assert [(d.subject_kind, d.subject_name) for d in drafts] == [("CronJob", "nightly")]
    assert drafts[0].evidence["pods"][0]["pod"] == "team-a/nightly-29-abc"


def test_finished_pods_leave_the_template_judged():
    nightly = _workload("CronJob", "nightly", containers=PRIVILEGED)
    done = pod(
        "team-a", "nightly-29-abc", phase="Succeeded", owner_kind="Job", owner_name="nightly-29"
    )
    link = OwnerLink("Job", "team-a", "nightly-29", "CronJob", "nightly")
    (draft,) = run("POD-001", _world(nightly, pods=(done,), owners=(link,)))
    assert draft.evidence["from_template"] is True


def test_a_bare_pod_sharing_the_name_of_an_idle_deployment_is_its_own_subject():
    idle = _workload("Deployment", "tool", containers=PRIVILEGED)
    bare = pod("team-a", "tool", containers=PRIVILEGED)
    subjects = {
        (d.subject_kind, d.subject_name) for d in run("POD-001", _world(idle, pods=(bare,)))
    }
    assert subjects == {("Deployment", "tool"), ("Pod", "tool")}


def test_platform_templates_and_placement_checks_are_untouched():
    platform = _workload("DaemonSet", "agent", namespace="gpu-operator", containers=PRIVILEGED)
    assert run("POD-001", _world(platform, namespaces=("team-a", "gpu-operator"))) == []
    # A template runs nowhere: POD-009 (placement) does not judge it.
    assert run("POD-009", _world(_workload("Deployment", "web", containers=PRIVILEGED))) == []


# --- real third-party manifests through the real path (k8s-manifests/SOURCES.md) -------------


def _manifest_world(name: str) -> PostureInputs:
    """The manifest as a snapshot of namespace team-a with no pod: normalise, then the checks."""
    objects = []
    for doc in yaml.safe_load_all(realworld("k8s-manifests", name).read_text()):
        if isinstance(doc, dict):
            metadata = {**doc.get("metadata", {}), "namespace": "team-a"}  # kubectl apply -n
            objects.append({**doc, "metadata": metadata})
    return _world(*normalise(objects).workloads)


def test_realworld_cronjob_sharing_host_namespaces_between_runs():
    world = _manifest_world("checkov-ShareHost__cronjob-hostresources-FAILED.yaml")
    (draft,) = run("POD-002", world)
    assert (draft.subject_kind, draft.subject_name) == ("CronJob", "hello")
    assert set(draft.evidence["fields"]) == {"spec.hostPID", "spec.hostIPC", "spec.hostNetwork"}
    assert draft.evidence["from_template"] is True


def test_realworld_privileged_daemonset_with_no_pod():
    world = _manifest_world("checkov-PrivilegedContainers__privilegedDaemonSet-FAILED.yaml")
    found = {c: run(c, world) for c in ("POD-001", "POD-002", "POD-003")}
    assert all(len(drafts) == 1 for drafts in found.values())
    (draft,) = found["POD-001"]
    assert (draft.subject_kind, draft.subject_name) == ("DaemonSet", "privileged")
    assert draft.evidence["from_template"] is True and draft.evidence["replicas"] is None
