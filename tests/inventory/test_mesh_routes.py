"""Routes of meshes and ingress controllers with their own API (inventory/sources/mesh_routes.py)
read through normalise. Objects written here after each project's documented shapes."""

from __future__ import annotations

import pytest

from inventory.sources.normalise import normalise


def _obj(api_version, kind, spec, status=None):
    obj = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "r", "namespace": "team-a"},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def vs(gateways, *hosts):
    routes = [{"route": [{"destination": {"host": h}}]} for h in hosts]
    spec = {"hosts": ["nb.example.com"], "http": routes}
    if gateways is not None:
        spec["gateways"] = gateways
    return _obj("networking.istio.io/v1", "VirtualService", spec)


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(
            vs(["istio-system/public"], "nb", "other.team-b.svc.cluster.local", "api.example.org"),
            # Istio's policies not in the snapshot: what authenticates it is unknown.
            (
                "VirtualService",
                ("nb",),
                ("team-b/other",),
                "unknown: Istio's AuthorizationPolicies were not read (none in this sync)",
            ),
            id="istio-gateway",
        ),
        # Sidecars only (no gateways, or the reserved `mesh`): nothing from outside.
        pytest.param(vs(None, "nb"), ("VirtualService", (), (), ""), id="istio-mesh-default"),
        pytest.param(vs(["mesh"], "nb"), ("VirtualService", (), (), ""), id="istio-mesh"),
        pytest.param(
            _obj(
                "projectcontour.io/v1",
                "HTTPProxy",
                {
                    "virtualhost": {"fqdn": "nb.example.com"},
                    "routes": [{"services": [{"name": "nb", "port": 8888}]}],
                },
            ),
            ("HTTPProxy", ("nb",), (), ""),
            id="contour-root",
        ),
        pytest.param(
            _obj(
                "projectcontour.io/v1",
                "HTTPProxy",
                {
                    "virtualhost": {
                        "fqdn": "nb.example.com",
                        "authorization": {"extensionRef": {"name": "oidc", "namespace": "auth"}},
                    },
                    "routes": [{"services": [{"name": "nb", "port": 8888}]}],
                },
            ),
            ("HTTPProxy", ("nb",), (), "virtualhost.authorization"),
            id="contour-ext-auth",
        ),
        pytest.param(
            _obj(
                "projectcontour.io/v1",
                "HTTPProxy",
                {"routes": [{"services": [{"name": "nb", "port": 8888}]}]},
                status={"currentStatus": "orphaned"},
            ),
            ("HTTPProxy", (), (), ""),
            id="contour-orphaned",
        ),
        pytest.param(
            _obj(
                "getambassador.io/v3alpha1",
                "Mapping",
                {"hostname": "*", "prefix": "/nb/", "service": "http://nb.team-b:8888"},
            ),
            ("Mapping", (), ("team-b/nb",), ""),
            id="emissary",
        ),
        pytest.param(
            _obj("getambassador.io/v2", "Mapping", {"prefix": "/nb/", "service": "nb:8888"}),
            ("Mapping", ("nb",), (), ""),
            id="ambassador-v2",
        ),
        pytest.param(
            _obj(
                "k8s.nginx.org/v1",
                "VirtualServer",
                {
                    "host": "nb.example.com",
                    "upstreams": [{"name": "nb", "service": "nb", "port": 8888}],
                    "routes": [{"path": "/", "action": {"pass": "nb"}}],
                },
            ),
            ("VirtualServer", ("nb",), (), ""),
            id="nginx-inc",
        ),
        pytest.param(
            _obj(
                "k8s.nginx.org/v1",
                "VirtualServer",
                {
                    "host": "nb.example.com",
                    "policies": [{"name": "jwt-policy"}],
                    "upstreams": [{"name": "nb", "service": "nb", "port": 8888}],
                },
            ),
            ("VirtualServer", ("nb",), (), "unknown: Policy jwt-policy not evaluated"),
            id="nginx-inc-policy",
        ),
        pytest.param(
            _obj(
                "projectcontour.io/v1",
                "HTTPProxy",
                {
                    "virtualhost": {
                        "fqdn": "nb.example.com",
                        "jwtProviders": [{"name": "idp", "default": True, "issuer": "x"}],
                    },
                    "routes": [{"services": [{"name": "nb", "port": 8888}]}],
                },
            ),
            ("HTTPProxy", ("nb",), (), "virtualhost.jwtProviders"),
            id="contour-jwt",
        ),
        pytest.param(
            _obj(
                "configuration.konghq.com/v1beta1",
                "TCPIngress",
                {"rules": [{"port": 9000, "backend": {"serviceName": "nb", "servicePort": 8888}}]},
            ),
            ("TCPIngress", ("nb",), (), ""),
            id="kong-tcp",
        ),
    ],
)
def test_mesh_routes_are_read_as_ingresses(obj, expected):
    (route,) = normalise([obj]).ingresses
    assert (route.kind, route.services, route.remote_services, route.auth) == expected


