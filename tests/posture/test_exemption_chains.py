"""An exemption naming a nearer controller than the finding's subject: pod findings are filed
under the top controller of the owner chain (inventory/owners.py), while an admin reading a
pod's ownerReferences names the controller kubectl shows (the RayCluster, the ReplicaSet, the
Job, the Pod). It matches when the object it names is in the chain of every pod the finding
covers (posture.exemptions.Exemption). POD-008 fires on each pod: literal cloud keys in env."""

from __future__ import annotations

import dataclasses

from inventory.owners import OwnerIndex, owner_chain
from inventory.sources.normalise import normalise
from posture.exemptions import Exemption
from posture.inputs import PostureInputs
from posture.rules.registry import Evaluation, evaluate
from tests.inventory.owner_chain_world import AWS_ID, AWS_SECRET, NS, obj, pod
from tests.posture.builders import tenant

CHECK = "POD-008"
TEAM = tenant("a", namespaces=(NS,))
RAYSERVICE = ("ray.io/v1", "RayService", "chat")
RAYCLUSTER = ("ray.io/v1", "RayCluster", "chat-raycluster-9k2xv")
DEPLOYMENT = ("apps/v1", "Deployment", "trainer")
OLD_RS = ("apps/v1", "ReplicaSet", "trainer-5d9c7b8f6")
NEW_RS = ("apps/v1", "ReplicaSet", "trainer-7f8b9c6d4")
CRONJOB = ("batch/v1", "CronJob", "nightly")
JOB = ("batch/v1", "Job", "nightly-29420160")
AWS_KEY = {"name": "AWS_ACCESS_KEY_ID", "value": AWS_ID}
AWS_SECRET_KEY = {"name": "AWS_SECRET_ACCESS_KEY", "value": AWS_SECRET}


def world(objects: list[dict]) -> PostureInputs:
    return PostureInputs(cluster="test", snapshot=normalise(objects), tenants=(TEAM,))


def judged(objects: list[dict], *exemptions: Exemption) -> Evaluation:
    return evaluate(dataclasses.replace(world(objects), exemptions=exemptions), only=[CHECK])


def subjects(result: Evaluation) -> list[tuple[str, str]]:
    return [(d.subject_kind, d.subject_name) for d in result.drafts]


def exempted(result: Evaluation) -> list[tuple[str, str, int]]:
    return [(d.subject_kind, d.subject_name, e) for d, e in result.exempted]


def exemption(kind: str, name: str, namespace: str = NS, **fields) -> Exemption:
    return Exemption(1, CHECK, namespace=namespace, kind=kind, name=name, **fields)


def rayservice() -> list[dict]:
    """A RayService, the RayCluster it generates, and that cluster's head and worker pods."""
    return [
        obj(*RAYSERVICE[:2], RAYSERVICE[2]),
        obj(*RAYCLUSTER[:2], RAYCLUSTER[2], RAYSERVICE),
        pod(f"{RAYCLUSTER[2]}-head", RAYCLUSTER, secret=True),
        pod(f"{RAYCLUSTER[2]}-worker-x", RAYCLUSTER, secret=True),
    ]


def deployment(*replica_sets: tuple[str, str, str], pods_each: int = 1) -> list[dict]:
    """A Deployment mid-rollout: `pods_each` pods of each of its ReplicaSets."""
    objects = [obj(*DEPLOYMENT[:2], DEPLOYMENT[2])]
    for rs in replica_sets:
        objects.append(obj(*rs[:2], rs[2], DEPLOYMENT, spec={}))
        objects += [pod(f"{rs[2]}-p{n}", rs, secret=True) for n in range(pods_each)]
    return objects


def cronjob() -> list[dict]:
    return [
        obj(*CRONJOB[:2], CRONJOB[2], spec={}),
        obj(*JOB[:2], JOB[2], CRONJOB, spec={}),
        pod(f"{JOB[2]}-x7k2p", JOB, secret=True),
    ]


def test_a_raycluster_exemption_covers_its_rayservices_finding():
    assert subjects(judged(rayservice())) == [("RayService", "chat")]
    result = judged(rayservice(), exemption("RayCluster", RAYCLUSTER[2]))
    assert subjects(result) == [] and exempted(result) == [("RayService", "chat", 1)]


def test_an_exemption_naming_the_top_controller_still_matches():
    for objects, kind, name in [
        (rayservice(), "RayService", "chat"),
        (deployment(OLD_RS, NEW_RS), "Deployment", "trainer"),
        (cronjob(), "CronJob", "nightly"),
    ]:
        result = judged(objects, exemption(kind, name))
        assert subjects(result) == [] and exempted(result) == [(kind, name, 1)]


