"""Services, Ingresses and Gateway API routes -> snapshot dataclasses: what can publish a pod
outside the cluster network (K8S-006). PURE."""

from __future__ import annotations

from typing import Any

from inventory.snapshot import Ingress, Service
from inventory.sources.knative import public_revision_selector
from inventory.sources.mesh_routes import mesh_route_of
from inventory.sources.raw import as_int, dicts, dig, meta, name_of, str_dict, str_tuple, text


def service_from(obj: dict[str, Any], namespace: str) -> Service:
    spec = dig(obj, "spec")
    ports: list[int] = []
    targets: list[str] = []
    port_map: list[tuple[str, int, int]] = []
    for port in dicts(spec.get("ports")):
        target = port.get("targetPort")
        # A named targetPort (a string, even "8080") resolves only against a pod's port names;
        # then the service port is the number we can state.
        number = as_int(target) if isinstance(target, int) else as_int(port.get("port"))
        if number is not None:
            ports.append(number)
            if (service_port := as_int(port.get("port"))) is not None:
                port_map.append((text(port.get("name")) or "", service_port, number))
        # targetPort defaults to the service port.
        written = text(target) if target not in (None, "") else text(port.get("port"))
        if written:
            targets.append(written)
    return Service(
        namespace=namespace,
        name=name_of(obj),
        type=text(spec.get("type")) or "ClusterIP",
        # Knative's public revision Service has none: its endpoints are the revision's pods.
        selector=str_dict(spec.get("selector")) or public_revision_selector(obj),
        ports=tuple(ports),
        targets=tuple(targets),
        external_ips=tuple(ip for ip in str_tuple(spec.get("externalIPs")) if ip),
        internal_lb=_internal_lb(obj),
        source_ranges=tuple(r for r in str_tuple(spec.get("loadBalancerSourceRanges")) if r),
        port_map=tuple(port_map),
    )


# Annotations by which each cloud's controller provisions an internal load balancer.
INTERNAL_LB: tuple[tuple[str, str], ...] = (
    ("service.beta.kubernetes.io/aws-load-balancer-internal", "true"),
    ("service.beta.kubernetes.io/aws-load-balancer-scheme", "internal"),
    ("networking.gke.io/load-balancer-type", "internal"),
    ("cloud.google.com/load-balancer-type", "internal"),
    ("service.beta.kubernetes.io/azure-load-balancer-internal", "true"),
    ("service.beta.kubernetes.io/oci-load-balancer-internal", "true"),
    ("service.kubernetes.io/ibm-load-balancer-cloud-provider-ip-type", "private"),
)


def _internal_lb(obj: dict[str, Any]) -> str:
    annotations = str_dict(meta(obj).get("annotations"))
    for key, value in INTERNAL_LB:
        if (annotations.get(key) or "").strip().lower() == value:
            return f"{key}={annotations[key]}"
    return ""


def ingress_from(obj: dict[str, Any], namespace: str) -> Ingress:
    spec = dig(obj, "spec")
    # networking.k8s.io/v1 names `defaultBackend` and `backend.service.name`; the v1beta1 API
    # (and extensions/v1beta1) that clusters before 1.22 served named `backend.serviceName`.
    backends = [dig(spec, "defaultBackend"), dig(spec, "backend")]
    hosts = set()
    for rule in dicts(spec.get("rules")):
        if text(rule.get("host")):
            hosts.add(text(rule.get("host")))
        backends += [dig(path, "backend") for path in dicts(dig(rule, "http").get("paths"))]
    services = {text(dig(b, "service").get("name")) or text(b.get("serviceName")) for b in backends}
    return Ingress(
        namespace=namespace,
        name=name_of(obj),
        ingress_class=text(spec.get("ingressClassName")),
        hosts=tuple(sorted(h for h in hosts if h)),
        services=tuple(sorted(s for s in services if s)),
        auth=ingress_auth(obj),
        backend_ports=tuple(sorted({p for b in backends if (p := _ingress_backend_port(b))})),
    )


def _ingress_backend_port(backend: dict[str, Any]) -> str:
    """ "service:port" of one Ingress backend (v1 `service.port.number` or `.name`, v1beta1
    `servicePort`); "" when it names no Service."""
    service = dig(backend, "service")
    name = text(service.get("name")) or text(backend.get("serviceName"))
    if not name:
        return ""
    port = dig(service, "port")
    written = text(port.get("number")) or text(port.get("name")) or text(backend.get("servicePort"))
    return f"{name}:{written or '*'}"


