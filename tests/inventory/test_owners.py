"""The workload behind a pod (inventory/owners.py): from the snapshot's owner index, from the
labels every real cluster sets, and never a guess. Objects as `kubectl get -o json` prints
them (ReplicaSets, Jobs and CronJobs read by normalise())."""

from __future__ import annotations

import json

import pytest

from inventory.owners import (
    OwnerIndex,
    WorkloadRef,
    qualified_kind,
    template_labels,
    workload_of,
)
from inventory.snapshot import Pod
from inventory.sources.normalise import normalise


def owned(kind: str, name: str, owner: tuple[str, str] | None = None, **extra) -> dict:
    """A ReplicaSet, Job or CronJob with the ownerReference its controller sets."""
    meta: dict = {"name": name, "namespace": "team-a", "uid": f"uid-{name}"}
    if owner is not None:
        api = "batch/v1" if owner[0] == "CronJob" else "apps/v1"
        meta["ownerReferences"] = [
            {
                "apiVersion": api,
                "kind": owner[0],
                "name": owner[1],
                "uid": f"uid-{owner[1]}",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    api = "apps/v1" if kind == "ReplicaSet" else "batch/v1"
    spec = {"template": {"spec": {"containers": [{"name": "main", "image": "secret-ish:1"}]}}}
    return {"apiVersion": api, "kind": kind, "metadata": meta, "spec": spec, **extra}


def pod_of(kind: str | None, name: str | None, pod_name: str = "p-0", **labels: str) -> Pod:
    return Pod("team-a", pod_name, owner_kind=kind, owner_name=name, labels=dict(labels))


def index(*objects: dict) -> OwnerIndex:
    return OwnerIndex(normalise(list(objects)).owners)


NOTHING = OwnerIndex(())


def test_normalise_keeps_only_the_owner_of_replicasets_jobs_and_cronjobs():
    snapshot = normalise(
        [
            owned("ReplicaSet", "trainer-5d9c7b8f6", ("Deployment", "trainer")),
            owned("Job", "nightly-28930140", ("CronJob", "nightly")),
            owned("Job", "once"),
            owned("CronJob", "nightly"),
        ]
    )
    # Each link says what the snapshot holds of its owner: the CronJob, not the Deployment.
    assert [
        (o.kind, o.namespace, o.name, o.owner_kind, o.owner_name, o.owner_found)
        for o in snapshot.owners
    ] == [
        ("CronJob", "team-a", "nightly", None, None, ""),
        ("Job", "team-a", "nightly-28930140", "CronJob", "nightly", "read"),
        ("Job", "team-a", "once", None, None, ""),
        ("ReplicaSet", "team-a", "trainer-5d9c7b8f6", "Deployment", "trainer", "absent"),
    ]
    assert "secret-ish" not in json.dumps([o.__dict__ for o in snapshot.owners])  # no spec


# Each controller kind, resolved from the snapshot's objects.
@pytest.mark.parametrize(
    ("objects", "pod", "expected"),
    [
        pytest.param(
            [owned("ReplicaSet", "trainer-5d9c7b8f6", ("Deployment", "trainer"))],
            pod_of("ReplicaSet", "trainer-5d9c7b8f6"),
            ("Deployment", "trainer", "owner index"),
            id="deployment",
        ),
        pytest.param(
            [owned("Job", "nightly-28930140", ("CronJob", "nightly"))],
            pod_of("Job", "nightly-28930140"),
            ("CronJob", "nightly", "owner index"),
            id="cronjob",
        ),
        pytest.param(
            [owned("Job", "once")], pod_of("Job", "once"), ("Job", "once", "owner index"), id="job"
        ),
        pytest.param(
            [owned("ReplicaSet", "bare-rs")],
            pod_of("ReplicaSet", "bare-rs", **{"pod-template-hash": "rs"}),
            ("ReplicaSet", "bare-rs", "owner index"),
            id="replicaset-without-owner-beats-the-label",
        ),
        pytest.param(
            [owned("ReplicaSet", "web-abc12", ("Rollout", "web"))],
            pod_of("ReplicaSet", "web-abc12"),
            ("Rollout", "web", "owner index"),
            id="another-controller-owns-the-replicaset",
        ),
        pytest.param(
            [], pod_of("StatefulSet", "llm"), ("StatefulSet", "llm", "owner reference"), id="sts"
        ),
        pytest.param(
            [], pod_of("DaemonSet", "agent"), ("DaemonSet", "agent", "owner reference"), id="ds"
        ),
        pytest.param([], pod_of(None, None), ("Pod", "p-0", "bare pod"), id="bare-pod"),
        pytest.param([], pod_of("Node", "gpu-1"), ("Pod", "p-0", "bare pod"), id="static-pod"),
    ],
)
def test_from_the_snapshots_objects(objects, pod, expected):
    found = workload_of(pod, index(*objects))
    assert (found.kind, found.name, found.resolved_by) == expected
    assert found.namespace == "team-a"


# Without the objects: only what the controllers guarantee.
@pytest.mark.parametrize(
    ("pod", "cronjobs", "expected"),
    [
        pytest.param(
            pod_of("ReplicaSet", "trainer-5d9c7b8f6", **{"pod-template-hash": "5d9c7b8f6"}),
            (),
            ("Deployment", "trainer", "pod-template-hash label"),
            id="deployment-by-hash",
        ),
        pytest.param(
            pod_of("ReplicaSet", "trainer-v2-5d9c7b8f6", **{"pod-template-hash": "5d9c7b8f6"}),
            (),
            ("Deployment", "trainer-v2", "pod-template-hash label"),
            id="deployment-name-with-dashes",
        ),
        pytest.param(
            pod_of("ReplicaSet", "trainer-5d9c7b8f6"),
            (),
            ("ReplicaSet", "trainer-5d9c7b8f6", "owner reference"),
            id="no-hash-label-stays-replicaset",
        ),
        pytest.param(
            pod_of("ReplicaSet", "trainer-5d9c7b8f6", **{"pod-template-hash": "other"}),
            (),
            ("ReplicaSet", "trainer-5d9c7b8f6", "owner reference"),
            id="hash-not-in-the-name-stays-replicaset",
        ),
        pytest.param(
            pod_of("ReplicaSet", "5d9c7b8f6", **{"pod-template-hash": "5d9c7b8f6"}),
            (),
            ("ReplicaSet", "5d9c7b8f6", "owner reference"),
            id="nothing-before-the-hash",
        ),
        pytest.param(
            pod_of(
                "Job", "nightly-28930140", **{"batch.kubernetes.io/job-name": "nightly-28930140"}
            ),
            ("nightly",),
            ("CronJob", "nightly", "job-name label"),
            id="cronjob-by-job-name",
        ),
        pytest.param(
            pod_of("Job", "nightly-28930140", **{"job-name": "nightly-28930140"}),
            ("nightly",),
            ("CronJob", "nightly", "job-name label"),
            id="cronjob-by-the-older-label",
        ),
        pytest.param(
            pod_of("Job", "nightly-28930140", **{"job-name": "nightly-28930140"}),
            (),
            ("Job", "nightly-28930140", "owner reference"),
            id="no-such-cronjob-stays-job",
        ),
        pytest.param(
            pod_of("Job", "nightly-28930140"),
            ("nightly",),
            ("Job", "nightly-28930140", "owner reference"),
            id="no-job-name-label-stays-job",
        ),
        pytest.param(
            pod_of("Job", "nightly-run", **{"job-name": "nightly-run"}),
            ("nightly",),
            ("Job", "nightly-run", "owner reference"),
            id="no-digits-stays-job",
        ),
    ],
)
def test_from_labels_when_the_snapshot_lacks_the_objects(pod, cronjobs, expected):
    found = workload_of(pod, index(*(owned("CronJob", name) for name in cronjobs)))
    assert (found.kind, found.name, found.resolved_by) == expected


LWS = "leaderworkerset.sigs.k8s.io/name"


# A LeaderWorkerSet's leaders run in the StatefulSet `<lws>`, each group's workers in the
# StatefulSet `<lws>-<group index>` (the leader pod's name); every pod carries the LWS label.
@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(
            pod_of("StatefulSet", "infer", "infer-1", **{LWS: "infer"}),
            ("LeaderWorkerSet", "infer", "leaderworkerset label"),
            id="leader",
        ),
        pytest.param(
            pod_of("StatefulSet", "infer-1", "infer-1-3", **{LWS: "infer"}),
            ("LeaderWorkerSet", "infer", "leaderworkerset label"),
            id="worker-of-group-1",
        ),
        pytest.param(
            pod_of("StatefulSet", "infer-12", "infer-12-1", **{LWS: "infer"}),
            ("LeaderWorkerSet", "infer", "leaderworkerset label"),
            id="worker-of-group-12",
        ),
        pytest.param(
            pod_of("StatefulSet", "db", "db-0", **{LWS: "infer"}),
            ("StatefulSet", "db", "owner reference"),
            id="label-on-a-statefulset-of-another-name",
        ),
        pytest.param(
            pod_of("StatefulSet", "infer-canary", "infer-canary-0", **{LWS: "infer"}),
            ("StatefulSet", "infer-canary", "owner reference"),
            id="not-a-group-index",
        ),
        pytest.param(
            pod_of("StatefulSet", "infer-1", "infer-1-0"),
            ("StatefulSet", "infer-1", "owner reference"),
            id="no-label",
        ),
        pytest.param(
            pod_of("ReplicaSet", "infer", "infer-x", **{LWS: "infer"}),
            ("ReplicaSet", "infer", "owner reference"),
            id="only-statefulsets",
        ),
    ],
)
def test_leaderworkerset(pod, expected):
    found = workload_of(pod, NOTHING)
    assert (found.kind, found.name, found.resolved_by) == expected


