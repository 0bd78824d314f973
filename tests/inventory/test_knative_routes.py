"""Knative Serving's routing read through normalise (inventory/sources/knative.py): a revision's
public Service selects the revision's pods; Kourier's routes are Knative's own Ingress objects;
queue-proxy's ports are kept. Objects as Knative Serving and net-kourier write them."""

from __future__ import annotations

from inventory.env_seal import literal_env
from inventory.sources.normalise import normalise

REV = "llm-chat-predictor-00001"


def _obj(api_version, kind, name, spec, **metadata):
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": "team-a", **metadata},
        "spec": spec,
    }


def test_a_revisions_public_service_selects_the_revisions_pods():
    owner = {"apiVersion": "networking.internal.knative.dev/v1alpha1", "kind": "ServerlessService"}
    public = _obj(
        "v1",
        "Service",
        REV,
        {"ports": [{"name": "http", "port": 80, "targetPort": 8012}]},
        labels={
            "serving.knative.dev/revision": REV,
            "networking.internal.knative.dev/serviceType": "Public",
        },
        ownerReferences=[{**owner, "name": REV, "uid": "u1", "controller": True}],
    )
    # Any other Service without a selector keeps its hand-made endpoints: it selects nothing.
    other = _obj("v1", "Service", "by-hand", {"ports": [{"port": 80}]})
    services = {s.name: s.selector for s in normalise([public, other]).services}
    assert services == {REV: {"serving.knative.dev/revision": REV}, "by-hand": {}}


def kingress(ingress_class, *rules):
    return _obj(
        "networking.internal.knative.dev/v1alpha1",
        "Ingress",
        "llm-chat-predictor",
        {"rules": list(rules)},
        annotations={"networking.knative.dev/ingress.class": ingress_class},
    )


def rule(visibility, host, service):
    split = {"serviceName": service, "serviceNamespace": "team-a", "servicePort": 80}
    paths = [{"splits": [split]}]
    return {"hosts": [host], "visibility": visibility, "http": {"paths": paths}}


def test_kourier_routes_are_its_kingress_rules_for_outside():
    external = rule("ExternalIP", "llm.example.com", REV)
    local = rule("ClusterLocal", "llm.team-a.svc.cluster.local", "internal-only")
    (route,) = normalise(
        [kingress("kourier.ingress.networking.knative.dev", external, local)]
    ).ingresses
    assert (route.kind, route.hosts, route.services, route.backend_ports, route.auth) == (
        "KIngress",
        ("llm.example.com",),
        (REV,),
        (f"{REV}:80",),
        "",
    )


def test_a_kingress_of_a_class_read_through_its_own_objects_is_not_a_route():
    # net-istio writes VirtualServices, net-contour HTTPProxies: those are read instead.
    external = rule("ExternalIP", "llm.example.com", REV)
    for ingress_class in (
        "istio.ingress.networking.knative.dev",
        "contour.ingress.networking.knative.dev",
    ):
        assert normalise([kingress(ingress_class, external)]).ingresses == ()


def test_kourier_external_authorization_is_read_from_its_config():
    external = rule("ExternalIP", "llm.example.com", REV)
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "config-kourier", "namespace": "knative-serving"},
        "data": {"extauthz-host": "ext-authz.auth:9000"},
    }
    (route,) = normalise(
        [kingress("kourier.ingress.networking.knative.dev", external), config]
    ).ingresses
    assert route.auth == (
        "net-kourier external authorization (knative-serving/config-kourier "
        "extauthz-host=ext-authz.auth:9000)"
    )


def test_queue_proxy_ports_are_kept():
    # Port numbers, no secret: K8S-006 follows the queue-proxy to the user container by them.
    for name in ("USER_PORT", "QUEUE_SERVING_PORT", "QUEUE_SERVING_TLS_PORT"):
        assert literal_env(name, "8080").value == "8080"
