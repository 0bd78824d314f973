"""Owner chains as the controllers write them, for tests of inventory/owners.py and of the
subjects built on it: KServe (InferenceService -> Knative Service -> Configuration -> Revision
-> Deployment -> ReplicaSet -> pods), Spark (driver Pod owned by the SparkApplication, its
executors owned by the driver Pod), KubeRay (RayJob -> RayCluster -> pods, and the submitter
Job), a LeaderWorkerSet (worker StatefulSets owned by the leader pods) and the GPU Operator
(DaemonSets owned by the cluster-scoped ClusterPolicy). Objects as `kubectl get -A -o json`
prints them."""

from __future__ import annotations

from typing import Any

NS = "team-a"
# Made-up, random-looking values (no real key): POD-008 takes them for literal credentials.
AWS_ID = "AKIAQ3EGRZ7TX2KM5V4N"
AWS_SECRET = "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"
Owner = tuple[str, str, str]  # (apiVersion, kind, name)


def meta(name: str, namespace: str | None, owner: Owner | None, *, controller: bool = True):
    m: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if namespace:
        m["namespace"] = namespace
    if owner:
        api, kind, oname = owner
        ref = {"apiVersion": api, "kind": kind, "name": oname, "uid": f"uid-{oname}"}
        m["ownerReferences"] = [{**ref, "controller": controller, "blockOwnerDeletion": True}]
    return m


def obj(api: str, kind: str, name: str, owner: Owner | None = None, ns: str | None = NS, **rest):
    return {"apiVersion": api, "kind": kind, "metadata": meta(name, ns, owner), **rest}


def spec(container: str, image: str, *, secret: bool = False) -> dict[str, Any]:
    env = [{"name": "AWS_ACCESS_KEY_ID", "value": AWS_ID}] if secret else []
    env += [{"name": "AWS_SECRET_ACCESS_KEY", "value": AWS_SECRET}] if secret else []
    return {"containers": [{"name": container, "image": image, "env": env}]}


def pod(name: str, owner: Owner | None, *, container: str = "main", labels=None, **kw) -> dict:
    item = obj("v1", "Pod", name, owner, spec=spec(container, "registry.example/app:1.0", **kw))
    item["metadata"]["labels"] = dict(labels or {})
    item["status"] = {"phase": "Running"}
    return item


def deployment(name: str, owner: Owner | None = None, **kw) -> dict:
    template = {"metadata": {"labels": {"app": name}}, "spec": spec("main", "app:1", **kw)}
    return obj("apps/v1", "Deployment", name, owner, spec={"replicas": 1, "template": template})


def statefulset(name: str, owner: Owner | None) -> dict:
    template = {"metadata": {"labels": {"app": name}}, "spec": spec("main", "app:1")}
    return obj("apps/v1", "StatefulSet", name, owner, spec={"replicas": 1, "template": template})


ISVC = ("serving.kserve.io/v1beta1", "InferenceService", "fraud-model")
KSVC = ("serving.knative.dev/v1", "Service", "fraud-model-predictor")
CONFIG = ("serving.knative.dev/v1", "Configuration", "fraud-model-predictor")
REVISION = ("serving.knative.dev/v1", "Revision", "fraud-model-predictor-00001")
KSERVE_DEPLOYMENT = ("apps/v1", "Deployment", "fraud-model-predictor-00001-deployment")
KSERVE_RS = ("apps/v1", "ReplicaSet", "fraud-model-predictor-00001-deployment-5c7d9f6b8d")
ROUTE = ("serving.knative.dev/v1", "Route", "fraud-model-predictor")


def kserve(*, with_isvc: bool = True) -> list[dict]:
    """An InferenceService in serverless mode, with the core Service Knative's Route makes under
    the Knative Service's own name, and an EndpointSlice owned by that core Service."""
    objects = [
        obj(*KSVC[:2], KSVC[2], ISVC),
        obj(*CONFIG[:2], CONFIG[2], KSVC),
        obj(*REVISION[:2], REVISION[2], CONFIG),
        deployment(KSERVE_DEPLOYMENT[2], REVISION, secret=True),
        obj(*KSERVE_RS[:2], KSERVE_RS[2], KSERVE_DEPLOYMENT, spec={}),
        obj(*ROUTE[:2], ROUTE[2], KSVC),
        obj("v1", "Service", "fraud-model-predictor", ROUTE, spec={"type": "ExternalName"}),
        obj(
            "discovery.k8s.io/v1",
            "EndpointSlice",
            "fraud-model-predictor-x7k2",
            ("v1", "Service", "fraud-model-predictor"),
        ),
    ]
    objects += [obj(*ISVC[:2], ISVC[2])] if with_isvc else []
    hashed = {"pod-template-hash": "5c7d9f6b8d"}
    return objects + [
        pod(f"{KSERVE_RS[2]}-{i}", KSERVE_RS, labels=hashed, secret=True) for i in ("a", "b")
    ]