def test_a_replicaset_exemption_covers_the_deployment_only_while_all_its_pods_are_that_sets():
    only_old = judged(deployment(OLD_RS, pods_each=2), exemption("ReplicaSet", OLD_RS[2]))
    assert exempted(only_old) == [("Deployment", "trainer", 1)]
    # Mid-rollout, the new ReplicaSet's pods are not what the exemption named.
    rollout = judged(deployment(OLD_RS, NEW_RS), exemption("ReplicaSet", OLD_RS[2]))
    assert subjects(rollout) == [("Deployment", "trainer")] and exempted(rollout) == []


def test_a_job_exemption_covers_the_cronjobs_finding_of_that_run():
    assert subjects(judged(cronjob())) == [("CronJob", "nightly")]
    result = judged(cronjob(), exemption("Job", JOB[2]))
    assert exempted(result) == [("CronJob", "nightly", 1)]
    assert subjects(judged(cronjob(), exemption("Job", "nightly-29420220"))) == [
        ("CronJob", "nightly")
    ]


def test_a_pod_exemption_covers_only_a_finding_whose_pods_are_that_pod():
    one = judged(deployment(OLD_RS), exemption("Pod", f"{OLD_RS[2]}-p0"))
    assert exempted(one) == [("Deployment", "trainer", 1)]
    two = judged(deployment(OLD_RS, pods_each=2), exemption("Pod", f"{OLD_RS[2]}-p0"))
    assert subjects(two) == [("Deployment", "trainer")] and exempted(two) == []


def test_kind_namespace_and_labels_still_narrow_a_named_exemption():
    objects = deployment(OLD_RS)
    for miss in (
        exemption("Job", OLD_RS[2]),  # the wrong kind
        exemption("ReplicaSet", OLD_RS[2], namespace="elsewhere"),
        exemption("ReplicaSet", OLD_RS[2], labels={"team": "platform"}),  # not on the pods
    ):
        assert subjects(judged(objects, miss)) == [("Deployment", "trainer")], miss
    any_kind = judged(objects, exemption("", OLD_RS[2], namespace=""))
    assert exempted(any_kind) == [("Deployment", "trainer", 1)]


def test_an_exemption_without_a_name_is_matched_on_the_subject_alone():
    """`kind: Pod` in a namespace means its bare pods, as before: every pod of every workload
    is in its own chain, and the exemption must not reach them all."""
    bare = pod("scratch", None, secret=True)
    result = judged([*deployment(OLD_RS), bare], exemption("Pod", ""))
    assert subjects(result) == [("Deployment", "trainer")]
    assert exempted(result) == [("Pod", "scratch", 1)]


def test_the_chain_names_the_pods_own_owner_where_the_controller_above_was_guessed():
    """No ReplicaSet in the snapshot: its pod-template-hash names the Deployment, and the
    ReplicaSet the pod's ownerReference names is in the chain all the same."""
    guessed = pod(f"{OLD_RS[2]}-p0", OLD_RS, labels={"pod-template-hash": "5d9c7b8f6"})
    snapshot = normalise([guessed])
    (one,) = snapshot.pods
    assert owner_chain(one, OwnerIndex(snapshot.owners, snapshot.pods)) == (
        ("Pod", NS, f"{OLD_RS[2]}-p0"),
        ("ReplicaSet", NS, OLD_RS[2]),
        ("Deployment", NS, "trainer"),
    )


def test_a_debug_containers_finding_is_the_pods_and_not_covered_by_its_workloads_exemption():
    """`kubectl debug` adds a container to one running pod, never to the template: that
    finding is the pod's (posture.rules.subjects.workload_draft), and an exemption of the
    workload (a reviewed template) does not extend to what someone ran into one pod."""
    objects = deployment(OLD_RS)
    debugged = objects[-1]
    debugged["spec"]["containers"][0]["env"] = []
    leaky = {"name": "debugger-x1", "image": "busybox:1.36", "env": [AWS_KEY, AWS_SECRET_KEY]}
    debugged["spec"]["ephemeralContainers"] = [leaky]
    pod_name = debugged["metadata"]["name"]
    assert subjects(judged(objects)) == [("Pod", pod_name)]
    for workload in (exemption("Deployment", "trainer"), exemption("ReplicaSet", OLD_RS[2])):
        assert subjects(judged(objects, workload)) == [("Pod", pod_name)], workload
    assert exempted(judged(objects, exemption("Pod", pod_name))) == [("Pod", pod_name, 1)]