def test_a_volcano_job_is_not_taken_for_a_batch_job():
    """Volcano's Job (batch.volcano.sh) shares the built-in's kind name: named with its group,
    and never indexed or looked up as a batch/v1 Job of the same name."""
    batch = owned("Job", "train", ("CronJob", "nightly"))
    volcano = {**owned("Job", "train"), "apiVersion": "batch.volcano.sh/v1alpha1"}
    raw = {
        "kind": "Pod",
        "metadata": {
            "name": "train-worker-0",
            "namespace": "team-a",
            "ownerReferences": [
                {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train"}
            ],
        },
        "spec": {"containers": [{"name": "main", "image": "x:1"}]},
    }
    snapshot = normalise([batch, volcano, raw])
    assert [(o.kind, o.namespace, o.name, o.owner_kind, o.owner_name) for o in snapshot.owners] == [
        ("Job", "team-a", "train", "CronJob", "nightly")
    ]
    (pod,) = snapshot.pods
    found = workload_of(pod, OwnerIndex(snapshot.owners))
    assert (found.kind, found.name, found.resolved_by) == (
        "Job.batch.volcano.sh",
        "train",
        "owner reference",
    )


@pytest.mark.parametrize(
    ("kind", "api_version", "expected"),
    [
        ("Job", "batch/v1", "Job"),
        ("ReplicaSet", "extensions/v1beta1", "ReplicaSet"),  # before apps/v1
        ("Node", "v1", "Node"),
        ("Job", "", "Job"),  # no apiVersion: taken as the built-in's
        ("Job", "apps/v1", "Job"),  # a wrong built-in group is still not a custom resource
        ("Job", "batch.volcano.sh/v1alpha1", "Job.batch.volcano.sh"),
        ("RayCluster", "ray.io/v1", "RayCluster"),
    ],
)
def test_qualified_kind(kind, api_version, expected):
    assert qualified_kind(kind, api_version) == expected


NOTEBOOK = {"notebook-name": "ana-lab", "statefulset": "ana-lab"}


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(
            pod_of("StatefulSet", "ana-lab", "ana-lab-0", **NOTEBOOK),
            ("Notebook", "ana-lab", "notebook-name label"),
            id="kubeflow-notebook",
        ),
        pytest.param(
            pod_of("StatefulSet", "ana-lab", "ana-lab-0", **{"notebook-name": "ana-lab"}),
            ("StatefulSet", "ana-lab", "owner reference"),
            id="one-label-of-two",
        ),
        pytest.param(
            pod_of("StatefulSet", "db", "db-0", **NOTEBOOK),
            ("StatefulSet", "db", "owner reference"),
            id="labels-of-another-name",
        ),
        pytest.param(
            pod_of("ReplicaSet", "ana-lab", "ana-lab-x", **NOTEBOOK),
            ("ReplicaSet", "ana-lab", "owner reference"),
            id="only-statefulsets",
        ),
    ],
)
def test_kubeflow_notebook(pod, expected):
    found = workload_of(pod, NOTHING)
    assert (found.kind, found.name, found.resolved_by) == expected


def test_a_leaderworkersets_pods_have_the_same_template_labels():
    leader = {LWS: "infer", f"{LWS[:-4]}group-index": "0", f"{LWS[:-4]}worker-index": "0"}
    worker = {**leader, f"{LWS[:-4]}group-index": "1", f"{LWS[:-4]}worker-index": "2"}
    hashes = {f"{LWS[:-4]}group-key": "k1", f"{LWS[:-4]}template-revision-hash": "r1"}
    first = template_labels(pod_of("StatefulSet", "infer", "infer-0", **leader, **hashes))
    other = template_labels(pod_of("StatefulSet", "infer-1", "infer-1-2", **worker))
    assert first == other == {LWS: "infer"}


def test_ref_and_template_labels():
    ref = WorkloadRef("Deployment", "team-a", "trainer", "owner index")
    assert ref.ref() == "Deployment team-a/trainer"
    labels = {"app": "trainer", "pod-template-hash": "5d9c7b8f6", "job-name": "x"}
    assert template_labels(pod_of("ReplicaSet", "r", **labels)) == {"app": "trainer"}
    assert workload_of(pod_of("ReplicaSet", "r"), NOTHING).kind == "ReplicaSet"
