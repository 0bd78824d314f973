"""A pod-level finding's subject is its workload with the owner chain followed to the top
(DESIGN §5): one subject for a SparkApplication's driver and executors, an InferenceService
rather than the Deployment of its current revision. Each finding lists the narrower subject
the pods may have had before (FindingDraft.covers: per pod, every owner below the subject), so
a risk accepted there is carried."""

from __future__ import annotations

from dataclasses import replace

from inventory.sources.normalise import normalise
from posture.inputs import PostureInputs
from posture.rules.registry import merge_drafts
from tests.inventory import owner_chain_world as world
from tests.posture.builders import run, tenant

TEAM = tenant("team", namespaces=(world.NS,))


def findings(objects: list[dict], check_id: str = "POD-008"):
    snapshot = normalise(objects)
    return run(check_id, PostureInputs(cluster="c", snapshot=snapshot, tenants=(TEAM,)))


def test_a_sparkapplications_pods_are_one_subject_and_never_the_driver_pod():
    drafts = findings(world.spark())
    subjects = {(d.subject_kind, d.subject_namespace, d.subject_name) for d in drafts}
    assert subjects == {("SparkApplication", world.NS, "acme-etl")}
    # One finding, as for any workload, listing the driver's and the executors' containers
    # (3 pods); each pod covers itself and the driver pod (the executors' narrower subject).
    (draft,) = drafts
    names = [c["container"] for c in draft.evidence["containers"]]
    assert sorted(names) == ["spark-kubernetes-driver", "spark-kubernetes-executor"]
    assert draft.evidence["replicas"] == 3
    assert "Pod team-a/acme-etl-driver" not in draft.title
    assert {group[-1][:3] for group in draft.covers} == {("Pod", world.NS, "acme-etl-driver")}
    assert len(draft.covers) == 3  # one per pod


def test_kserve_findings_are_the_inferenceservices_and_cover_every_owner_below():
    (draft,) = findings(world.kserve())
    assert (draft.subject_kind, draft.subject_name) == ("InferenceService", "fraud-model")
    assert draft.evidence["replicas"] == 2
    # Each pod, from itself up to the Knative Service: whichever an earlier sync that read
    # less of the chain filed it under (the Deployment, its Revision, ...), nearest first.
    above = [world.KSERVE_RS, world.KSERVE_DEPLOYMENT, world.REVISION, world.CONFIG, world.KSVC]
    kinds = ["ReplicaSet", "Deployment", "Revision", "Configuration", "Service.serving.knative.dev"]
    owners = [(kind, world.NS, o[2], "") for kind, o in zip(kinds, above, strict=True)]
    pods = [f"{world.KSERVE_RS[2]}-{i}" for i in ("a", "b")]
    assert draft.covers == tuple((("Pod", world.NS, p, ""), *owners) for p in pods)


def test_the_next_revision_is_the_same_finding():
    """Knative's next revision renames the Revision, its Deployment, ReplicaSet and pods: the
    finding's identity does not change, so its acceptance and first_seen stay."""
    before = findings(world.kserve())
    after = findings(world.renamed(world.kserve(), "00001", "00002"))
    assert [d.identity() for d in after] == [d.identity() for d in before]
    assert after[0].covers != before[0].covers  # the Deployment it spans is the new one


def test_a_rayjob_is_one_subject_for_its_cluster_and_its_submitter():
    drafts = findings(world.rayjob(), "POD-007")
    assert {(d.subject_kind, d.subject_name) for d in drafts} == {("RayJob", "batch-infer")}
    covered = {c[:3] for d in drafts for group in d.covers for c in group if c[0] != "Pod"}
    submitter = ("Job", world.NS, world.RAYJOB[2])
    assert covered == {("RayCluster", world.NS, world.RAYCLUSTER[2]), submitter}


def test_merged_replicas_keep_every_subject_they_cover():
    drafts = findings(world.rayjob(), "POD-007")
    head = drafts[0]
    older = (("RayCluster", world.NS, "older-cluster", ""),)
    other = replace(head, covers=(older,))
    (merged,) = merge_drafts([head, other, other])
    assert merged.covers == (*head.covers, older)
