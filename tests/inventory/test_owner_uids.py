"""Owners are known by uid, as Kubernetes knows them (inventory/owners.py, sources/owner_links.py):
a stale ReplicaSet naming a Deployment deleted and made anew is not filed on the new one; an
owner reference across namespaces names no object of the other namespace and invents none
here; an owner the snapshot lacks is said to be missing, not named as if it were read.
Objects as `kubectl get -A -o json` prints them."""

from __future__ import annotations

from inventory.owners import OwnerIndex, owner_chain, workload_of
from inventory.snapshot import ClusterSnapshot
from inventory.sources.normalise import normalise

NS = "team-a"


def meta(name: str, uid: str, ns: str = NS, owner: dict | None = None, **labels: str) -> dict:
    found: dict = {"name": name, "namespace": ns, "uid": uid}
    if labels:
        found["labels"] = dict(labels)
    if owner is not None:
        found["ownerReferences"] = [{**owner, "controller": True, "blockOwnerDeletion": True}]
    return found


def ref(kind: str, name: str, uid: str) -> dict:
    return {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid}


SPEC = {"containers": [{"name": "main", "image": "x:1"}]}


def deployment(name: str, uid: str, ns: str = NS) -> dict:
    template = {"metadata": {"labels": {"app": name}}, "spec": SPEC}
    spec = {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": template}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(name, uid, ns),
        "spec": spec,
    }


def replicaset(name: str, uid: str, owner: dict | None, ns: str = NS) -> dict:
    template = {"metadata": {"labels": {"app": "x"}}, "spec": SPEC}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": meta(name, uid, ns, owner),
        "spec": {"replicas": 1, "template": template},
    }


def pod(name: str, owner: dict, ns: str = NS, **labels: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta(name, f"uid-{name}", ns, owner, **labels),
        "spec": SPEC,
    }


def resolved(snapshot: ClusterSnapshot) -> dict:
    index = OwnerIndex(snapshot.owners, snapshot.pods)
    return {p.name: workload_of(p, index) for p in snapshot.pods}


def test_a_stale_replicaset_naming_a_deleted_deployment_by_uid_is_not_filed_on_the_new_one():
    """Deployment api was deleted and made anew (uid new); its old ReplicaSet still names the
    old uid. The new Deployment's own pods are its; the stale pod is its ReplicaSet's."""
    snapshot = normalise(
        [
            deployment("api", "uid-api-new"),
            replicaset("api-84b5d6c7f", "uid-rs-new", ref("Deployment", "api", "uid-api-new")),
            replicaset("api-6f7c9d8b5", "uid-rs-old", ref("Deployment", "api", "uid-api-old")),
            pod(
                "api-84b5d6c7f-a",
                ref("ReplicaSet", "api-84b5d6c7f", "uid-rs-new"),
                **{"pod-template-hash": "84b5d6c7f"},
            ),
            pod(
                "api-6f7c9d8b5-z",
                ref("ReplicaSet", "api-6f7c9d8b5", "uid-rs-old"),
                **{"pod-template-hash": "6f7c9d8b5"},
            ),
        ]
    )
    found = resolved(snapshot)
    live, stale = found["api-84b5d6c7f-a"], found["api-6f7c9d8b5-z"]
    assert (live.kind, live.name, live.note) == ("Deployment", "api", "")
    assert (stale.kind, stale.namespace, stale.name) == ("ReplicaSet", NS, "api-6f7c9d8b5")
    assert "uid-api-old" in stale.note and "another object" in stale.note


def test_a_pod_whose_owner_of_that_name_is_another_object_is_its_own_subject():
    snapshot = normalise(
        [
            replicaset("web-5d9c7b8f6", "uid-rs-now", None),
            pod(
                "web-5d9c7b8f6-q",
                ref("ReplicaSet", "web-5d9c7b8f6", "uid-rs-gone"),
                **{"pod-template-hash": "5d9c7b8f6"},
            ),
        ]
    )
    (p,) = snapshot.pods
    found = workload_of(p, OwnerIndex(snapshot.owners, snapshot.pods))
    assert (found.kind, found.name, found.resolved_by) == (
        "Pod",
        "web-5d9c7b8f6-q",
        "owner replaced",
    )
    assert "ReplicaSet web-5d9c7b8f6" in found.note
    # An exemption of the other ReplicaSet of that name does not reach it.
    assert owner_chain(p, OwnerIndex(snapshot.owners, snapshot.pods)) == (("Pod", NS, p.name),)


