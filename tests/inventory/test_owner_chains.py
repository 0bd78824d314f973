"""Owner chains followed to the top controller (inventory/owners.py, sources/owner_links.py):
a pod-level finding's subject is the thing one action changes (DESIGN §5), which for a
generated object is the custom resource that generates it, and stays the same across the
rollouts that rename what it generates."""

from __future__ import annotations

from inventory.owners import MAX_DEPTH, OwnerIndex, workload_of
from inventory.snapshot import OwnerLink, Pod
from inventory.sources.normalise import normalise
from tests.inventory import owner_chain_world as world


def workloads(objects: list[dict]) -> dict[str, tuple[str, str, str]]:
    """pod name -> (kind, namespace, name) of its workload, as the checks name it."""
    snapshot = normalise(objects)
    index = OwnerIndex(snapshot.owners, snapshot.pods)
    found = {p.name: workload_of(p, index) for p in snapshot.pods}
    return {name: (w.kind, w.namespace, w.name) for name, w in found.items()}


def test_spark_executors_owned_by_the_driver_pod_are_the_sparkapplications():
    found = workloads(world.spark())
    app = ("SparkApplication", world.NS, "acme-etl")
    assert found == {"acme-etl-driver": app, "acme-etl-exec-1": app, "acme-etl-exec-2": app}


def test_executors_whose_driver_pod_is_gone_stay_under_the_driver_pod():
    found = workloads(world.spark(with_driver=False))
    assert set(found.values()) == {("Pod", world.NS, "acme-etl-driver")}


def test_kserve_pods_and_the_deployment_template_are_the_inferenceservices():
    snapshot = normalise(world.kserve())
    index = OwnerIndex(snapshot.owners, snapshot.pods)
    isvc = ("InferenceService", world.NS, "fraud-model")
    for pod in snapshot.pods:
        ref = workload_of(pod, index)
        assert (ref.kind, ref.namespace, ref.name, ref.resolved_by) == (*isvc, "owner index")
    (template,) = [w.template for w in snapshot.workloads if w.kind == "Deployment"]
    assert template is not None
    assert workload_of(template, index).name == "fraud-model"


def test_only_the_links_a_pods_chain_passes_through_are_kept():
    """The Route, the core Service it makes and its EndpointSlice are on no pod's chain; the
    core Service and the Knative Service of the same name are both read, each as itself."""
    snapshot = normalise(world.kserve())
    assert {(o.kind, o.name, o.owner_kind) for o in snapshot.owners} == {
        ("ReplicaSet", world.KSERVE_RS[2], "Deployment"),
        ("Deployment", world.KSERVE_DEPLOYMENT[2], "Revision"),
        ("Revision", world.REVISION[2], "Configuration"),
        ("Configuration", world.CONFIG[2], "Service.serving.knative.dev"),
        ("Service.serving.knative.dev", world.KSVC[2], "InferenceService"),
    }
    assert [s.name for s in snapshot.services] == ["fraud-model-predictor"]  # the core one
    assert not [w for w in snapshot.warnings if "more than once" in w]


def test_a_rayjobs_cluster_and_its_submitter_are_one_workload():
    found = workloads(world.rayjob())
    assert set(found.values()) == {("RayJob", world.NS, "batch-infer")}


def test_an_owner_absent_from_the_snapshot_is_named_by_the_highest_object_present():
    """A live sync lists no custom resource: the RayCluster's link still names its RayJob. A
    pod whose owner is not in the snapshot at all stays under its owner reference."""
    assert set(workloads(world.rayjob(with_rayjob=False)).values()) == {
        ("RayJob", world.NS, "batch-infer")
    }
    cluster_only = [o for o in world.rayjob() if o["kind"] == "Pod"]
    found = workloads(cluster_only)
    assert found[f"{world.RAYCLUSTER[2]}-head"] == ("RayCluster", world.NS, world.RAYCLUSTER[2])
    assert found["batch-infer-submit"] == ("Job", world.NS, "batch-infer")


def test_a_leaderworkerset_by_its_links_alone():
    """The worker StatefulSet is owned by the leader pod, the leader's by the LWS: both pods
    and the worker StatefulSet's template are the LeaderWorkerSet's."""
    snapshot = normalise(world.leaderworkerset())
    index = OwnerIndex(snapshot.owners, snapshot.pods)
    lws = ("LeaderWorkerSet", world.NS, "vllm")
    pods = [*snapshot.pods, *(w.template for w in snapshot.workloads if w.template)]
    assert len(pods) == 4
    assert {(r.kind, r.namespace, r.name) for r in (workload_of(p, index) for p in pods)} == {lws}


