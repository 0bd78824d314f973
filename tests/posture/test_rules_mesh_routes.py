"""K8S-006 through the routes of meshes and ingress controllers (Istio, Contour, Emissary,
NGINX Inc, Kong), and K8S-007 with an Istio Sidecar limiting egress. Hand-built read models."""

from __future__ import annotations

import pytest

import posture.rules  # noqa: F401
from inventory.snapshot import Container, Ingress, NetworkPolicy, Service
from posture.rules.registry import run_checks
from tests.posture.builders import env, inputs, pod, tenant

ALPHA = tenant("alpha")
APP = {"app": "nb"}
OPEN = Container(
    "nb",
    "quay.io/jupyter/base-notebook:2024-10-02",
    args=("start-notebook.py", "--ServerApp.token=", "--ServerApp.password="),
)
KUBEFLOW = Container(
    "nb",
    "kubeflownotebookswg/jupyter-scipy:v1.8.0",
    ports=(8888,),
    env=(env("NB_PREFIX", "/notebook/alpha/nb"),),
)
CLUSTER_IP = Service("alpha", "nb", "ClusterIP", APP, (8888,))


def world(container, *routes):
    p = pod("alpha", "nb-0", containers=(container,), labels=APP)
    return inputs(pods=(p,), tenants=(ALPHA,), services=(CLUSTER_IP,), ingresses=routes)


@pytest.mark.parametrize(
    "route",
    [
        Ingress("alpha", "nb", hosts=("nb.example.com",), services=("nb",), kind=kind)
        for kind in ("VirtualService", "HTTPProxy", "Mapping", "VirtualServer", "TCPIngress")
    ],
)
def test_k8s006_an_open_notebook_behind_a_mesh_route_is_exposed(route):
    (draft,) = run_checks(world(OPEN, route), ["K8S-006"])
    assert draft.tenants == ("alpha",)
    assert draft.evidence["containers"][0]["ingresses"] == [
        {
            "name": "nb",
            "kind": route.kind,
            "hosts": ["nb.example.com"],
            "service": "nb",
            "ports": [8888],
        }
    ]
    assert f"{route.kind} nb" in draft.title


def test_k8s006_a_route_whose_controller_authenticates_is_not_exposure():
    route = Ingress(
        "alpha", "nb", services=("nb",), kind="HTTPProxy", auth="virtualhost.authorization"
    )
    assert run_checks(world(OPEN, route), ["K8S-006"]) == []


# What Istio's policies on Kubeflow's gateway were read to do (inventory/sources/istio_auth.py).
GATEWAY_AUTH = (
    "AuthorizationPolicy istio-system/istio-ingressgateway-require-jwt: DENY of requests "
    "without a valid JWT (on Gateway kubeflow/kubeflow-gateway (pods of "
    "istio-system/istio-ingressgateway))"
)
NO_GATEWAY_AUTH = (
    "none: nothing authenticates on Gateway kubeflow/kubeflow-gateway (pods of "
    "istio-system/istio-ingressgateway); AuthorizationPolicy alpha/ns-owner-access-istio allows "
    "a request header any client sets (kubeflow-userid)"
)


def kubeflow_route(auth):
    return Ingress(
        "alpha",
        "notebook-alpha-nb",
        services=("nb",),
        kind="VirtualService",
        auth=auth,
        gateways=("kubeflow/kubeflow-gateway",),
    )


def test_k8s006_kubeflow_notebook_behind_its_authenticating_gateway_is_the_design():
    # Kubeflow's notebook controller publishes each notebook with a VirtualService on the
    # Kubeflow gateway; where the gateway authenticates, that route is no finding. Another
    # route to it skips that gateway.
    vs = kubeflow_route(GATEWAY_AUTH)
    assert run_checks(world(KUBEFLOW, vs), ["K8S-006"]) == []
    other = Ingress("alpha", "direct", services=("nb",), kind="HTTPProxy")
    (draft,) = run_checks(world(KUBEFLOW, vs, other), ["K8S-006"])
    assert [i["name"] for i in draft.evidence["containers"][0]["ingresses"]] == ["direct"]


def test_k8s006_kubeflow_notebook_behind_a_gateway_that_authenticates_nothing_is_exposed():
    # Without the gateway's authentication the profile's header check is a header anyone
    # sends: the notebook serves code to the internet.
    (draft,) = run_checks(world(KUBEFLOW, kubeflow_route(NO_GATEWAY_AUTH)), ["K8S-006"])
    entry = draft.evidence["containers"][0]
    assert "verdict" not in entry
    assert entry["ingresses"][0]["gateways"] == ["kubeflow/kubeflow-gateway"]
    assert entry["reachable_through"] == [
        "VirtualService notebook-alpha-nb on kubeflow/kubeflow-gateway"
    ]
    assert entry["route_authentication"] == [f"VirtualService notebook-alpha-nb: {NO_GATEWAY_AUTH}"]
    assert "is unknown" not in draft.title


def test_k8s006_kubeflow_notebook_whose_gateway_policies_were_not_read_is_unknown():
    route = kubeflow_route("unknown: Istio's AuthorizationPolicies were not read")
    (draft,) = run_checks(world(KUBEFLOW, route), ["K8S-006"])
    assert draft.evidence["containers"][0]["verdict"] == "unknown"
    assert "whether the route authenticates is unknown" in draft.title


SIDECAR = "networking.istio.io/Sidecar"


@pytest.mark.parametrize(
    ("namespace", "verdict"), [("alpha", "unknown"), ("beta", "not restricted")]
)
def test_k8s007_an_istio_registry_only_sidecar_makes_egress_unknown(namespace, verdict):
    sidecar = NetworkPolicy(namespace, "egress", selects_all_pods=False, engine=SIDECAR)
    w = inputs(
        pods=(pod("alpha", gpu={"nvidia.com/gpu": 1}),),
        tenants=(ALPHA,),
        network_policies=(sidecar,),
    )
    (draft,) = run_checks(w, ["K8S-007"])
    assert draft.evidence["verdict"] == verdict
    if verdict == "unknown":
        assert draft.evidence["unevaluated_policies"] == [f"{SIDECAR} alpha/egress"]


def test_k8s006_a_route_whose_istio_authentication_was_not_read_is_unknown():
    route = Ingress(
        "alpha",
        "nb",
        services=("nb",),
        kind="VirtualService",
        auth="unknown: RequestAuthentication istio-system/jwt not evaluated",
    )
    (draft,) = run_checks(world(OPEN, route), ["K8S-006"])
    assert draft.evidence["containers"][0]["verdict"] == "unknown"
    assert draft.evidence["containers"][0]["route_authentication"] == [
        "VirtualService nb: unknown: RequestAuthentication istio-system/jwt not evaluated"
    ]
    assert "whether the route authenticates is unknown" in draft.title