def test_a_same_named_kind_of_another_group_is_not_a_route():
    other = {
        "apiVersion": "example.com/v1",
        "kind": "Mapping",
        "metadata": {"name": "m"},
        "spec": {"service": "nb"},
    }
    assert normalise([other]).ingresses == ()


@pytest.mark.parametrize(("mode", "kept"), [("REGISTRY_ONLY", True), ("ALLOW_ANY", False)])
def test_only_an_istio_sidecar_limiting_egress_is_kept(mode, kept):
    sidecar = _obj(
        "networking.istio.io/v1beta1", "Sidecar", {"outboundTrafficPolicy": {"mode": mode}}
    )
    engines = [p.engine for p in normalise([sidecar]).network_policies]
    assert engines == (["networking.istio.io/Sidecar"] if kept else [])


def _policy(kind, namespace, spec):
    return {
        "apiVersion": "security.istio.io/v1",
        "kind": kind,
        "metadata": {"name": "auth", "namespace": namespace},
        "spec": spec,
    }


GATEWAY = {"matchLabels": {"istio": "ingressgateway"}}
OAUTH2 = {
    "selector": GATEWAY,
    "action": "CUSTOM",
    "provider": {"name": "oauth2-proxy"},
    "rules": [{}],
}
NO_JWT = {
    "selector": GATEWAY,
    "action": "DENY",
    "rules": [{"from": [{"source": {"notRequestPrincipals": ["*"]}}]}],
}
JWT = {"jwtRules": [{"issuer": "https://issuer.example.com"}]}


# The Gateway istio-system/public is not in these snapshots: which pods serve it is unknown, so
# only policies of the whole mesh, or of the Gateway's namespace for a gateway, count
# (tests/inventory/test_istio_gateway_auth.py reads its pods).
@pytest.mark.parametrize(
    ("policies", "auth"),
    [
        ([], "unknown: Istio's AuthorizationPolicies were not read"),
        (
            [_policy("AuthorizationPolicy", "istio-system", OAUTH2)],
            "AuthorizationPolicy istio-system/auth: CUSTOM authorization by oauth2-proxy",
        ),
        (
            [_policy("AuthorizationPolicy", "istio-system", NO_JWT)],
            "AuthorizationPolicy istio-system/auth: DENY of requests without a valid JWT",
        ),
        # A RequestAuthentication alone lets a request without a token through; an ALLOW on
        # request principals, or ext-authz for some paths only, is not evaluated.
        (
            [_policy("RequestAuthentication", "istio-system", {"selector": GATEWAY, **JWT})],
            "unknown: RequestAuthentication istio-system/auth not evaluated",
        ),
        (
            [
                _policy(
                    "AuthorizationPolicy",
                    "istio-system",
                    {**OAUTH2, "rules": [{"to": [{"operation": {"paths": ["/admin"]}}]}]},
                )
            ],
            "unknown: AuthorizationPolicy istio-system/auth not evaluated",
        ),
        (
            [
                _policy(
                    "AuthorizationPolicy",
                    "team-a",
                    {"rules": [{"from": [{"source": {"requestPrincipals": ["*"]}}]}]},
                )
            ],
            "unknown: AuthorizationPolicy team-a/auth not evaluated",
        ),
        # Another tenant's namespace says nothing of this route: nothing authenticates it.
        (
            [_policy("AuthorizationPolicy", "team-z", OAUTH2)],
            "none: nothing authenticates on Gateway istio-system/public",
        ),
    ],
)
def test_istio_authentication_in_front_of_a_virtual_service(policies, auth):
    snapshot = normalise([vs(["istio-system/public"], "nb"), *policies])
    (route,) = snapshot.ingresses
    assert route.auth.startswith(auth)


def test_istio_policies_of_one_name_in_two_namespaces_are_two_objects():
    snapshot = normalise(
        [
            vs(["istio-system/public"], "nb"),
            _policy("AuthorizationPolicy", "team-z", OAUTH2),
            _policy("AuthorizationPolicy", "istio-system", OAUTH2),
        ]
    )
    assert snapshot.warnings == ()
    assert snapshot.ingresses[0].auth.startswith("AuthorizationPolicy istio-system/auth")
