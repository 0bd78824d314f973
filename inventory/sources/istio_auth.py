"""Istio authentication in front of a VirtualService's route (K8S-006). PURE.

A VirtualService bound to Gateways is served by the gateway pods each Gateway selects
(istio_gateways.py). Its requests are authenticated where every such gateway has, applying to
all of its pods, an AuthorizationPolicy that refuses unauthenticated requests (istio_rules.py:
CUSTOM by an external authorizer such as oauth2-proxy, or DENY of requests without a valid
JWT), or an EnvoyFilter inserting Envoy's external authorization (Kubeflow's authservice
before 1.8); or where such a policy applies to the Services' pods. A RequestAuthentication
alone authenticates nothing: Istio rejects a request with an invalid token but lets one with
no token through.

Where nothing authenticates, the backend's ALLOW policies are read: a rule any client's
request matches (one on a request header, which any client writes when no gateway sets it:
Kubeflow's profile policy on `kubeflow-userid`) leaves the route open, said as "none: ...".
Any other policy there (an ALLOW on request principals, a DENY for some paths, a
RequestAuthentication, a policy selecting some of the pods) may authenticate: the route's
authentication is then "unknown: ...". So is every route where Istio's policies were not
read at all (none in a snapshot file, or the kind's list refused).

Where a Gateway object was not read (or selects no pod), its pods are unknown: a policy counts
only in Istio's root namespace with no selector (the whole mesh), or in the Gateway's own
namespace for all its workloads or for one labelled as a gateway; other policies in those
namespaces are "not evaluated".
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from inventory.snapshot import Ingress, Pod, Service
from inventory.sources.istio_gateways import (
    ROOT_NAMESPACE,
    GatewayPods,
    applies_to,
    gateway_pods,
    headers_set,
    is_envoy_filter,
)
from inventory.sources.istio_rules import (
    action_of,
    authenticates,
    authorizes_anonymous,
    ext_authz,
    open_rule,
)
from inventory.sources.mesh_routes import istio_gateways
from inventory.sources.raw import dicts, dig, meta, name_of, str_dict, text

GROUP = "security.istio.io"
KINDS = ("AuthorizationPolicy", "RequestAuthentication")
UNKNOWN = "unknown: "
NONE = "none: "  # evaluated: nothing in front of the route authenticates (and why)
# The labels by which a live list names the policy kinds (inventory.sources.kube_kinds).
POLICY_LABELS = tuple(f"{GROUP}/{kind}" for kind in KINDS)


def is_istio_auth(obj: dict[str, Any]) -> bool:
    api_version = text(obj.get("apiVersion"), "") or ""
    return obj.get("kind") in KINDS and api_version.rpartition("/")[0] == GROUP


def may_be_open(auth: str) -> bool:
    """Whether a route with this `auth` may let a stranger through: nothing seen, nothing
    authenticating found, or not known."""
    return not auth or auth.startswith((UNKNOWN, NONE))


@dataclass
class IstioObjects:
    """What a route's authentication is read from: Istio's policies, Gateways and
    EnvoyFilters as written, the pods and Services they select, and whether the policy kinds
    were read at all."""

    policies: list[dict[str, Any]] = field(default_factory=list)
    gateways: list[dict[str, Any]] = field(default_factory=list)
    envoy_filters: list[dict[str, Any]] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)
    policies_read: bool = True


def authenticated_routes(
    routes: list[Ingress], written: dict[tuple[str, str], dict[str, Any]], istio: IstioObjects
) -> list[Ingress]:
    """The routes, each VirtualService (its object as `written`, by namespace and name) with
    what Istio puts in front of it as its `auth`."""
    found = []
    for route in routes:
        obj = written.get((route.namespace, route.name))
        if route.kind == "VirtualService" and obj is not None:
            route = replace(route, auth=route_auth(obj, route, istio))
        found.append(route)
    return found


def route_auth(obj: dict[str, Any], route: Ingress, istio: IstioObjects) -> str:
    """What authenticates a VirtualService's requests (module docstring): the policy that
    does, "none: " and why nothing does, or "unknown: " and what was not evaluated."""
    gateways = istio_gateways(dig(obj, "spec"), route.namespace)
    if not gateways:
        return ""  # the sidecars only: nothing from outside
    if not istio.policies_read:
        return UNKNOWN + "Istio's AuthorizationPolicies were not read (none in this sync)"
    served = gateway_pods(gateways, istio.gateways, istio.pods)
    verdicts = [_gateway(g, istio) for g in served]
    if all(authenticated for authenticated, _ in verdicts):
        policies = dict.fromkeys(what for _, found in verdicts for what in found)
        return f"{'; '.join(policies)} (on {', '.join(g.describe() for g in served)})"
    identities = _identities(served)
    backend_auth, backend_unknown, allows = _backends(route, obj, istio, identities)
    if backend_auth:
        return backend_auth
    unknown = [ref for authenticated, why in verdicts if not authenticated for ref in why]
    unknown += backend_unknown
    if unknown:
        unresolved = [g.describe() for g in served if not g.pods]
        return (
            UNKNOWN
            + ", ".join(sorted(set(unknown)))
            + " not evaluated"
            + (f" ({'; '.join(unresolved)})" if unresolved else "")
        )
    open_gateways = [g.describe() for g, (ok, _) in zip(served, verdicts, strict=True) if not ok]
    reasons = [f"nothing authenticates on {', '.join(open_gateways)}", *allows]
    return NONE + "; ".join(reasons)


def _identities(served: list[GatewayPods]) -> tuple[tuple[str, str], ...] | None:
    """Every gateway pod's identity, None where some gateway's pods are unknown."""
    found: set[tuple[str, str]] = set()
    for gateway in served:
        if gateway.identities is None:
            return None
        found.update(gateway.identities)
    return tuple(sorted(found))


def _ref(obj: dict[str, Any]) -> str:
    return f"{obj.get('kind')} {text(meta(obj).get('namespace'), '') or ''}/{name_of(obj)}"


def _gateway(gateway: GatewayPods, istio: IstioObjects) -> tuple[bool, list[str]]:
    """(True, the policies that authenticate every request on all the gateway's pods), or
    (False, the policies there not evaluated: none means nothing there authenticates)."""
    if not gateway.pods:
        return _gateway_unread(gateway, istio)
    found, beside, unread = [], [], []
    for obj in [*istio.policies, *istio.envoy_filters]:
        applies = applies_to(obj, gateway.pods)
        if applies is False:
            continue
        what = ext_authz(obj) if is_envoy_filter(obj) else _authenticates(obj)
        if what and applies:
            found.append(f"{_ref(obj)}: {what}")
        elif applies and (anonymous := _anonymous(obj)):
            beside.append(f"{_ref(obj)}: {anonymous}")
        # An EnvoyFilter that authorizes nothing is no policy; one that does, on some of the
        # pods only, is not evaluated.
        elif what or not (is_envoy_filter(obj) or _harmless(obj)):
            unread.append(_ref(obj))
    if found:
        return True, beside + found
    return False, unread + beside


def _gateway_unread(gateway: GatewayPods, istio: IstioObjects) -> tuple[bool, list[str]]:
    """A Gateway whose pods are unknown: policies of the whole mesh, or of the Gateway's
    namespace on all its workloads or one labelled as a gateway (istio: ingressgateway,
    app: istio-ingressgateway), count; others there or in the root namespace are not
    evaluated."""
    home = gateway.gateway.partition("/")[0]
    unread = []
    for obj in istio.policies:
        where = text(meta(obj).get("namespace"), "") or ""
        selector = str_dict(dig(obj, "spec", "selector").get("matchLabels"))
        targeted = bool(dig(obj, "spec").get("targetRef") or dig(obj, "spec").get("targetRefs"))
        mesh_wide = where == ROOT_NAMESPACE and not selector and not targeted
        on_gateway = where == home and not targeted
        on_gateway = on_gateway and (
            not selector or any("gateway" in f"{k}={v}" for k, v in selector.items())
        )
        what = _authenticates(obj)
        if (mesh_wide or on_gateway) and what:
            return True, [f"{_ref(obj)}: {what}"]
        if where in (home, ROOT_NAMESPACE) and not _harmless(obj):
            unread.append(_ref(obj))
    return False, unread


def _authenticates(obj: dict[str, Any]) -> str:
    return authenticates(obj) if obj.get("kind") == KINDS[0] else ""


def _anonymous(obj: dict[str, Any]) -> str:
    return authorizes_anonymous(obj) if obj.get("kind") == KINDS[0] else ""


def _harmless(obj: dict[str, Any]) -> bool:
    """A policy on the gateway that lets any client's request through (an AUDIT, an ALLOW
    with a rule any request matches): nothing to evaluate. A client reaching the gateway from
    outside has no mesh identity: a rule `from` a principal or namespace is not its."""
    if obj.get("kind") != KINDS[0]:
        return False  # a RequestAuthentication may feed an ALLOW on request principals
    action = action_of(obj)
    if action == "AUDIT":
        return True
    return action == "ALLOW" and _opening(obj, None, set()) is not None


def _opening(obj: dict[str, Any], identities: Any, fixed: set[str]) -> str | None:
    for rule in dicts(dig(obj, "spec").get("rules")):
        opened = open_rule(rule, identities, fixed)
        if opened is not None:
            return opened
    return None


def _backends(
    route: Ingress, obj: dict[str, Any], istio: IstioObjects, identities: Any
) -> tuple[str, list[str], list[str]]:
    """What applies to the pods of the route's Services, per namespace: (the policy that
    authenticates them, else ""; the policies not evaluated; the ALLOW policies any client's
    request passes, said)."""
    fixed = headers_set(obj)
    refs = {(route.namespace, s) for s in route.services}
    refs |= {(r.partition("/")[0], r.partition("/")[2]) for r in route.remote_services}
    unknown: list[str] = []
    allows: list[str] = []
    for namespace in sorted({ns for ns, _ in refs}):
        pods = tuple(_backend_pods(namespace, {n for ns, n in refs if ns == namespace}, istio))
        opened, closed = [], []
        for policy in istio.policies:
            applies = _applies_to_backend(policy, namespace, pods)
            if applies is False:
                continue
            what = _authenticates(policy)
            if what and applies:
                return f"{_ref(policy)}: {what}", [], []
            action = action_of(policy) if policy.get("kind") == KINDS[0] else ""
            if action == "AUDIT":
                continue
            opening = _opening(policy, identities, fixed) if action == "ALLOW" else None
            if applies and opening is not None:
                opened.append(f"{_ref(policy)} allows {opening}")
            elif action == "ALLOW":
                closed.append(_ref(policy))
            else:
                unknown.append(_ref(policy))
        # One ALLOW rule a request matches lets it through, whatever the other ALLOWs say.
        allows += opened
        unknown += [] if opened else closed
    return "", unknown, allows


def _backend_pods(namespace: str, names: set[str], istio: IstioObjects) -> list[Pod]:
    """The pods the route's Services of `namespace` select ([] where none is known)."""
    selectors = [
        s.selector
        for s in istio.services
        if s.namespace == namespace and s.name in names and s.selector
    ]
    return [
        p
        for p in istio.pods
        if p.namespace == namespace
        and any(all(p.labels.get(k) == v for k, v in sel.items()) for sel in selectors)
    ]


def _applies_to_backend(policy: dict[str, Any], namespace: str, pods: tuple[Pod, ...]) -> Any:
    """applies_to over the backend's pods; where they are unknown, a policy of the namespace
    (or the whole mesh) without a selector applies, one with a selector may (None)."""
    if pods:
        return applies_to(policy, pods)
    where = text(meta(policy).get("namespace"), "") or ""
    if where not in (namespace, ROOT_NAMESPACE):
        return False
    spec = dig(policy, "spec")
    if spec.get("selector") or spec.get("targetRef") or spec.get("targetRefs"):
        return None
    return True
