"""K8S-006 on a server in a Knative revision (KServe's serverless InferenceService): every route
reaches it through the revision's public Service (no selector) and Knative's queue-proxy, which
forwards its serving ports to the user container's port. Objects written as Knative Serving,
net-istio and net-kourier write them, read through normalise."""

from __future__ import annotations

import pytest

import posture.rules.k8s.notebooks  # noqa: F401
from inventory.sources.normalise import normalise
from tests.istio_builder import ingress_gateway_pod, istio_gateway, kube_object
from tests.posture.builders import container_entry, inputs, run, tenant

NS = "team-a"
REV = "llm-chat-predictor-00001"
TEAM = tenant("a", namespaces=(NS,))
LIVE = ["security.istio.io/AuthorizationPolicy"]  # a live list read them: none exist
VLLM = "vllm/vllm-openai:v0.11.0"


def env(**values):
    return [{"name": k, "value": v} for k, v in values.items()]


def revision_pod(args=("--model", "/mnt/models", "--port", "8080"), user_port="8080"):
    """Knative's revision pod: the user container, queue-proxy, Istio's sidecar."""
    user = {
        "name": "kserve-container",
        "image": VLLM,
        "args": list(args),
        "env": env(PORT=user_port),
        "ports": [{"containerPort": int(user_port), "name": "user-port"}],
    }
    queue = {
        "name": "queue-proxy",
        "image": "gcr.io/knative-releases/knative.dev/serving/cmd/queue@sha256:" + "a" * 64,
        "env": env(
            SERVING_REVISION=REV,
            QUEUE_SERVING_PORT="8012",
            QUEUE_SERVING_TLS_PORT="8112",
            USER_PORT=user_port,
        ),
        "ports": [
            {"containerPort": 8022, "name": "http-queueadm"},
            {"containerPort": 9090, "name": "http-autometric"},
            {"containerPort": 9091, "name": "http-usermetric"},
            {"containerPort": 8012, "name": "queue-port"},
            {"containerPort": 8112, "name": "https-port"},
        ],
    }
    sidecar = {
        "name": "istio-proxy",
        "image": "docker.io/istio/proxyv2:1.26.2",
        "ports": [{"containerPort": 15090, "name": "http-envoy-prom"}],
    }
    labels = {"serving.knative.dev/revision": REV, "app": REV}
    return kube_object("v1", "Pod", f"{REV}-deployment-5b9c-x7", NS,
                       {"containers": [user, queue, sidecar]}, labels=labels)  # fmt: skip


def public_service(target=8012):
    """The revision's public Service: no selector, its endpoints written by Knative."""
    labels = {
        "serving.knative.dev/revision": REV,
        "networking.internal.knative.dev/serviceType": "Public",
    }
    ports = [{"name": "http", "port": 80, "targetPort": target}]
    return kube_object("v1", "Service", REV, NS, {"ports": ports}, labels=labels)


GATEWAY = [istio_gateway("knative-ingress-gateway", "knative-serving"), ingress_gateway_pod()]
# net-istio's VirtualService for the route's KIngress, bound to Knative's gateway.
ROUTE = kube_object(
    "networking.istio.io/v1",
    "VirtualService",
    "llm-chat-predictor-ingress",
    NS,
    {
        "gateways": ["knative-serving/knative-ingress-gateway"],
        "hosts": ["llm-chat-predictor.team-a.example.com"],
        "http": [{"route": [{"destination": {"host": f"{REV}.{NS}.svc.cluster.local",
                                            "port": {"number": 80}}}]}],
    },
)  # fmt: skip


def drafts(*objects, listed=LIVE):
    snapshot = normalise(list(objects), listed=listed)
    world = inputs(
        pods=snapshot.pods,
        tenants=(TEAM,),
        services=snapshot.services,
        ingresses=snapshot.ingresses,
        namespaces=(NS,),
    )
    return run("K8S-006", world)


def test_a_serverless_vllm_is_reached_through_the_queue_proxy():
    (draft,) = drafts(revision_pod(), public_service(), ROUTE, *GATEWAY)
    entry = container_entry(draft, "kserve-container")
    (route,) = entry["ingresses"]
    assert route["service"] == REV
    assert route["gateways"] == ["knative-serving/knative-ingress-gateway"]
    assert route["via"] == "Knative queue-proxy (8012 -> kserve-container:8080)"
    assert entry["reachable_through"] == [
        "VirtualService llm-chat-predictor-ingress on knative-serving/knative-ingress-gateway "
        "via Knative's queue-proxy"
    ]
    assert entry["route_authentication"][0].startswith(
        "VirtualService llm-chat-predictor-ingress: none: nothing authenticates on Gateway "
        "knative-serving/knative-ingress-gateway"
    )
    assert "verdict" not in entry


@pytest.mark.parametrize(
    ("pod", "service"),
    [
        # A route to the queue-proxy's admin port reaches nothing of the server.
        (revision_pod(), public_service(target=8022)),
        # vLLM left on its own port 8000 while the queue-proxy forwards to 8080.
        (revision_pod(args=("--model", "/mnt/models")), public_service()),
    ],
)
def test_the_queue_proxy_reaches_only_the_user_port(pod, service):
    assert drafts(pod, service, ROUTE, *GATEWAY) == []


def kingress(visibility="ExternalIP", ingress_class="kourier.ingress.networking.knative.dev"):
    split = {"serviceName": REV, "serviceNamespace": NS, "servicePort": 80, "percent": 100}
    rule = {
        "hosts": ["llm-chat-predictor.team-a.example.com"],
        "visibility": visibility,
        "http": {"paths": [{"splits": [split]}]},
    }
    annotations = {"networking.knative.dev/ingress.class": ingress_class}
    api = "networking.internal.knative.dev/v1alpha1"
    return kube_object(api, "Ingress", "llm-chat-predictor", NS, {"rules": [rule]},
                       annotations=annotations)  # fmt: skip


def kourier_controller(extauthz=""):
    container = {"name": "controller", "image": "gcr.io/knative-releases/net-kourier/controller"}
    if extauthz:
        container["env"] = env(KOURIER_EXTAUTHZ_HOST=extauthz)
    labels = {"app": "net-kourier-controller"}
    return kube_object("v1", "Pod", "net-kourier-controller-6c9d-abcde", "knative-serving",
                       {"containers": [container]}, labels=labels)  # fmt: skip


def test_kourier_publishes_a_revision_through_knatives_ingress():
    (draft,) = drafts(revision_pod(), public_service(), kingress(), kourier_controller())
    (route,) = container_entry(draft, "kserve-container")["ingresses"]
    assert (route["kind"], route["service"], route["ports"]) == ("KIngress", REV, [8012])


@pytest.mark.parametrize(
    "objects",
    [
        # Cluster-local only: Kourier's internal gateway.
        [kingress(visibility="ClusterLocal"), kourier_controller()],
        # net-kourier's external authorization covers every route of its gateway.
        [kingress(), kourier_controller(extauthz="ext-authz.auth:9000")],
        # Istio's class: its VirtualServices are the routes (none here).
        [kingress(ingress_class="istio.ingress.networking.knative.dev")],
    ],
)
def test_a_kingress_that_publishes_nothing_unauthenticated_is_quiet(objects):
    assert drafts(revision_pod(), public_service(), *objects) == []
