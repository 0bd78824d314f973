"""What authenticates a VirtualService's requests, read from the Istio Gateway's pods and the
policies that apply to them (inventory/sources/istio_auth.py) through normalise. Objects written
after Kubeflow's manifests (common/istio, common/oauth2-proxy, the profile controller's
ns-owner-access-istio policy) and Istio's AuthorizationPolicy reference."""

from __future__ import annotations

import pytest

from inventory.sources.normalise import normalise
from tests.istio_builder import GATEWAY_SA, ingress_gateway_pod, istio_gateway, kube_object

LOGIN_PATHS = {"notPaths": ["/dex/*", "/dex/**", "/oauth2/*"]}
# The notebook controller's Service and pod.
NOTEBOOK = [
    kube_object("v1", "Service", "lab", "team-a", {"selector": {"statefulset": "lab"},
         "ports": [{"name": "http-lab", "port": 80, "targetPort": 8888}]}),
    kube_object("v1", "Pod", "lab-0", "team-a", {"containers": [{"name": "lab", "image": "nb"}]},
         labels={"statefulset": "lab", "notebook-name": "lab"}),
]  # fmt: skip


KUBEFLOW_GATEWAY = istio_gateway(
    "kubeflow-gateway", "kubeflow", servers=[{"hosts": ["*"], "port": {"number": 80}}]
)
NOTEBOOK_ROUTE = kube_object(
    "networking.istio.io/v1",
    "VirtualService",
    "notebook-team-a-lab",
    "team-a",
    {
        "gateways": ["kubeflow/kubeflow-gateway"],
        "hosts": ["*"],
        "http": [
            {
                "match": [{"uri": {"prefix": "/notebook/team-a/lab/"}}],
                "route": [{"destination": {"host": "lab.team-a.svc.cluster.local"}}],
            }
        ],
    },
)


def policy(name, namespace, spec, kind="AuthorizationPolicy"):
    return kube_object("security.istio.io/v1", kind, name, namespace, spec)


ON_GATEWAY = {"matchLabels": {"app": "istio-ingressgateway"}}
OAUTH2_PROXY = policy(
    "istio-ingressgateway-oauth2-proxy",
    "istio-system",
    {
        "action": "CUSTOM",
        "provider": {"name": "oauth2-proxy"},
        "selector": ON_GATEWAY,
        "rules": [
            {
                "to": [{"operation": LOGIN_PATHS}],
                "when": [{"key": "request.headers[authorization]", "notValues": ["*"]}],
            }
        ],
    },
)
REQUIRE_JWT = policy(
    "istio-ingressgateway-require-jwt",
    "istio-system",
    {
        "action": "DENY",
        "selector": ON_GATEWAY,
        "rules": [
            {
                "from": [{"source": {"notRequestPrincipals": ["*"]}}],
                "to": [{"operation": LOGIN_PATHS}],
            }
        ],
    },
)
DEX_JWT = policy(
    "dex-jwt",
    "istio-system",
    {"selector": ON_GATEWAY, "jwtRules": [{"issuer": "https://kf.example.com/dex"}]},
    kind="RequestAuthentication",
)
# The profile controller's policy in every profile namespace: the owner's kubeflow-userid
# header, which Kubeflow's gateway sets from the verified token.
PROFILE = policy(
    "ns-owner-access-istio",
    "team-a",
    {
        "rules": [
            {"when": [{"key": "request.headers[kubeflow-userid]", "values": ["a@example.com"]}]},
            {"from": [{"source": {"namespaces": ["team-a"]}}]},
            {
                "from": [
                    {"source": {"principals": [f"cluster.local/ns/istio-system/sa/{GATEWAY_SA}"]}}
                ],
                "when": [{"key": "request.headers[kubeflow-userid]", "values": ["a@example.com"]}],
            },
        ]
    },
)
KUBEFLOW = [ingress_gateway_pod(), KUBEFLOW_GATEWAY, NOTEBOOK_ROUTE, PROFILE, *NOTEBOOK]


def route_auth(*objects, listed=()):
    (route,) = [i for i in normalise(list(objects), listed=listed).ingresses]
    return route.auth


def test_kubeflow_gateway_with_its_oauth2_proxy_and_jwt_policies_authenticates():
    auth = route_auth(*KUBEFLOW, OAUTH2_PROXY, REQUIRE_JWT, DEX_JWT)
    assert not auth.startswith(("unknown: ", "none: "))
    # The policies that do it, and the gateway and pods they apply to.
    assert (
        "istio-system/istio-ingressgateway-oauth2-proxy: CUSTOM authorization by oauth2-proxy"
        in auth
    )
    assert (
        "istio-system/istio-ingressgateway-require-jwt: DENY of requests without a valid JWT"
        in auth
    )
    assert "but paths /dex/*, /dex/**, /oauth2/*" in auth
    assert "Gateway kubeflow/kubeflow-gateway (pods of istio-system/istio-ingressgateway)" in auth


