"""Calico policies and tiers, summarised for K8S-007 to evaluate in Calico's order. PURE.

Calico (its policy and tier references): each tier holding a policy that applies to the pod's
egress processes the packet, tiers by `order` (lowest first, unset last; the default tier
1,000,000), policies in a tier by `order` (unset last) then name. The first rule matching the
packet decides: Allow or Deny end it, Pass goes to the next tier; Log goes on. A tier whose
policies match no rule ends in its `defaultAction` (Deny, or Pass since Calico 3.30). A policy
whose `types` holds Egress with no egress rules so denies all egress of the pods it selects.
A Kubernetes NetworkPolicy is a policy of the default tier at order 1000.

What is kept per policy: its selector and namespaceSelector as written (matched against the pod
by posture/rules/k8s/egress_calico.py with calico_selector.py) and each egress rule as
"action:reach", where reach says which packets to an internet address it matches:
- "all": every one (no destination, or nets 0.0.0.0/0 or ::/0 or wider than a /8; a protocol
  alone such as TCP still opens every port of it, as for a NetworkPolicy);
- "some": to any internet address but only some ports, ICMP, an HTTP match;
- "none": only named peers (a selector, namespaceSelector, service account, service, domain;
  a selector picking a network set of the internet reads as its nets: calico_sets.py)
  or specific nets (private ranges, or named public addresses): an allow-list, as a
  NetworkPolicy's ipBlock to a given CIDR is;
- "unknown": a source match (which of the selected pods sends) or a field not read.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from inventory.sources.calico_selector import parse_selector
from inventory.sources.calico_sets import NetSet
from inventory.sources.egress_ports import calico_ports, merge
from inventory.sources.raw import dicts, mapping, str_tuple, text

DEFAULT_TIER = "default"
DEFAULT_TIER_ORDER = 1_000_000.0
# Protocols for which "no ports" means every port of a protocol carrying internet traffic.
PORTED = {"tcp", "udp", "sctp", "6", "17", "132", "udplite", "136"}
RULE_KEYS = {"action", "protocol", "notProtocol", "icmp", "notICMP", "ipVersion", "source"}
RULE_KEYS |= {"destination", "http", "metadata"}
NAMED_PEERS = ("selector", "namespaceSelector", "serviceAccounts", "services", "domains")
DESTINATION_KEYS = {"nets", "notNets", "notSelector", "ports", "notPorts", *NAMED_PEERS}


def calico_tier(obj: dict[str, Any]) -> str:
    return text(mapping(obj.get("spec")).get("tier"), "") or DEFAULT_TIER


def calico_order(obj: dict[str, Any]) -> float | None:
    """The policy's (or tier's) `order`, lower first; None when unset: evaluated last."""
    order = mapping(obj.get("spec")).get("order")
    if isinstance(order, bool) or not isinstance(order, int | float):
        return None
    return float(order)


def calico_applies_to_egress(obj: dict[str, Any]) -> bool:
    """Its `types` name Egress, or (unset) it has egress rules. A doNotTrack or preDNAT
    policy applies to host endpoints only, never to a pod."""
    spec = mapping(obj.get("spec"))
    if spec.get("doNotTrack") is True or spec.get("preDNAT") is True:
        return False
    types = {t.lower() for t in str_tuple(spec.get("types"))}
    return "egress" in types if types else bool(dicts(spec.get("egress")))


def calico_steps(
    obj: dict[str, Any], sets: Sequence[NetSet] = (), namespace: str = ""
) -> tuple[str, ...]:
    """Its egress rules in order as "action:reach" (module docstring); `sets` the network sets
    a destination selector may pick (calico_sets.py), `namespace` the policy's ("" global)."""
    return tuple(
        f"{(text(rule.get('action'), '') or '').lower()}:{_reach(rule, sets, namespace)}"
        for rule in dicts(mapping(obj.get("spec")).get("egress"))
    )


def calico_internet_ports(
    obj: dict[str, Any], sets: Sequence[NetSet] = (), namespace: str = ""
) -> tuple[str, ...]:
    """The ports of its Allow rules reaching every internet address on some ports only
    (reach "some" by their destination ports: egress_ports.py)."""
    return merge(
        *(
            ports
            for rule in dicts(mapping(obj.get("spec")).get("egress"))
            if (text(rule.get("action"), "") or "").lower() == "allow"
            and _reach(rule, sets, namespace) == "some"
            and (ports := calico_ports(rule))
        )
    )