def test_the_gpu_operators_daemonset_is_its_cluster_scoped_clusterpolicys():
    """One edits the ClusterPolicy, never its DaemonSets (the operator reverts them); it has
    no namespace. Absent from the snapshot, its scope is unknown: the DaemonSet's is taken."""
    snapshot = normalise(world.gpu_operator())
    assert OwnerLink("ClusterPolicy", "", "cluster-policy") in snapshot.owners
    (plugin,) = snapshot.pods
    ref = workload_of(plugin, OwnerIndex(snapshot.owners, snapshot.pods))
    assert (ref.kind, ref.namespace, ref.name) == ("ClusterPolicy", "", "cluster-policy")
    assert ref.ref() == "ClusterPolicy cluster-policy"
    absent = workloads(world.gpu_operator(with_policy=False))
    assert set(absent.values()) == {("ClusterPolicy", "gpu-operator", "cluster-policy")}


def test_an_owner_reference_that_is_not_the_controller_is_no_link():
    objects = world.rayjob()
    for item in objects:
        for ref in item["metadata"].get("ownerReferences", []):
            if ref["kind"] == "RayJob":
                ref["controller"] = False
    found = workloads(objects)
    assert found[f"{world.RAYCLUSTER[2]}-head"] == ("RayCluster", world.NS, world.RAYCLUSTER[2])


def _layer(i: int, owner: int | None) -> dict:
    return world.obj(
        "x.example/v1",
        f"Layer{i}",
        f"l{i}",
        ("x.example/v1", f"Layer{owner}", f"l{owner}") if owner is not None else None,
    )


def test_a_cycle_of_owners_ends():
    objects = [_layer(0, 1), _layer(1, 0), world.pod("p", ("x.example/v1", "Layer0", "l0"))]
    assert workloads(objects)["p"][0] in ("Layer0", "Layer1")


def test_a_chain_is_followed_up_to_max_depth():
    layers = [_layer(i, i + 1) for i in range(MAX_DEPTH + 4)]
    found = workloads([*layers, world.pod("p", ("x.example/v1", "Layer0", "l0"))])
    assert found["p"] == (f"Layer{MAX_DEPTH}", world.NS, f"l{MAX_DEPTH}")


def test_a_template_pod_named_like_a_pod_is_not_a_cycle():
    """A LeaderWorkerSet's group StatefulSet is named after the leader pod; so is its
    template pod, which must still resolve through the leader pod."""
    index = OwnerIndex(
        [OwnerLink("StatefulSet", "ns", "g-0", "Pod", "g-0")],
        [Pod("ns", "g-0", owner_kind="LeaderWorkerSet", owner_name="g")],
    )
    template = Pod("ns", "g-0", owner_kind="StatefulSet", owner_name="g-0")
    assert workload_of(template, index).kind == "LeaderWorkerSet"


def test_same_named_custom_resources_in_two_namespaces_are_two_workloads():
    """Two profiles ran the same Katib tutorial: each pod is its own namespace's Experiment,
    and neither copy is dropped as a duplicate of the other."""
    snapshot = normalise([*world.katib("ta"), *world.katib("tb")])
    index = OwnerIndex(snapshot.owners, snapshot.pods)
    found = {p.namespace: workload_of(p, index).ref() for p in snapshot.pods}
    assert found == {"ta": "Experiment ta/hpo", "tb": "Experiment tb/hpo"}
    assert snapshot.warnings == ()


def test_a_custom_resource_twice_in_one_namespace_is_still_a_duplicate():
    queue = world.obj("kueue.x-k8s.io/v1beta1", "LocalQueue", "shared-gpu", ns="ta", spec={})
    other = world.obj("kueue.x-k8s.io/v1beta1", "LocalQueue", "shared-gpu", ns="tb", spec={})
    # Without a namespace an object is cluster-scoped: one name, one object.
    cluster_queue = world.obj("kueue.x-k8s.io/v1beta1", "ClusterQueue", "gpu", ns=None, spec={})
    snapshot = normalise([queue, other, queue, cluster_queue, cluster_queue])
    assert snapshot.counts == {"ClusterQueue": 2, "LocalQueue": 3}
    assert snapshot.warnings == (
        "ClusterQueue gpu appears more than once in the snapshot; the first copy was kept",
        "LocalQueue ta/shared-gpu appears more than once in the snapshot; the first copy was kept",
    )


def _vcluster_pod(name: str, virtual_namespace: str) -> dict:
    """A pod as vcluster's syncer writes it into the host namespace: translated name, and the
    vcluster's Service as its only owner, a garbage-collection parent with no controller flag."""
    pod = world.obj("v1", "Pod", name, ns="vc-globex", spec=world.spec("main", "trainer:1"))
    pod["metadata"]["annotations"] = {
        "vcluster.loft.sh/object-name": name.split("-x-")[0],
        "vcluster.loft.sh/object-namespace": virtual_namespace,
    }
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Service", "name": "orion", "uid": "uid-orion"}
    ]
    return pod


