"""CNI policy rules that open egress to the internet for the pods they select, whatever a
Kubernetes NetworkPolicy says (K8S-007). PURE.

Read only where the CNI's own documentation makes the rule win over, or add to, a
NetworkPolicy's restriction:

- Cilium: every policy selecting an endpoint adds its allows, Kubernetes NetworkPolicies
  included (a union); only an egressDeny takes away. An `egress` rule to the `world` (or
  `all`) entity, or to 0.0.0.0/0 or ::/0 by toCIDR/toCIDRSet, or to the FQDN pattern "*"
  (every name), on every port, opens it. A rule whose egress is only to an allow-list (named
  FQDNs, in-cluster peers, narrow CIDRs) restricts it (cilium_limits_egress).
- Calico: an `Allow` rule to every address (no destination, or nets 0.0.0.0/0 or ::/0),
  every protocol and port, of a default-tier policy, unless a Deny or Pass rule of the same
  policy comes first. Kept for the record: K8S-007 evaluates every Calico policy in Calico's
  own order (cni_calico.py, posture/rules/k8s/egress_calico.py), which this cannot.
- AdminNetworkPolicy: an `Allow` is final and is evaluated before any NetworkPolicy; a rule
  to the `networks` 0.0.0.0/0 or ::/0 with no ports opens egress for its subject.
  (BaselineAdminNetworkPolicy comes after NetworkPolicy: it cannot undo one.) Its successor
  ClusterNetworkPolicy (v1alpha2) the same in its Admin tier, where the action is `Accept`.

Each returns the selector of the pods it opens, as (matchLabels, matchExpressions) with the
namespace as the `io.kubernetes.pod.namespace` label where the rule names one; None when no
such rule is found or its selector is not one we can match against a pod's labels.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from inventory.sources.cni_calico import DEFAULT_TIER, calico_tier
from inventory.sources.egress_ports import cilium_ports, merge
from inventory.sources.raw import dicts, mapping, str_dict, str_tuple, text

Selector = tuple[dict[str, str], tuple[dict[str, Any], ...]]
EVERYWHERE = ("0.0.0.0/0", "::/0")
NAMESPACE_LABEL = "io.kubernetes.pod.namespace"
METADATA_NAME = "kubernetes.io/metadata.name"


# --- Cilium -----------------------------------------------------------------------------------


def cilium_allows_world(rule: dict[str, Any]) -> bool:
    """One rule of a CiliumNetworkPolicy has an egress entry opening the internet."""
    return any(_cilium_world(entry) for entry in dicts(rule.get("egress")))


def _cilium_world(entry: dict[str, Any]) -> bool:
    if cilium_ports(entry) is not None:
        return False  # only some ports: a restriction (cilium_internet_ports)
    entities = {str(e).lower() for e in str_tuple(entry.get("toEntities"))}
    cidrs = set(str_tuple(entry.get("toCIDR")))
    cidrs |= {text(c.get("cidr"), "") or "" for c in dicts(entry.get("toCIDRSet"))}
    return (
        bool(entities & {"world", "all"})
        or bool(cidrs & set(EVERYWHERE))
        or any(_any_name(f) for f in dicts(entry.get("toFQDNs")))
    )


def _any_name(fqdn: dict[str, Any]) -> bool:
    """A toFQDNs selector of every name: Cilium documents `matchPattern: "*"` alone as
    matching all names, so the pod may reach any address it can resolve: the internet."""
    return (text(fqdn.get("matchPattern"), "") or "").strip() == "*"


# Cilium entities inside the cluster: egress to them is not egress to the internet.
CLUSTER_ENTITIES = frozenset(
    {"cluster", "host", "remote-node", "kube-apiserver", "health", "ingress", "init"}
)
# Peers of an egress entry other than toFQDNs, toEndpoints, toEntities and the CIDRs, each
# naming destinations (in-cluster services and nodes, a cloud provider's security groups).
NAMED_PEERS = frozenset({"toServices", "toNodes", "toGroups"})


def cilium_limits_egress(rule: dict[str, Any]) -> bool:
    """One rule of a CiliumNetworkPolicy restricting egress to an allow-list: its egress
    entries all name their peers, none the internet as a whole: `toFQDNs` of names or patterns
    narrower than "*", in-cluster endpoints (toEndpoints, `{}` every endpoint of the namespace
    or, cluster-wide, the cluster), cluster entities, CIDRs narrower than a /8 (private ranges
    or given addresses), services, nodes, cloud groups. A rule with egress puts its endpoints
    in Cilium's default deny for egress (unless `enableDefaultDeny.egress: false`, which only
    adds), so the internet is reachable only through that list. An entry limited to some ports
    (toPorts) restricts whatever its peers, `world` and 0.0.0.0/0 included, and so does one of
    ports alone: the internet is then reachable on those ports only (cilium_internet_ports),
    which the project counts as a control (egress_ports.py)."""
    if mapping(rule.get("enableDefaultDeny")).get("egress") is False:
        return False
    entries = dicts(rule.get("egress"))
    return bool(entries) and all(_named_or_internal(e) for e in entries)


def cilium_denied_ports(rule: dict[str, Any]) -> tuple[str, ...]:
    """The ports on which one rule's egressDeny entries deny the world (`world` or `all`
    limited by toPorts); () where none does."""
    return merge(
        *(
            ports
            for entry in dicts(rule.get("egressDeny"))
            if {str(e).lower() for e in str_tuple(entry.get("toEntities"))} & {"world", "all"}
            and (ports := cilium_ports(entry))
        )
    )


def cilium_deny_read(entry: dict[str, Any]) -> bool:
    """An egressDeny entry whose effect on internet egress is known: limited to some ports
    (it takes at most those away), or to named or in-cluster peers and narrow CIDRs (none of
    the internet as a whole). A deny of a wide range on every port is not read."""
    return _named_or_internal(entry)


def _named_or_internal(entry: dict[str, Any]) -> bool:
    if cilium_ports(entry):
        return True  # at most the internet on some ports
    peers = set(entry) - {"toPorts", "icmps", "authentication"}
    return bool(peers) and all(_named_peer(key, entry.get(key)) for key in peers)


def _named_peer(key: str, value: Any) -> bool:
    if key == "toFQDNs":
        names = [n for n in value if isinstance(n, dict)] if isinstance(value, list) else []
        return bool(names) and not any(
            set((text(f.get("matchPattern"), "") or "").strip()) <= {"*", "."}
            for f in names
            if "matchPattern" in f
        )
    if key == "toEndpoints":
        # `reserved:world` (or another reserved identity) as an endpoint label is no pod.
        selectors = [s for s in value if isinstance(s, dict)] if isinstance(value, list) else []
        keys = [str(k) for sel in selectors for k in mapping(sel.get("matchLabels"))] + [
            text(e.get("key"), "") or ""
            for sel in selectors
            for e in dicts(sel.get("matchExpressions"))
        ]
        return bool(selectors) and not any(k.startswith("reserved:") for k in keys)
    if key == "toEntities":
        entities = {str(e).lower() for e in str_tuple(value)}
        return bool(entities) and entities <= CLUSTER_ENTITIES
    if key == "toCIDR":
        cidrs = str_tuple(value)
        return bool(cidrs) and all(_narrow(c) for c in cidrs)
    if key == "toCIDRSet":
        sets = [c for c in value if isinstance(c, dict)] if isinstance(value, list) else []
        # A cidrGroupRef (a CiliumCIDRGroup) is not read.
        return bool(sets) and all(_narrow(text(c.get("cidr"), "") or "") for c in sets)
    return key in NAMED_PEERS and bool(value)


def cilium_internet_ports(rule: dict[str, Any]) -> tuple[str, ...]:
    """The ports on which one rule's egress entries reach the internet, where they do only on
    some ports: entries to `world` or `all`, a CIDR wider than a /8, every FQDN, or of ports
    alone (no peer: every address)."""
    return merge(
        *(
            ports
            for entry in dicts(rule.get("egress"))
            if (ports := cilium_ports(entry)) and _internet_peers(entry)
        )
    )


def _internet_peers(entry: dict[str, Any]) -> bool:
    peers = set(entry) - {"toPorts", "icmps", "authentication"}
    if not peers:
        return True
    entities = {str(e).lower() for e in str_tuple(entry.get("toEntities"))}
    cidrs = list(str_tuple(entry.get("toCIDR")))
    cidrs += [text(c.get("cidr"), "") or "" for c in dicts(entry.get("toCIDRSet"))]
    return (
        bool(entities & {"world", "all"})
        or any(not _narrow(c) for c in cidrs)
        or ("toFQDNs" in entry and not _named_peer("toFQDNs", entry.get("toFQDNs")))
    )


def _narrow(cidr: str) -> bool:
    """A CIDR of a /8 or narrower: not the internet as a whole."""
    try:
        return ipaddress.ip_network(cidr.strip(), strict=False).prefixlen >= 8
    except ValueError:
        return False


# --- Calico -----------------------------------------------------------------------------------


def calico_world_allow(obj: dict[str, Any], namespace: str) -> Selector | None:
    """The pods a Calico NetworkPolicy (namespace given) or GlobalNetworkPolicy ("") opens
    to the internet (module docstring); None when it does not, or cannot be told. Whether
    another policy's Deny or Pass comes first is for the pod to tell (egress_calico.py)."""
    spec = mapping(obj.get("spec"))
    if calico_tier(obj) != DEFAULT_TIER or not _calico_egress(spec):
        return None
    if spec.get("doNotTrack") is True or spec.get("preDNAT") is True:
        return None
    if not _calico_opens(dicts(spec.get("egress"))):
        return None
    return calico_selection(obj, namespace)