def test_an_owner_reference_across_namespaces_invents_no_owner():
    """A pod in team-b names team-a's ReplicaSet by its name and uid; a ReplicaSet in team-b
    names team-a's Deployment by its uid. Kubernetes follows neither (its garbage collector
    takes the owner as absent), and no object of team-b can be that owner: each chain stops at
    the object that exists (the pod, the ReplicaSet), in its own namespace. Never a Deployment
    guessed from the pod-template-hash label, nor one named in team-b that exists nowhere."""
    owner = ref("ReplicaSet", "shared-5d8f9c7b6", "uid-shared-rs")
    hashed = {"pod-template-hash": "5d8f9c7b6"}
    snapshot = normalise(
        [
            deployment("shared", "uid-shared"),
            replicaset(
                "shared-5d8f9c7b6", "uid-shared-rs", ref("Deployment", "shared", "uid-shared")
            ),
            pod("shared-5d8f9c7b6-a", owner, **hashed),
            pod("shared-5d8f9c7b6-zz", owner, ns="team-b", **hashed),
            replicaset(
                "bridge-6c7d8e9f0",
                "uid-bridge-rs",
                ref("Deployment", "shared", "uid-shared"),
                ns="team-b",
            ),
            pod(
                "bridge-6c7d8e9f0-q",
                ref("ReplicaSet", "bridge-6c7d8e9f0", "uid-bridge-rs"),
                ns="team-b",
            ),
        ]
    )
    found = resolved(snapshot)
    home, other, bridge = (
        found[n] for n in ("shared-5d8f9c7b6-a", "shared-5d8f9c7b6-zz", "bridge-6c7d8e9f0-q")
    )
    assert (home.kind, home.namespace, home.name, home.note) == ("Deployment", NS, "shared", "")
    assert (other.kind, other.namespace, other.name) == ("Pod", "team-b", "shared-5d8f9c7b6-zz")
    assert other.resolved_by == "owner across namespaces"
    assert (bridge.kind, bridge.namespace, bridge.name) == (
        "ReplicaSet",
        "team-b",
        "bridge-6c7d8e9f0",
    )
    for ref_ in (other, bridge):
        assert "another namespace" in ref_.note
        assert NS not in ref_.note  # team-b's finding names nothing of team-a


def test_an_owner_missing_from_the_snapshot_is_said_so():
    """The ReplicaSet names Deployment loader, which the snapshot does not hold: the pods are
    still the Deployment's (the owner the highest object names), and the note says it was not
    read. A Deployment the snapshot holds gets no such note."""
    snapshot = normalise(
        [
            replicaset("loader-5f6d7c8b9", "uid-rs", ref("Deployment", "loader", "uid-loader")),
            pod("loader-5f6d7c8b9-g", ref("ReplicaSet", "loader-5f6d7c8b9", "uid-rs")),
            deployment("kept", "uid-kept"),
            replicaset("kept-7c6b5d4f9", "uid-kept-rs", ref("Deployment", "kept", "uid-kept")),
            pod("kept-7c6b5d4f9-h", ref("ReplicaSet", "kept-7c6b5d4f9", "uid-kept-rs")),
        ]
    )
    found = resolved(snapshot)
    loader, kept = found["loader-5f6d7c8b9-g"], found["kept-7c6b5d4f9-h"]
    assert (loader.kind, loader.name) == ("Deployment", "loader")
    assert loader.note.startswith(f"Deployment {NS}/loader is not in the snapshot")
    assert (kept.kind, kept.name, kept.note) == ("Deployment", "kept", "")


def test_a_pods_missing_replicaset_is_said_so_beside_the_deployment_its_label_names():
    snapshot = normalise(
        [
            pod(
                "trainer-5d9c7b8f6-x",
                ref("ReplicaSet", "trainer-5d9c7b8f6", "uid-rs"),
                **{"pod-template-hash": "5d9c7b8f6"},
            )
        ]
    )
    (found,) = resolved(snapshot).values()
    assert (found.kind, found.name, found.resolved_by) == (
        "Deployment",
        "trainer",
        "pod-template-hash label",
    )
    assert "ReplicaSet team-a/trainer-5d9c7b8f6 is not in the snapshot" in found.note


def test_a_watch_resyncs_changes_say_nothing_of_owners():
    """A watch re-sync reads only what changed: the ReplicaSet it does not hold is no owner
    missing from the cluster, so nothing is recorded and nothing said."""
    snapshot = normalise(
        [
            pod(
                "trainer-5d9c7b8f6-x",
                ref("ReplicaSet", "trainer-5d9c7b8f6", "uid-rs"),
                **{"pod-template-hash": "5d9c7b8f6"},
            )
        ],
        whole=False,
    )
    (p,) = snapshot.pods
    assert (p.owner_found, p.owner_uid) == ("", "uid-rs")
    assert workload_of(p, OwnerIndex(())).note == ""