def test_a_pod_whose_only_owner_is_a_service_is_a_bare_pod_not_the_service():
    """vcluster's synced pods: two unrelated virtual workloads must not merge into one subject
    named after a Service, which runs nothing and through which nothing can be fixed."""
    found = workloads(
        [
            _vcluster_pod("trainer-0-x-skunkworks-x-orion", "skunkworks"),
            _vcluster_pod("finetune-7c4d-x-labs-x-orion", "labs"),
        ]
    )
    assert found == {
        "trainer-0-x-skunkworks-x-orion": ("Pod", "vc-globex", "trainer-0-x-skunkworks-x-orion"),
        "finetune-7c4d-x-labs-x-orion": ("Pod", "vc-globex", "finetune-7c4d-x-labs-x-orion"),
    }


def test_an_unflagged_reference_to_a_replicaset_is_still_followed():
    """A snapshot written by hand often leaves out `controller: true`; a reference to a kind
    that runs pods is then the one that manages the pod."""
    rs = ("apps/v1", "ReplicaSet", "api-5d9f8c7b6d")
    replicaset = world.obj(*rs, owner=("apps/v1", "Deployment", "api"))
    pod = world.obj("v1", "Pod", "api-5d9f8c7b6d-x2x9q", owner=rs, spec=world.spec("m", "api:1"))
    for item in (replicaset, pod):
        del item["metadata"]["ownerReferences"][0]["controller"]
    pod["metadata"]["ownerReferences"].insert(
        0, {"apiVersion": "v1", "kind": "ConfigMap", "name": "api-config", "uid": "uid-cm"}
    )
    found = workloads([replicaset, pod])
    assert found == {"api-5d9f8c7b6d-x2x9q": ("Deployment", world.NS, "api")}


def test_a_custom_resource_with_an_unflagged_owner_reference_is_followed_up():
    """The same rule as pods and ReplicaSets: a hand-written RayCluster whose reference to its
    RayJob carries no `controller` flag is still the RayJob's, so the head, the worker and
    the submitter are one workload, the thing one edits."""
    objects = world.rayjob()
    for item in objects:
        for ref in item["metadata"].get("ownerReferences", []):
            if ref["kind"] == "RayJob":
                del ref["controller"]
    found = workloads(objects)
    assert set(found.values()) == {("RayJob", world.NS, world.RAYJOB[2])}


def test_a_reference_that_says_it_is_not_the_controller_is_never_followed():
    """`controller: false` is the API's word for a garbage-collection parent: a pod whose only
    reference says so is a bare Pod, even where that reference names a ReplicaSet."""
    rs = ("apps/v1", "ReplicaSet", "api-5d9f8c7b6d")
    replicaset = world.obj(*rs, owner=("apps/v1", "Deployment", "api"))
    pod = world.obj("v1", "Pod", "api-adopted", owner=rs, spec=world.spec("m", "api:1"))
    pod["metadata"]["ownerReferences"][0]["controller"] = False
    assert workloads([replicaset, pod]) == {"api-adopted": ("Pod", world.NS, "api-adopted")}


def test_an_unflagged_reference_is_judged_by_its_group_not_a_kind_name_a_crd_shares():
    """Knative's Service runs pods (through its Revisions), the core Service never does; and a
    built-in kind that runs nothing (a PodDisruptionBudget) is never an owner, whatever list of
    kinds one thinks of (rtself7 k82, k85)."""
    knative = world.pod("hello-00001-deployment-5f7d8c9b6-k2m4n", None)
    knative["metadata"]["ownerReferences"] = [
        {"apiVersion": "serving.knative.dev/v1", "kind": "Service", "name": "hello", "uid": "u1"}
    ]
    guarded = world.pod("pdb-owned", None)
    guarded["metadata"]["ownerReferences"] = [
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "name": "pdb", "uid": "u2"}
    ]
    nameless = world.pod("no-api-version", None)
    nameless["metadata"]["ownerReferences"] = [{"kind": "Widget", "name": "w", "uid": "u3"}]
    found = workloads([knative, guarded, nameless])
    kind, namespace, name = found["hello-00001-deployment-5f7d8c9b6-k2m4n"]
    assert (namespace, name) == (world.NS, "hello") and kind != "Service"
    assert found["pdb-owned"] == ("Pod", world.NS, "pdb-owned")
    assert found["no-api-version"] == ("Pod", world.NS, "no-api-version")