SPARK = ("sparkoperator.k8s.io/v1beta2", "SparkApplication", "acme-etl")
DRIVER = ("v1", "Pod", "acme-etl-driver")


def spark(*, with_driver: bool = True) -> list[dict]:
    """A SparkApplication: its driver pod, and two executors owned by the driver pod."""
    executors = [
        pod(f"acme-etl-exec-{i}", DRIVER, container="spark-kubernetes-executor", secret=True)
        for i in (1, 2)
    ]
    driver = pod(DRIVER[2], SPARK, container="spark-kubernetes-driver", secret=True)
    return [obj(*SPARK[:2], SPARK[2]), *([driver] if with_driver else []), *executors]


RAYJOB = ("ray.io/v1", "RayJob", "batch-infer")
RAYCLUSTER = ("ray.io/v1", "RayCluster", "batch-infer-raycluster-7mz4q")


def rayjob(*, with_rayjob: bool = True) -> list[dict]:
    """A RayJob: the RayCluster it generates (head, worker, head Service) and its submitter."""
    objects = [
        obj(*RAYCLUSTER[:2], RAYCLUSTER[2], RAYJOB),
        obj("v1", "Service", f"{RAYCLUSTER[2]}-head-svc", RAYCLUSTER, spec={"type": "ClusterIP"}),
        obj("batch/v1", "Job", RAYJOB[2], RAYJOB, spec={}),
        pod(f"{RAYCLUSTER[2]}-head", RAYCLUSTER, container="ray-head"),
        pod(f"{RAYCLUSTER[2]}-worker-x", RAYCLUSTER, container="ray-worker"),
        pod(f"{RAYJOB[2]}-submit", ("batch/v1", "Job", RAYJOB[2]), container="submit"),
    ]
    return objects + ([obj(*RAYJOB[:2], RAYJOB[2])] if with_rayjob else [])


LWS = ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "vllm")


def leaderworkerset() -> list[dict]:
    """A LeaderWorkerSet of one group: the leader StatefulSet it owns, and the group's worker
    StatefulSet owned by the leader pod (no LWS label: the links alone say it)."""
    return [
        obj(*LWS[:2], LWS[2]),
        statefulset("vllm", LWS),
        statefulset("vllm-0", ("v1", "Pod", "vllm-0")),
        pod("vllm-0", ("apps/v1", "StatefulSet", "vllm")),
        pod("vllm-0-1", ("apps/v1", "StatefulSet", "vllm-0")),
    ]


CLUSTER_POLICY = ("nvidia.com/v1", "ClusterPolicy", "cluster-policy")


def gpu_operator(*, with_policy: bool = True) -> list[dict]:
    """The GPU Operator's device plugin DaemonSet, owned by the cluster-scoped ClusterPolicy."""
    ds = obj(
        "apps/v1", "DaemonSet", "nvidia-device-plugin-daemonset", CLUSTER_POLICY, "gpu-operator"
    )
    template = {"metadata": {"labels": {"app": "nvidia-device-plugin"}}, "spec": spec("p", "p:1")}
    ds["spec"] = {"template": template}
    plugin = pod(
        "nvidia-device-plugin-daemonset-x2", ("apps/v1", "DaemonSet", ds["metadata"]["name"])
    )
    plugin["metadata"]["namespace"] = "gpu-operator"
    policy = obj(*CLUSTER_POLICY[:2], CLUSTER_POLICY[2], ns=None, spec={})
    return [ds, plugin, *([policy] if with_policy else [])]


EXPERIMENT = ("kubeflow.org/v1beta1", "Experiment", "hpo")
TRIAL = ("kubeflow.org/v1beta1", "Trial", "hpo-abc")
TRIAL_JOB = ("batch/v1", "Job", "hpo-abc")


def katib(namespace: str, *, privileged: bool = False) -> list[dict]:
    """A Katib Experiment `hpo` in `namespace`: its Trial, the Trial's Job and the Job's pod,
    named as Katib names them (every profile running the same tutorial gets the same names)."""
    trial_pod = pod("hpo-abc-8kq2d", TRIAL_JOB, container="training-container")
    trial_pod["metadata"]["namespace"] = namespace
    trial_pod["spec"]["containers"][0]["securityContext"] = {"privileged": privileged}
    return [
        obj(*EXPERIMENT[:2], EXPERIMENT[2], ns=namespace, spec={}),
        obj(*TRIAL[:2], TRIAL[2], EXPERIMENT, ns=namespace, spec={}),
        obj(*TRIAL_JOB[:2], TRIAL_JOB[2], TRIAL, ns=namespace, spec={}),
        trial_pod,
    ]


def renamed(item, old: str, new: str):
    """`item` with `old` replaced by `new` in every string of it."""
    if isinstance(item, dict):
        return {k: renamed(v, old, new) for k, v in item.items()}
    if isinstance(item, list):
        return [renamed(v, old, new) for v in item]
    return item.replace(old, new) if isinstance(item, str) else item
