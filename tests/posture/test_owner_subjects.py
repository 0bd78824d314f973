"""Pod findings are filed on the thing one edit changes (DESIGN §5), as the owners' uids and an
Argo Rollout's workloadRef show it, and say how the chain ended where the snapshot could not
show an owner as read. Objects as `kubectl get -A -o json` prints them."""

from __future__ import annotations

from inventory.snapshot import ClusterSnapshot
from inventory.sources.normalise import normalise
from tests.posture.builders import inputs, run, tenant

NS = "team-a"
TEAM = tenant("team", namespaces=(NS,))
PRIVILEGED = {
    "containers": [{"name": "main", "image": "x:1", "securityContext": {"privileged": True}}]
}


def meta(name: str, uid: str, owner: dict | None = None, **labels: str) -> dict:
    found: dict = {"name": name, "namespace": NS, "uid": uid, "labels": dict(labels)}
    if owner is not None:
        found["ownerReferences"] = [{**owner, "controller": True, "blockOwnerDeletion": True}]
    return found


def ref(api: str, kind: str, name: str, uid: str) -> dict:
    return {"apiVersion": api, "kind": kind, "name": name, "uid": uid}


def deployment(name: str, uid: str, replicas: int = 1) -> dict:
    template = {"metadata": {"labels": {"app": name}}, "spec": PRIVILEGED}
    spec = {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(name, uid),
        "spec": spec,
    }


def replicaset(name: str, uid: str, owner: dict) -> dict:
    spec = {"replicas": 1, "template": {"spec": PRIVILEGED}}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": meta(name, uid, owner),
        "spec": spec,
    }


def pod(name: str, owner: dict, **labels: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta(name, f"uid-{name}", owner, **labels),
        "spec": {**PRIVILEGED, "nodeName": "gpu-1"},
        "status": {"phase": "Running"},
    }


def pod001(objects: list[dict]) -> dict[str, object]:
    snapshot: ClusterSnapshot = normalise(objects)
    world = inputs(
        pods=snapshot.pods, owners=snapshot.owners, workloads=snapshot.workloads, tenants=(TEAM,)
    )
    return {f"{d.subject_kind} {d.subject_name}": d for d in run("POD-001", world)}


def test_a_rollout_running_a_deployments_template_is_one_finding_on_the_deployment():
    """Argo Rollouts' workloadRef: the Rollout runs Deployment embedder's template (scaled to 0
    by the Rollout) in its own ReplicaSets. One edit, to the Deployment's template, changes
    what both would run: one POD-001, on the Deployment (the Rollout has no template to edit),
    listing the Rollout's pods and saying the Rollout runs it."""
    rollout = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": meta("embedder", "uid-rollout"),
        "spec": {
            "replicas": 2,
            "workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "embedder"},
        },
    }
    rs = replicaset(
        "embedder-7d9f8c6b5",
        "uid-rs",
        ref("argoproj.io/v1alpha1", "Rollout", "embedder", "uid-rollout"),
    )
    owner = ref("apps/v1", "ReplicaSet", "embedder-7d9f8c6b5", "uid-rs")
    found = pod001(
        [
            deployment("embedder", "uid-deploy", replicas=0),
            rollout,
            rs,
            pod("embedder-7d9f8c6b5-a", owner, **{"rollouts-pod-template-hash": "7d9f8c6b5"}),
            pod("embedder-7d9f8c6b5-b", owner, **{"rollouts-pod-template-hash": "7d9f8c6b5"}),
        ]
    )
    assert list(found) == ["Deployment embedder"]
    draft = found["Deployment embedder"]
    assert draft.evidence["replicas"] == 2 and "from_template" not in draft.evidence
    assert draft.evidence["resolved_by"] == "workloadRef"
    assert (
        "Rollout team-a/embedder runs this Deployment's pod template"
        in draft.evidence["owner_note"]
    )


def test_a_rollout_with_a_template_of_its_own_stays_the_subject():
    rollout = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": meta("ranker", "uid-rollout"),
        "spec": {"template": {"spec": PRIVILEGED}},
    }
    rs = replicaset(
        "ranker-6d5f7c9b8",
        "uid-rs",
        ref("argoproj.io/v1alpha1", "Rollout", "ranker", "uid-rollout"),
    )
    found = pod001(
        [
            rollout,
            rs,
            pod(
                "ranker-6d5f7c9b8-a", ref("apps/v1", "ReplicaSet", rs["metadata"]["name"], "uid-rs")
            ),
        ]
    )
    assert list(found) == ["Rollout ranker"]
    assert "owner_note" not in found["Rollout ranker"].evidence
    # As its ReplicaSet's owner reference gave it: what the policy report references it by.
    assert found["Rollout ranker"].evidence["workload_api_version"] == "argoproj.io/v1alpha1"


def test_a_stale_replicaset_is_filed_on_itself_and_a_missing_deployment_is_said_so():
    """api was deleted and made anew with a clean template; its stale ReplicaSet names the
    old uid and still runs a privileged pod: POD-001 is the ReplicaSet's, never the new
    Deployment's. ReplicaSet loader names a Deployment the snapshot lacks: the finding is the
    Deployment's, and its evidence says it was not in the snapshot."""
    clean = deployment("api", "uid-api-new")
    clean["spec"]["template"]["spec"] = {"containers": [{"name": "main", "image": "x:1"}]}
    stale = replicaset(
        "api-6f7c9d8b5", "uid-api-rs", ref("apps/v1", "Deployment", "api", "uid-api-old")
    )
    loader = replicaset(
        "loader-5f6d7c8b9", "uid-loader-rs", ref("apps/v1", "Deployment", "loader", "uid-l")
    )
    found = pod001(
        [
            clean,
            stale,
            pod("api-6f7c9d8b5-z", ref("apps/v1", "ReplicaSet", "api-6f7c9d8b5", "uid-api-rs")),
            loader,
            pod(
                "loader-5f6d7c8b9-g",
                ref("apps/v1", "ReplicaSet", "loader-5f6d7c8b9", "uid-loader-rs"),
            ),
        ]
    )
    assert sorted(found) == ["Deployment loader", "ReplicaSet api-6f7c9d8b5"]
    assert "another object" in found["ReplicaSet api-6f7c9d8b5"].evidence["owner_note"]
    note = found["Deployment loader"].evidence["owner_note"]
    assert note.startswith("Deployment team-a/loader is not in the snapshot")
