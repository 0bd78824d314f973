"""What one Istio AuthorizationPolicy or EnvoyFilter does to a request from outside the mesh
(istio_auth.py decides a route's authentication from them). PURE.

Istio evaluates CUSTOM, then DENY, then ALLOW policies: a request is refused by a CUSTOM
authorizer that says no or by a matching DENY; then, if any ALLOW policy selects the workload,
it passes only when one of their rules matches it (Istio's AuthorizationPolicy reference).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from inventory.sources.raw import dicts, dig, mapping, str_tuple, text

# A `when` condition on a request header (any client writes its own headers).
HEADER_KEY = re.compile(r"request\.headers\[([^\]]+)\]")
# Source fields a request forwarded by a gateway satisfies by the gateway's own identity (its
# service account, its namespace): anything else (request principals, IP blocks) is about
# the client and is not evaluated.
IDENTITY_FIELDS = frozenset({"principals", "namespaces", "notPrincipals", "notNamespaces"})


def action_of(policy: dict[str, Any]) -> str:
    return (text(dig(policy, "spec").get("action"), "") or "ALLOW").upper()


def authenticates(policy: dict[str, Any]) -> str:
    """How the policy authenticates every request of the workloads it applies to, "" if it
    does not:

    - action CUSTOM (an external authorizer such as oauth2-proxy) with no `from` or `when`
      narrowing its rules to some requests;
    - action DENY with a rule `from.source.notRequestPrincipals: ["*"]` and nothing else
      narrowing it: every request without a valid JWT is refused.

    A rule's `to` may except paths (`notPaths` alone): the login endpoints an authenticating
    gateway must leave open (Kubeflow's /dex/* and /oauth2/*). Those are said, as "but ...";
    any other `to` covers only some requests and is not counted.
    """
    spec = dig(policy, "spec")
    action = action_of(policy)
    rules = dicts(spec.get("rules"))
    if not rules or any(r.get("when") for r in rules):
        return ""  # no rule matches nothing; a `when` covers only some requests
    excepted = _excepted_paths(rules)
    if excepted is None:
        return ""
    but = f" (but paths {', '.join(excepted)})" if excepted else ""
    if action == "CUSTOM" and all(not r.get("from") for r in rules):
        provider = text(mapping(spec.get("provider")).get("name"), "") or "external"
        return f"CUSTOM authorization by {provider}{but}"
    if action == "DENY" and any(
        "*" in str_tuple(dig(src, "source").get("notRequestPrincipals"))
        and set(dig(src, "source")) == {"notRequestPrincipals"}
        for r in rules
        for src in dicts(r.get("from"))
    ):
        return f"DENY of requests without a valid JWT{but}"
    return ""


def authorizes_anonymous(policy: dict[str, Any]) -> str:
    """A CUSTOM policy sending every request without an Authorization header to its
    authorizer (Kubeflow's oauth2-proxy: `when: request.headers[authorization] notValues
    ["*"]`), "" for any other. It authenticates only beside a policy that refuses requests
    whose header carries no valid token (a DENY without a JWT): alone, any header passes."""
    spec = dig(policy, "spec")
    rules = dicts(spec.get("rules"))
    if action_of(policy) != "CUSTOM" or len(rules) != 1 or rules[0].get("from"):
        return ""
    conditions = dicts(rules[0].get("when"))
    header = [
        c
        for c in conditions
        if (text(c.get("key"), "") or "").lower() == "request.headers[authorization]"
        and str_tuple(c.get("notValues")) == ("*",)
        and not c.get("values")
    ]
    excepted = _excepted_paths(rules)
    if len(conditions) != 1 or not header or excepted is None:
        return ""
    provider = text(mapping(spec.get("provider")).get("name"), "") or "external"
    but = f" (but paths {', '.join(excepted)})" if excepted else ""
    return f"CUSTOM authorization by {provider} of requests without an Authorization header{but}"


def _excepted_paths(rules: list[dict[str, Any]]) -> list[str] | None:
    """The paths the rules leave out (`to.operation.notPaths`), None where a `to` narrows
    them otherwise (methods, hosts, ports, paths: only some requests)."""
    excepted: set[str] = set()
    for rule in rules:
        for to in dicts(rule.get("to")):
            operation = dig(to, "operation")
            if set(operation) != {"notPaths"}:
                return None
            excepted.update(p for p in str_tuple(operation.get("notPaths")) if p)
    return sorted(excepted)


def ext_authz(envoy_filter: dict[str, Any]) -> str:
    """An EnvoyFilter inserting Envoy's external authorization filter (Kubeflow's authservice
    before Kubeflow 1.8: `envoy.filters.http.ext_authz`, once `envoy.ext_authz`), "" for any
    other patch."""
    for patch in dicts(dig(envoy_filter, "spec").get("configPatches")):
        if (text(patch.get("applyTo"), "") or "") != "HTTP_FILTER":
            continue
        change = dig(patch, "patch")
        if (text(change.get("operation"), "") or "").upper() == "REMOVE":
            continue
        value = dig(change, "value")
        typed = text(dig(value, "typed_config").get("@type"), "") or ""
        name = text(value.get("name"), "") or ""
        if "ext_authz" in name or "ext_authz" in typed:
            return f"Envoy external authorization ({name or typed})"
    return ""


def open_rule(
    rule: dict[str, Any], identities: Iterable[tuple[str, str]] | None, fixed: Iterable[str]
) -> str | None:
    """How any client's request forwarded by the gateway matches this ALLOW rule, or None
    where it may not (or that cannot be told). `identities`: the gateway pods' (namespace,
    service account), None where its pods are not known; `fixed`: the headers the route sets
    or removes itself (a client cannot choose those). A rule narrowed by `to` allows only some
    requests: not open."""
    if rule.get("to"):
        return None
    sources = [dig(entry, "source") for entry in dicts(rule.get("from"))]
    if sources and not any(_admits(src, identities) for src in sources):
        return None
    headers = []
    fixed = {h.lower() for h in fixed}
    for condition in dicts(rule.get("when")):
        found = HEADER_KEY.fullmatch(text(condition.get("key"), "") or "")
        if not found or found.group(1).lower() in fixed:
            return None  # the request's identity, address or claims: not the client's to choose
        headers.append(found.group(1))
    if headers:
        return f"a request header any client sets ({', '.join(sorted(set(headers)))})"
    return "every request" if not sources else "every request the gateway forwards"


def _admits(source: dict[str, Any], identities: Iterable[tuple[str, str]] | None) -> bool:
    """The gateway's own identity (mutual TLS to the sidecar) satisfies every field of the
    source: only fields about that identity are evaluated."""
    if identities is None or not source or set(source) - IDENTITY_FIELDS:
        return False
    found = list(identities)

    def any_matches(field: str, value_of: Any) -> bool:
        return any(
            _matches(pattern, value_of(pattern, ns, sa))
            for pattern in str_tuple(source.get(field))
            for ns, sa in found
        )

    def principal(pattern: str, ns: str, sa: str) -> str:
        # The trust domain (cluster.local by default) as the pattern writes it.
        domain = pattern.partition("/ns/")[0] if "/ns/" in pattern else "cluster.local"
        return f"{domain}/ns/{ns}/sa/{sa}"

    def namespace(_: str, ns: str, __: str) -> str:
        return ns

    return (
        ("principals" not in source or any_matches("principals", principal))
        and ("namespaces" not in source or any_matches("namespaces", namespace))
        and not any_matches("notPrincipals", principal)
        and not any_matches("notNamespaces", namespace)
    )


def _matches(pattern: str, value: str) -> bool:
    """Istio's string match: exact, a prefix ("abc*"), a suffix ("*abc") or anything ("*")."""
    if pattern == "*":
        return True
    if pattern.endswith("*"):
        return value.startswith(pattern[:-1])
    if pattern.startswith("*"):
        return value.endswith(pattern[1:])
    return pattern == value
