"""The routes of meshes and ingress controllers with an API of their own, read as Ingresses
(K8S-006): Istio VirtualService, Contour HTTPProxy, Emissary-ingress (Ambassador) Mapping,
NGINX Inc VirtualServer and VirtualServerRoute, Kong TCPIngress. PURE.

Each names the Services it sends traffic to; only those are followed (a ServiceEntry, an
external host or an upstream by address is not a pod of the cluster). Authentication these
controllers may put in front (Istio's AuthorizationPolicy, NGINX Inc's Policy objects,
Emissary's AuthService) lives in other objects and is not read here: Emissary's is not
counted, as for Traefik's middlewares; an NGINX Inc route naming Policy objects says its
authentication is unknown; Contour's external authorization or default JWT provider on the
virtual host counts (istio_auth.py reads Istio's).
Kong routes with Ingress and Gateway API objects, read as such (exposure.py).
"""

from __future__ import annotations

from typing import Any

from inventory.snapshot import Ingress
from inventory.sources.raw import dicts, dig, name_of, str_tuple, text

ISTIO = "networking.istio.io"
CONTOUR = "projectcontour.io"
EMISSARY = "getambassador.io"
NGINX_INC = "k8s.nginx.org"
KONG = "configuration.konghq.com"
# (API group, kind) of each route read here; all namespaced.
MESH_ROUTE_KINDS: tuple[tuple[str, str], ...] = (
    (ISTIO, "VirtualService"),
    (CONTOUR, "HTTPProxy"),
    (EMISSARY, "Mapping"),
    (NGINX_INC, "VirtualServer"),
    (NGINX_INC, "VirtualServerRoute"),
    (KONG, "TCPIngress"),
)
CLUSTER_DOMAIN = ".svc.cluster.local"


def mesh_route_kind(obj: dict[str, Any]) -> tuple[str, str] | None:
    api_version = text(obj.get("apiVersion"), "") or ""
    key = (api_version.rpartition("/")[0], text(obj.get("kind"), "") or "")
    return key if key in MESH_ROUTE_KINDS else None


def mesh_route_of(obj: dict[str, Any], namespace: str) -> Ingress | None:
    """The route as an Ingress (its Services here and in other namespaces); None for any
    other object."""
    key = mesh_route_kind(obj)
    if key is None:
        return None
    spec = dig(obj, "spec")
    hosts: tuple[str, ...] = ()
    auth = ""
    gateways: tuple[str, ...] = ()
    if key[1] == "VirtualService":
        refs, hosts = _istio(spec, namespace), str_tuple(spec.get("hosts"))
        gateways = istio_gateways(spec, namespace)
    elif key[1] == "HTTPProxy":
        refs, hosts, auth = _contour(obj, spec, namespace)
    elif key[1] == "Mapping":
        refs = _emissary(spec, namespace)
        hosts = tuple(h for h in (text(spec.get("hostname")), text(spec.get("host"))) if h)
    elif key[1] == "TCPIngress":
        refs = {
            (namespace, text(dig(rule, "backend").get("serviceName"), "") or "")
            for rule in dicts(spec.get("rules"))
        }
    else:  # NGINX Inc: upstreams name Services of the object's own namespace
        refs = {(namespace, text(u.get("service"), "") or "") for u in dicts(spec.get("upstreams"))}
        hosts = (text(spec.get("host"), "") or "",)
        auth = _nginx_policies(spec)
    refs = {(ns, name) for ns, name in refs if ns and name}
    return Ingress(
        namespace=namespace,
        name=name_of(obj),
        hosts=tuple(sorted(h for h in hosts if h)),
        services=tuple(sorted(name for ns, name in refs if ns == namespace)),
        kind=key[1],
        remote_services=tuple(sorted(f"{ns}/{name}" for ns, name in refs if ns != namespace)),
        auth=auth,
        gateways=gateways,
    )