# Ingress annotations by which the controller authenticates every request itself, and the
# values that mean it does (None: any non-empty value). ingress-nginx external auth (the
# oauth2-proxy pattern) or basic/digest auth, the AWS Load Balancer Controller's Cognito or
# OIDC, NGINX Inc's basic auth and JWT, HAProxy's basic auth. Annotations that only name
# middleware or plugins (Traefik, Kong) do not say whether they authenticate: not counted.
INGRESS_AUTH: tuple[tuple[str, tuple[str, ...] | None], ...] = (
    ("nginx.ingress.kubernetes.io/auth-url", None),
    ("nginx.ingress.kubernetes.io/auth-type", ("basic", "digest")),
    ("alb.ingress.kubernetes.io/auth-type", ("cognito", "oidc")),
    ("nginx.org/basic-auth-secret", None),
    ("nginx.com/jwt-key", None),
    ("haproxy.org/auth-type", ("basic-auth",)),
)


def ingress_auth(obj: dict[str, Any]) -> str:
    annotations = str_dict(meta(obj).get("annotations"))
    for key, values in INGRESS_AUTH:
        value = (annotations.get(key) or "").strip()
        if value and (values is None or value.lower() in values):
            return f"{key}={value}"
    return ""


GATEWAY_GROUP = "gateway.networking.k8s.io"
# TLSRoute and TCPRoute forward connections to the same backendRefs (experimental channel).
ROUTE_KINDS = ("HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute")


def is_route(obj: dict[str, Any]) -> bool:
    api_version = text(obj.get("apiVersion"), "") or ""
    return obj.get("kind") in ROUTE_KINDS and api_version.rpartition("/")[0] == GATEWAY_GROUP


def route_from(obj: dict[str, Any], namespace: str) -> Ingress:
    """A Gateway API route, as an Ingress: the Services it sends traffic to (a backendRef with
    no kind, or kind Service), those of its namespace and those of others apart. A route
    carries traffic from outside only when attached to a Gateway: one with no parentRefs, whose
    parents are all Services (GAMMA: routing inside the mesh), or that every Gateway it names
    has refused (status Accepted False) reaches no Service here."""
    spec = dig(obj, "spec")
    refs = [
        ref
        for rule in dicts(spec.get("rules"))
        for ref in dicts(rule.get("backendRefs"))
        if (text(ref.get("kind")) or "Service") == "Service"
        and (text(ref.get("group")) or "") in ("", "core")
        and text(ref.get("name"))
    ]
    local = {str(text(r.get("name"))) for r in refs if _ref_namespace(r, namespace) == namespace}
    remote = {
        f"{_ref_namespace(r, namespace)}/{text(r.get('name'))}"
        for r in refs
        if _ref_namespace(r, namespace) != namespace
    }
    parents = _route_parents(obj)
    if not parents:
        local, remote = set(), set()
    elif _condition_refused(parents, "ResolvedRefs", "RefNotPermitted"):
        remote = set()  # the route's status says a cross-namespace reference has no grant
    return Ingress(
        namespace=namespace,
        name=name_of(obj),
        hosts=tuple(sorted(h for h in str_tuple(spec.get("hostnames")) if h)),
        services=tuple(sorted(local)),
        kind=str(obj["kind"]),
        remote_services=tuple(sorted(remote)),
        backend_ports=tuple(
            sorted(
                f"{text(r.get('name'))}:{text(r.get('port')) or '*'}"
                for r in refs
                if _ref_namespace(r, namespace) == namespace
            )
        ),
    )


def _ref_namespace(ref: dict[str, Any], namespace: str) -> str:
    return text(ref.get("namespace")) or namespace