def _calico_egress(spec: dict[str, Any]) -> bool:
    """The policy applies to egress: `types` names it, or (unset) it has egress rules."""
    types = {t.lower() for t in str_tuple(spec.get("types"))}
    return "egress" in types if types else bool(dicts(spec.get("egress")))


def calico_selection(obj: dict[str, Any], namespace: str) -> Selector | None:
    """The pods a Calico policy selects (the namespace as a label), None when its selector is
    not one we read."""
    spec = mapping(obj.get("spec"))
    selector = _calico_selector(text(spec.get("selector"), "") or "")
    if selector is None:
        return None
    labels, expressions = selector
    if namespace:
        labels.pop("projectcalico.org/namespace", None)  # only its own namespace anyway
        labels[NAMESPACE_LABEL] = namespace
    else:
        if "projectcalico.org/namespace" in labels:
            labels[NAMESPACE_LABEL] = labels.pop("projectcalico.org/namespace")
        scope = _calico_selector(text(spec.get("namespaceSelector"), "") or "")
        if scope is None or scope[1] or set(scope[0]) - {"projectcalico.org/name"}:
            return None  # namespaces chosen by their labels: not evaluated
        if "projectcalico.org/name" in scope[0]:
            labels[NAMESPACE_LABEL] = scope[0]["projectcalico.org/name"]
    return labels, expressions


