"""KServe in serverless mode on Knative with Kourier, on neo-west (demo/additions.py calls it
last, so every other object keeps the ids it had).

The GPU cloud offers KServe's serverless InferenceServices: orbital's `bio-llm` runs vLLM (no
--api-key) as the revision's kserve-container, behind Knative's queue-proxy, on a free H200 of
the external pool (nw-h200-01, beside kestrel's whole GPUs). net-kourier publishes the revision's
public Service (no selector: Knative writes its endpoints) through Knative's own Ingress, visible
outside, with no external authorization: K8S-006, on the InferenceService, names the path
through the queue-proxy (8012 -> kserve-container:8080).

Pure Python: no Django, no network; deterministic for the `Ids` it is given.
"""

from __future__ import annotations

from demo import k8s
from demo.cluster_parts import CLOUD_CLASS_KEY, GPU, ORB, REG, Cluster
from demo.k8s import Ids, Obj
from demo.k8s_apps import platform_deployment, platform_namespace

# KServe serverless on neo-west: the InferenceService, its first revision, where it runs.
KNATIVE_NS, KOURIER_NS = "knative-serving", "kourier-system"
KNATIVE = "gcr.io/knative-releases/knative.dev"
ISVC, REVISION = "bio-llm", "bio-llm-predictor-00001"
ISVC_NODE = "nw-h200-01"  # the external H200 pool: kestrel leaves two GPUs free here
ISVC_HOST = f"{ISVC}-predictor.{ORB}.inference.neo-west.example.com"
VLLM_IMAGE = "orbital/vllm-openai:0.8.5"
KOURIER_CLASS = "kourier.ingress.networking.knative.dev"
KINGRESS_API = "networking.internal.knative.dev/v1alpha1"
CPU_NODE = "nw-cpu-01"  # Kourier's controller and gateway


def kserve(ids: Ids, c: Cluster, items: list[Obj]) -> list[Obj]:
    """The objects above for cluster `c`; orbital's quota among `items` counts the model's GPU
    (in place, no id drawn)."""
    if c.name != "neo-west":
        return []
    node = CPU_NODE
    controller = k8s.container(
        "controller", ids.pinned(f"{KNATIVE}/net-kourier/cmd/kourier:v1.16.0"),
        cpu="500m", memory="500Mi", security=k8s.HARDENED_CONTAINER,
    )  # fmt: skip
    envoy = k8s.container(
        "kourier-gateway", ids.pinned("docker.io/envoyproxy/envoy:v1.31.2"), cpu="1",
        memory="1Gi", security=k8s.HARDENED_CONTAINER, ports=(8080, 8443),
    )  # fmt: skip
    found = [platform_namespace(ids, KNATIVE_NS), platform_namespace(ids, KOURIER_NS)]
    found += platform_deployment(
        ids, KNATIVE_NS, "net-kourier-controller", [controller], node,
        labels={"app": "net-kourier-controller"},
    )  # fmt: skip
    found += platform_deployment(
        ids, KOURIER_NS, "3scale-kourier-gateway", [envoy], node,
        labels={"app": "3scale-kourier-gateway"},
    )  # fmt: skip
    found += _revision(ids)
    for o in items:  # orbital's quota counts the model's H200
        if o["kind"] == "ResourceQuota" and o["metadata"].get("namespace") == ORB:
            used = o["status"]["used"]
            used["requests.nvidia.com/gpu"] = str(int(used["requests.nvidia.com/gpu"]) + 1)
    return found