def _route_parents(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The route's Gateway parents (a parentRef with no kind is a Gateway) that have not
    refused it, as their status entries (or {} where the status says nothing of them)."""
    gateways = [
        ref
        for ref in dicts(dig(obj, "spec").get("parentRefs"))
        if (text(ref.get("kind")) or "Gateway") != "Service"
    ]
    statuses = {
        (text(dig(p, "parentRef").get("name")), text(dig(p, "parentRef").get("namespace"))): p
        for p in dicts(dig(obj, "status").get("parents"))
    }
    found = []
    for ref in gateways:
        status = statuses.get((text(ref.get("name")), text(ref.get("namespace"))), {})
        if not _condition_refused([status], "Accepted", None):
            found.append(status)
    return found


def _condition_refused(parents: list[dict[str, Any]], kind: str, reason: str | None) -> bool:
    """Some parent's status has condition `kind` False (with `reason`, when one is given)."""
    return any(
        text(c.get("type")) == kind
        and text(c.get("status")) == "False"
        and (reason is None or text(c.get("reason")) == reason)
        for p in parents
        for c in dicts(p.get("conditions"))
    )


OPENSHIFT_ROUTE_GROUP = "route.openshift.io"
# Traefik's own routes (traefik.io, traefik.containo.us before v3): k3s ships Traefik.
TRAEFIK_GROUPS = ("traefik.io", "traefik.containo.us")
TRAEFIK_KINDS = ("IngressRoute", "IngressRouteTCP")


def is_openshift_route(obj: dict[str, Any]) -> bool:
    api_version = text(obj.get("apiVersion"), "") or ""
    return obj.get("kind") == "Route" and api_version.rpartition("/")[0] == OPENSHIFT_ROUTE_GROUP


def is_traefik_route(obj: dict[str, Any]) -> bool:
    api_version = text(obj.get("apiVersion"), "") or ""
    return obj.get("kind") in TRAEFIK_KINDS and api_version.rpartition("/")[0] in TRAEFIK_GROUPS


def traefik_route_from(obj: dict[str, Any], namespace: str) -> Ingress:
    """A Traefik IngressRoute, as an Ingress: the Services its routes name (kind Service or
    none; a TraefikService is Traefik's own load balancer, not followed). Its middlewares may
    or may not authenticate: not counted as authentication."""
    refs = [
        ref
        for route in dicts(dig(obj, "spec").get("routes"))
        for ref in dicts(route.get("services"))
        if (text(ref.get("kind")) or "Service") == "Service" and text(ref.get("name"))
    ]
    local = {str(text(r.get("name"))) for r in refs if _ref_namespace(r, namespace) == namespace}
    remote = {
        f"{_ref_namespace(r, namespace)}/{text(r.get('name'))}"
        for r in refs
        if _ref_namespace(r, namespace) != namespace
    }
    return Ingress(
        namespace=namespace,
        name=name_of(obj),
        services=tuple(sorted(local)),
        kind=str(obj["kind"]),
        remote_services=tuple(sorted(remote)),
    )


def openshift_route_from(obj: dict[str, Any], namespace: str) -> Ingress:
    """An OpenShift Route, as an Ingress: the router publishes its host and sends traffic to
    the Service in `to` and its `alternateBackends` (same namespace)."""
    spec = dig(obj, "spec")
    backends = [dig(spec, "to"), *dicts(spec.get("alternateBackends"))]
    services = {
        text(b.get("name"))
        for b in backends
        if (text(b.get("kind")) or "Service") == "Service" and text(b.get("name"))
    }
    host = text(spec.get("host"))
    # `port.targetPort` narrows the router to one port of the backends' endpoints: a name is a
    # Service port's name (the endpoints' port names are), a number the pod's port the Service
    # targets ("=8888", as routed_ports reads it). None: every port.
    target = text(dig(spec, "port").get("targetPort"))
    port = (f"={target}" if target.isdigit() else target) if target else ""
    return Ingress(
        namespace=namespace,
        name=name_of(obj),
        hosts=(host,) if host else (),
        services=tuple(sorted(s for s in services if s)),
        kind="Route",
        backend_ports=tuple(sorted(f"{s}:{port}" for s in services if s)) if port else (),
    )


# The kinds of every route read here (all namespaced), whatever their API group.
ROUTE_KIND_NAMES = (*ROUTE_KINDS, "Route", *TRAEFIK_KINDS)


def route_of(obj: dict[str, Any], namespace: str) -> Ingress | None:
    """A Gateway API, OpenShift, Traefik or mesh route (mesh_routes.py) read as an Ingress;
    None for anything else."""
    if is_route(obj):
        return route_from(obj, namespace)
    if is_openshift_route(obj):
        return openshift_route_from(obj, namespace)
    if is_traefik_route(obj):
        return traefik_route_from(obj, namespace)
    return mesh_route_of(obj, namespace)  # Istio, Contour, Emissary, NGINX Inc, Kong
