"""Istio authentication in front of a VirtualService's route (K8S-006). PURE.

A RequestAuthentication alone authenticates nothing: Istio rejects a request with an invalid
token but lets one with no token through; an AuthorizationPolicy decides. Two shapes of it
are read as authenticating every request of a gateway or the whole mesh:

- action CUSTOM (an external authorizer such as oauth2-proxy) with no `to`/`when` narrowing
  its rules to some requests;
- action DENY with a rule `from.source.notRequestPrincipals: ["*"]` and nothing narrowing
  it: every request without a valid JWT is refused.

They count where they apply to the route's gateway: in Istio's root namespace with no
selector (the whole mesh), or in the gateway's namespace (a VirtualService names its gateways
`namespace/name`). Any other AuthorizationPolicy or RequestAuthentication there, or in the
namespace of the Services it routes to, may authenticate (an ALLOW on requestPrincipals, a
sidecar's policy): the route's authentication is then unknown, said as "unknown: ...".
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from inventory.snapshot import Ingress
from inventory.sources.raw import dicts, dig, mapping, meta, name_of, str_dict, str_tuple, text

GROUP = "security.istio.io"
KINDS = ("AuthorizationPolicy", "RequestAuthentication")
ROOT_NAMESPACE = "istio-system"  # meshConfig.rootNamespace's default
UNKNOWN = "unknown: "


def is_istio_auth(obj: dict[str, Any]) -> bool:
    api_version = text(obj.get("apiVersion"), "") or ""
    return obj.get("kind") in KINDS and api_version.rpartition("/")[0] == GROUP


def authenticated_routes(
    routes: list[Ingress],
    written: dict[tuple[str, str], dict[str, Any]],
    policies: list[dict[str, Any]],
) -> list[Ingress]:
    """The routes, each VirtualService (its object as `written`, by namespace and name) with
    what Istio puts in front of it as its `auth`."""
    found = []
    for route in routes:
        obj = written.get((route.namespace, route.name))
        if route.kind == "VirtualService" and obj is not None:
            route = replace(route, auth=route_auth(obj, route.namespace, policies))
        found.append(route)
    return found


def route_auth(route: dict[str, Any], namespace: str, policies: list[dict[str, Any]]) -> str:
    """What authenticates a VirtualService's requests (module docstring): "" for nothing
    seen, the policy that does, or "unknown: " and the policies not evaluated."""
    spec = dig(route, "spec")
    gateways = [g for g in str_tuple(spec.get("gateways")) if g and g != "mesh"]
    gateway_namespaces = {g.partition("/")[0] if "/" in g else namespace for g in gateways}
    backends = {namespace}  # where its Services (and their sidecars) are
    unread: list[str] = []
    for policy in policies:
        where = text(meta(policy).get("namespace"), "") or ""
        ref = f"{policy.get('kind')} {where}/{name_of(policy)}"
        selector = _selector(policy)
        mesh_wide = where == ROOT_NAMESPACE and not selector
        # In the gateway's namespace: for every workload there, or one labelled as a gateway
        # (istio: ingressgateway, app: istio-ingressgateway, a Gateway API gateway's name).
        on_gateway = where in gateway_namespaces and (
            not selector or any("gateway" in f"{k}={v}" for k, v in selector.items())
        )
        if (mesh_wide or on_gateway) and policy.get("kind") == KINDS[0]:
            what = _authenticates(policy)
            if what:
                return f"{ref}: {what}"
        if mesh_wide or where in gateway_namespaces | backends | {ROOT_NAMESPACE}:
            unread.append(ref)
    return UNKNOWN + ", ".join(sorted(unread)) + " not evaluated" if unread else ""


def _selector(policy: dict[str, Any]) -> dict[str, str]:
    spec = dig(policy, "spec")
    refs = [*dicts(spec.get("targetRefs")), dig(spec, "targetRef")]
    names = {f"targetRef={text(r.get('kind'))}/{text(r.get('name'))}": "" for r in refs if r}
    return str_dict(dig(spec, "selector").get("matchLabels")) or names


def _authenticates(policy: dict[str, Any]) -> str:
    spec = dig(policy, "spec")
    action = (text(spec.get("action"), "") or "ALLOW").upper()
    rules = dicts(spec.get("rules"))
    if not rules or any(r.get("to") or r.get("when") for r in rules):
        return ""  # no rule matches nothing; a narrowed rule covers only some requests
    if action == "CUSTOM" and all(not r.get("from") for r in rules):
        provider = text(mapping(spec.get("provider")).get("name"), "") or "external"
        return f"CUSTOM authorization by {provider}"
    if action == "DENY" and any(
        "*" in str_tuple(dig(src, "source").get("notRequestPrincipals"))
        and set(dig(src, "source")) == {"notRequestPrincipals"}
        for r in rules
        for src in dicts(r.get("from"))
    ):
        return "DENY of requests without a valid JWT"
    return ""