def istio_gateways(spec: dict[str, Any], namespace: str) -> tuple[str, ...]:
    """The Gateways a VirtualService is bound to, as "namespace/name" (a name alone is one of
    its own namespace's), but the reserved `mesh` (the sidecars, nothing from outside)."""
    named = {g if "/" in g else f"{namespace}/{g}" for g in str_tuple(spec.get("gateways")) if g}
    return tuple(sorted(named - {f"{namespace}/mesh"}))


def _istio(spec: dict[str, Any], namespace: str) -> set[tuple[str, str]]:
    """A VirtualService carries traffic from outside the mesh only when bound to a Gateway
    (`gateways` names one besides the reserved `mesh`, which means the sidecars)."""
    if not istio_gateways(spec, namespace):
        return set()
    destinations = [
        dig(route, "destination")
        for kind in ("http", "tcp", "tls")
        for rule in dicts(spec.get(kind))
        for route in dicts(rule.get("route"))
    ]
    return {_istio_host(text(d.get("host"), "") or "", namespace) for d in destinations}


def _istio_host(host: str, namespace: str) -> tuple[str, str]:
    """A destination host as (namespace, Service): a short name is the VirtualService's own
    namespace's; `name.ns`, `name.ns.svc` and the full cluster name another's; anything else
    (an external or ServiceEntry host) is no Service ("", "")."""
    parts = host.removesuffix(CLUSTER_DOMAIN).removesuffix(".svc").split(".")
    if len(parts) == 1:
        return namespace, parts[0]
    if len(parts) == 2:
        return parts[1], parts[0]
    return "", ""


def _contour(
    obj: dict[str, Any], spec: dict[str, Any], namespace: str
) -> tuple[set[tuple[str, str]], tuple[str, ...], str]:
    """A root HTTPProxy (with a virtualhost) routes from outside; one without only when a
    root includes it, which its status says (currentStatus `valid`, not `orphaned`)."""
    virtualhost = dig(spec, "virtualhost")
    status = text(dig(obj, "status").get("currentStatus"), "") or ""
    if not virtualhost and status != "valid":
        return set(), (), ""
    services = [s for r in dicts(spec.get("routes")) for s in dicts(r.get("services"))]
    services += dicts(dig(spec, "tcpproxy").get("services"))
    refs = {(namespace, text(s.get("name"), "") or "") for s in services}
    fqdn = text(virtualhost.get("fqdn"), "") or ""
    # External authorization on the virtual host covers every route but those that disable
    # it; so does a JWT provider marked default (every route must then carry a valid token).
    routes = dicts(spec.get("routes"))
    authorized = bool(dig(virtualhost, "authorization").get("extensionRef")) and not any(
        dig(r, "authPolicy").get("disabled") is True for r in routes
    )
    jwt = any(p.get("default") is True for p in dicts(virtualhost.get("jwtProviders"))) and not any(
        dig(r, "jwtVerificationPolicy").get("disabled") is True for r in routes
    )
    auth = "virtualhost.authorization" if authorized else "virtualhost.jwtProviders" if jwt else ""
    return refs, (fqdn,), auth


def _nginx_policies(spec: dict[str, Any]) -> str:
    """NGINX Inc's Policy objects (JWT, OIDC, basic auth, API key, or rate limits and access
    lists) are not read: a route naming some may authenticate, which is unknown."""
    named = [*dicts(spec.get("policies"))]
    named += [p for r in dicts(spec.get("routes")) for p in dicts(r.get("policies"))]
    names = sorted({text(p.get("name"), "") or "" for p in named} - {""})
    return f"unknown: Policy {', '.join(names)} not evaluated" if names else ""


def _emissary(spec: dict[str, Any], namespace: str) -> set[tuple[str, str]]:
    """`service` is `[scheme://]name[.namespace][:port]`; without a namespace, the Mapping's."""
    service = text(spec.get("service"), "") or ""
    service = service.partition("://")[2] or service
    host = service.rsplit(":", 1)[0] if ":" in service else service
    host = host.removesuffix(CLUSTER_DOMAIN).removesuffix(".svc")
    parts = host.split(".")
    if len(parts) == 1:
        return {(namespace, parts[0])}
    if len(parts) == 2:
        return {(parts[1], parts[0])}
    return set()  # an external host name or address