def test_kubeflow_gateway_without_authentication_leaves_the_profile_header_open():
    # The profile's ALLOW matches a header any client sends when nothing on the gateway
    # authenticates: the route is open, and says why.
    auth = route_auth(*KUBEFLOW)
    assert auth.startswith("none: nothing authenticates on Gateway kubeflow/kubeflow-gateway")
    assert (
        "AuthorizationPolicy team-a/ns-owner-access-istio allows a request header any client "
        "sets (kubeflow-userid)"
    ) in auth


def test_oauth2_proxy_for_requests_without_a_header_alone_is_not_authentication():
    # Kubeflow's CUSTOM policy sends only requests without an Authorization header to
    # oauth2-proxy: any header passes it. Alone it is not evaluated as authenticating.
    auth = route_auth(*KUBEFLOW, OAUTH2_PROXY)
    assert auth.startswith("unknown: AuthorizationPolicy istio-system/istio-ingressgateway-oauth2")


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        # A header the route itself sets is not the client's to choose.
        (
            {"headers": {"request": {"set": {"kubeflow-userid": "nobody"}}}},
            "unknown: AuthorizationPolicy team-a/ns-owner-access-istio not evaluated",
        ),
        ({}, "none: "),
    ],
)
def test_a_header_the_route_sets_is_not_open(extra, expected):
    route = {**NOTEBOOK_ROUTE, "spec": {**NOTEBOOK_ROUTE["spec"]}}
    route["spec"]["http"] = [{**NOTEBOOK_ROUTE["spec"]["http"][0], **extra}]
    auth = route_auth(ingress_gateway_pod(), KUBEFLOW_GATEWAY, route, PROFILE)
    assert auth.startswith(expected)


def test_an_allow_on_request_principals_is_not_evaluated():
    jwt_only = policy(
        "jwt-only", "team-a", {"rules": [{"from": [{"source": {"requestPrincipals": ["*"]}}]}]}
    )
    auth = route_auth(ingress_gateway_pod(), KUBEFLOW_GATEWAY, NOTEBOOK_ROUTE, jwt_only)
    assert auth == "unknown: AuthorizationPolicy team-a/jwt-only not evaluated"


def test_a_policy_selecting_other_workloads_of_the_root_namespace_is_not_the_gateways():
    # In the root namespace a selector matches workloads of every namespace: this one picks
    # istiod, neither the gateway nor the notebook.
    other = policy(
        "istiod-only",
        "istio-system",
        {"action": "DENY", "selector": {"matchLabels": {"app": "istiod"}}, "rules": [{}]},
    )
    assert route_auth(*KUBEFLOW, other).startswith("none: ")


def test_kubeflow_authservice_envoy_filter_authenticates():
    # Kubeflow before 1.8: oidc-authservice inserted as Envoy's ext_authz on the gateway.
    authn = kube_object(
        "networking.istio.io/v1alpha3",
        "EnvoyFilter",
        "authn-filter",
        "istio-system",
        {
            "workloadSelector": {"labels": {"istio": "ingressgateway"}},
            "configPatches": [
                {
                    "applyTo": "HTTP_FILTER",
                    "match": {"context": "GATEWAY"},
                    "patch": {
                        "operation": "INSERT_BEFORE",
                        "value": {"name": "envoy.filters.http.ext_authz"},
                    },
                }
            ],
        },
    )
    auth = route_auth(*KUBEFLOW, authn)
    assert auth.startswith("EnvoyFilter istio-system/authn-filter: Envoy external authorization")


def test_policies_not_read_make_the_route_unknown():
    # No AuthorizationPolicy in a snapshot file: not exported, or none exist; a live list
    # that read the kind to the end found none.
    objects = [ingress_gateway_pod(), KUBEFLOW_GATEWAY, NOTEBOOK_ROUTE]
    assert route_auth(*objects).startswith("unknown: Istio's AuthorizationPolicies were not read")
    live = route_auth(*objects, listed=["security.istio.io/AuthorizationPolicy"])
    assert live.startswith("none: nothing authenticates on Gateway kubeflow/kubeflow-gateway")


def test_a_gateway_not_read_keeps_policies_on_its_pods_unknown():
    # Without the Gateway object its pods are unknown: the root namespace's policies for
    # the gateway's labels are not evaluated, and the route says which Gateway was not read.
    auth = route_auth(ingress_gateway_pod(), NOTEBOOK_ROUTE, PROFILE, OAUTH2_PROXY, REQUIRE_JWT)
    assert auth.startswith("unknown: AuthorizationPolicy istio-system/istio-ingressgateway-")
    assert "Gateway kubeflow/kubeflow-gateway (not read, or selecting no pod" in auth