def _revision(ids: Ids) -> list[Obj]:
    """The InferenceService's first revision: its pod (vLLM as kserve-container, Knative's
    queue-proxy in front), its Deployment and ReplicaSet, the public Service (no selector) and
    Kourier's KIngress for the route (visible outside, no external authorization)."""
    env = [{"name": "PORT", "value": "8080"}, {"name": "K_REVISION", "value": REVISION}]
    model = k8s.container(
        "kserve-container", ids.pinned(f"{REG}/{VLLM_IMAGE}"), gpus={GPU: 1}, cpu="8",
        memory="96Gi", security=k8s.HARDENED_CONTAINER, env=env, ports=(8080,),
        args=["--port", "8080", "--model", "/mnt/models", "--served-model-name", ISVC,
              "--max-model-len", "16384"],
    )  # fmt: skip
    model["command"] = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    model["ports"][0]["name"] = "user-port"
    queue_env = {
        "SERVING_NAMESPACE": ORB,
        "SERVING_REVISION": REVISION,
        "QUEUE_SERVING_PORT": "8012",
        "QUEUE_SERVING_TLS_PORT": "8112",
        "USER_PORT": "8080",
        "CONTAINER_CONCURRENCY": "0",
    }
    # The cloud mirrors Knative's queue-proxy into the registry (config-deployment's
    # queue-sidecar-image), so customers' pods run no image from outside it.
    queue = k8s.container(
        "queue-proxy", ids.pinned(f"{REG}/knative.dev/serving/cmd/queue:v1.16.0"),
        cpu="25m", memory="64Mi", security=k8s.HARDENED_CONTAINER,
        env=[{"name": k, "value": v} for k, v in queue_env.items()],
    )  # fmt: skip
    queue["ports"] = [
        {"containerPort": port, "name": name, "protocol": "TCP"}
        for port, name in ((8022, "http-queueadm"), (9090, "http-autometric"),
                           (9091, "http-usermetric"), (8012, "queue-port"), (8112, "https-port"))
    ]  # fmt: skip
    deployment = f"{REVISION}-deployment"
    template_hash = ids.suffix(10, "bcdfghjklmnpqrstvwxz2456789")
    labels = {
        "app": REVISION,
        "component": "predictor",
        "serving.kserve.io/inferenceservice": ISVC,
        "serving.knative.dev/configuration": f"{ISVC}-predictor",
        "serving.knative.dev/revision": REVISION,
        "serving.knative.dev/service": f"{ISVC}-predictor",
    }
    replica_set = k8s.controller(
        ids, "ReplicaSet", f"{deployment}-{template_hash}", ORB,
        labels={**labels, "pod-template-hash": template_hash},
        owner=("apps/v1", "Deployment", deployment),
    )  # fmt: skip
    dep = k8s.deployment(ids, deployment, ORB, model["image"])
    dep["metadata"]["labels"] = dict(labels)
    dep["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "serving.knative.dev/v1",
            "blockOwnerDeletion": True,
            "controller": True,
            "kind": "Revision",
            "name": REVISION,
            "uid": ids.uid(f"Revision/{ORB}/{REVISION}"),
        }
    ]
    pod = k8s.pod(
        ids, f"{replica_set['metadata']['name']}-{ids.suffix()}", ORB, node=ISVC_NODE,
        containers=[model, queue], owner=("apps/v1", "ReplicaSet", replica_set["metadata"]["name"]),
        labels={**labels, "pod-template-hash": template_hash},
        tolerations=[k8s.toleration(CLOUD_CLASS_KEY, "external", "NoSchedule")],
        node_selector={"gpuposture.io/pool": "external-h200"}, pod_security=k8s.HARDENED_POD,
    )  # fmt: skip
    public = k8s.obj(
        "v1",
        "Service",
        k8s.meta(ids, "Service", REVISION, ORB, labels={
            "networking.internal.knative.dev/serviceType": "Public",
            "serving.knative.dev/revision": REVISION,
        }),
        spec={"ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8012}],
              "type": "ClusterIP", "sessionAffinity": "None"},
    )  # fmt: skip
    split = {"serviceName": REVISION, "serviceNamespace": ORB, "servicePort": 80, "percent": 100}
    rule = {
        "hosts": [ISVC_HOST],
        "visibility": "ExternalIP",
        "http": {"paths": [{"splits": [split]}]},
    }
    m = k8s.meta(ids, "Ingress", f"{ISVC}-predictor", ORB)
    m["annotations"] = {
        "networking.knative.dev/ingress.class": "kourier.ingress.networking.knative.dev"
    }
    kingress = k8s.obj(
        "networking.internal.knative.dev/v1alpha1", "Ingress", m, spec={"rules": [rule]}
    )
    predictor = {"model": {"modelFormat": {"name": "huggingface"}, "runtime": "vllm-openai",
                           "storageUri": "s3://orbital-models/bio-llm-8b"}}  # fmt: skip
    isvc = k8s.obj(
        "serving.kserve.io/v1beta1",
        "InferenceService",
        k8s.meta(ids, "InferenceService", ISVC, ORB),
        spec={"predictor": predictor},
        status={"url": f"http://{ISVC_HOST.replace('-predictor', '')}"},
    )
    return [isvc, *_knative_chain(ids), dep, replica_set, pod, public, kingress]


def _knative_chain(ids: Ids) -> list[Obj]:
    """KServe's Knative Service for the predictor, its Configuration and the Revision, each
    owned by the one before (the InferenceService owns the Service)."""
    predictor, serving = f"{ISVC}-predictor", "serving.knative.dev/v1"
    chain = (
        ("Service", predictor, ("serving.kserve.io/v1beta1", "InferenceService", ISVC)),
        ("Configuration", predictor, (serving, "Service", predictor)),
        ("Revision", REVISION, (serving, "Configuration", predictor)),
    )
    found = []
    for kind, name, owner in chain:
        m = k8s.meta(ids, kind, name, ORB, owner=owner)
        found.append(k8s.obj(serving, kind, m, spec={}))
    return found