def _calico_opens(rules: list[dict[str, Any]]) -> bool:
    for rule in rules:
        action = (text(rule.get("action"), "") or "").lower()
        if action in ("deny", "pass"):
            return False  # it may take away before the allow: not evaluated
        if action == "allow" and _calico_everywhere(rule):
            return True
    return False


def _calico_everywhere(rule: dict[str, Any]) -> bool:
    if set(rule) - {"action", "destination", "metadata", "ipVersion"}:
        return False  # a protocol, a source, an HTTP match: narrower than every port
    destination = mapping(rule.get("destination"))
    if set(destination) - {"nets"}:
        return False
    nets = str_tuple(destination.get("nets"))
    return not nets or bool(set(nets) & set(EVERYWHERE))


_TERM = re.compile(r"""^\s*([\w./-]+)\s*==\s*(?:'([^']*)'|"([^"]*)")\s*$""")
_HAS = re.compile(r"^\s*has\(\s*([\w./-]+)\s*\)\s*$")


def _calico_selector(selector: str) -> tuple[dict[str, str], tuple[dict[str, Any], ...]] | None:
    """A Calico selector of `==` and `has()` terms joined by `&&` (or `all()`, or empty);
    None for anything else (||, !, in, not...)."""
    labels: dict[str, str] = {}
    expressions: list[dict[str, Any]] = []
    if not selector.strip() or selector.strip() == "all()":
        return labels, ()
    for term in selector.split("&&"):
        equal, has = _TERM.match(term), _HAS.match(term)
        if equal:
            labels[equal.group(1)] = equal.group(2) if equal.group(2) is not None else equal[3]
        elif has:
            expressions.append({"key": has.group(1), "operator": "Exists", "values": []})
        else:
            return None
    return labels, tuple(expressions)


# --- AdminNetworkPolicy -----------------------------------------------------------------------


def admin_world_allow(obj: dict[str, Any]) -> Selector | None:
    """The pods an AdminNetworkPolicy `Allow` rule (its successor ClusterNetworkPolicy's
    `Accept` in the Admin tier) opens to the internet; None when none does or its subject
    picks namespaces by labels other than their name."""
    spec = mapping(obj.get("spec"))
    allow = "Allow"
    if obj.get("kind") == "ClusterNetworkPolicy":
        if (text(spec.get("tier"), "") or "") != "Admin":
            return None  # the Baseline tier comes after NetworkPolicy
        allow = "Accept"
    opens = any(
        (text(rule.get("action"), "") or "") == allow
        and not dicts(rule.get("ports"))
        and any(
            set(str_tuple(peer.get("networks"))) & set(EVERYWHERE) for peer in dicts(rule.get("to"))
        )
        for rule in dicts(spec.get("egress"))
    )
    if not opens:
        return None
    subject = mapping(spec.get("subject"))
    if "namespaces" in subject:
        namespaces, pods = mapping(subject.get("namespaces")), {}
    elif "pods" in subject:
        chosen = mapping(subject.get("pods"))
        namespaces, pods = (
            mapping(chosen.get("namespaceSelector")),
            mapping(chosen.get("podSelector")),
        )
    else:
        return None
    if dicts(namespaces.get("matchExpressions")) or set(str_dict(namespaces.get("matchLabels"))) - {
        METADATA_NAME
    }:
        return None
    labels = dict(str_dict(pods.get("matchLabels")))
    expressions = tuple(
        {
            "key": text(e.get("key"), "") or "",
            "operator": text(e.get("operator"), "") or "",
            "values": list(str_tuple(e.get("values"))),
        }
        for e in dicts(pods.get("matchExpressions"))
    )
    name = str_dict(namespaces.get("matchLabels")).get(METADATA_NAME)
    if name is not None:
        labels[NAMESPACE_LABEL] = name
    return labels, expressions