def calico_selectors(obj: dict[str, Any]) -> tuple[str, str]:
    """(selector, namespaceSelector) as written; an empty selector is all() (kept so, as ""
    means a policy stored before selectors were kept). A serviceAccountSelector is not read."""
    spec = mapping(obj.get("spec"))
    selector = (text(spec.get("selector"), "") or "").strip() or "all()"
    accounts = (text(spec.get("serviceAccountSelector"), "") or "").strip()
    if accounts:
        # Pods chosen by their service account's labels too, which the snapshot does not
        # hold: kept in a form the selector parser refuses, so the pod's egress is unknown.
        selector = f"({selector}) && serviceAccountSelector({accounts})"
    return selector, (text(spec.get("namespaceSelector"), "") or "").strip()


def tier_end(obj: dict[str, Any]) -> tuple[str, ...]:
    """A Tier's end as one step matching every packet: its defaultAction, Deny unless Pass."""
    action = (text(mapping(obj.get("spec")).get("defaultAction"), "") or "Deny").lower()
    return (f"{'pass' if action == 'pass' else 'deny'}:all",)


def _reach(rule: dict[str, Any], sets: Sequence[NetSet] = (), namespace: str = "") -> str:
    if set(rule) - RULE_KEYS or mapping(rule.get("source")):
        return "unknown"
    destination = mapping(rule.get("destination"))
    if set(destination) - DESTINATION_KEYS:
        return "unknown"
    nets = str_tuple(destination.get("nets"))
    if any(destination.get(key) for key in NAMED_PEERS):
        picked = _set_nets(destination, sets, namespace)
        if picked is None:
            return "unknown"
        others = set(k for k in NAMED_PEERS if destination.get(k)) - {"selector"}
        if nets or others - {"namespaceSelector"} or not any(_wide(n) for n in picked):
            return "none"
        nets = picked  # a network set of the internet: read as its nets
    if nets and not any(_wide(n) for n in nets):
        return "none"
    if any(_wide(n) and _prefix(n) == 0 for n in str_tuple(destination.get("notNets"))):
        return "none"
    protocol = str(rule.get("protocol", "")).lower()
    narrowed = (
        calico_ports(rule) is not None  # ports given, other than 1:65535
        or (bool(protocol) and protocol not in PORTED)
        or bool(rule.get("icmp"))
        or bool(rule.get("http"))
    )
    return "some" if narrowed else "all"


def _set_nets(
    destination: dict[str, Any], sets: Sequence[NetSet], namespace: str
) -> tuple[str, ...] | None:
    """The nets of the network sets a destination selector picks (calico_sets.py); None when
    sets exist but which it picks cannot be told (a selector not parsed, a set of the internet
    in a namespace whose labels are not in the snapshot)."""
    selector = (text(destination.get("selector"), "") or "").strip()
    if not selector or not sets:
        return ()
    chosen = parse_selector(selector)
    if chosen is None:
        return None
    scope = (text(destination.get("namespaceSelector"), "") or "").strip()
    if scope == "global()":
        candidates = [s for s in sets if not s.namespace]
    elif scope:
        # The NetworkSets of the namespaces it selects, matched on their labels (Calico's
        # network set reference); a set of the internet in a namespace whose labels the
        # snapshot lacks, or a namespaceSelector not parsed, leaves the rule unknown.
        picks = parse_selector(scope)
        candidates = []
        for netset in (s for s in sets if s.namespace and chosen(s.labels)):
            if picks is None or netset.namespace_labels is None:
                if any(_wide(n) for n in netset.nets):
                    return None
            elif picks(netset.namespace_labels):
                candidates.append(netset)
    elif namespace:
        candidates = [s for s in sets if s.namespace == namespace]
    else:
        candidates = list(sets)
    return tuple(n for s in candidates if chosen(s.labels) for n in s.nets)


def _prefix(net: str) -> int | None:
    try:
        return ipaddress.ip_network(net.strip(), strict=False).prefixlen
    except ValueError:
        return None


def _wide(net: str) -> bool:
    """A range holding much of the internet: /0 to /7 (0.0.0.0/0 and ::/0 above all). A net
    that is not read counts as wide, so that it never hides an opening."""
    prefix = _prefix(net)
    return prefix is None or prefix < 8
