"""Network policies of a CNI's own API (Cilium, Calico, Antrea, AdminNetworkPolicy, OVN-Kubernetes
and OpenShift egress firewalls, GKE FQDNNetworkPolicy). PURE.

gpuposture evaluates `networking.k8s.io/v1` NetworkPolicy; Calico's policies and tiers in
Calico's order (cni_calico.py: selectors, rules, tier order and end); and of the others only
a Cilium rule denying egress to the world (cilium_world_deny; on some ports only:
_with_port_deny, egress_denied_ports), a Cilium rule limiting egress
to named hosts or in-cluster peers (cni_allows.cilium_limits_egress), and the Cilium and
AdminNetworkPolicy rules that open egress to the world whatever a NetworkPolicy says
(cni_allows.py). A cluster may restrict egress with the others, so they are kept by name and
kind (not their rules): K8S-007 then says that it cannot tell whether a GPU pod's egress is
restricted rather than stating that nothing restricts it; unless the Cilium policy is read as
unable to restrict a pod's egress (cilium_egress_subjects: no rule acting at egress, or only
host policies' rules selecting nodes). Which object is which is told by
its API group: Calico's namespaced kind is also called `NetworkPolicy`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from inventory.snapshot import NetworkPolicy
from inventory.sources.cni_allows import (
    admin_world_allow,
    calico_selection,
    calico_world_allow,
    cilium_allows_world,
    cilium_denied_ports,
    cilium_deny_read,
    cilium_internet_ports,
    cilium_limits_egress,
)
from inventory.sources.cni_calico import (
    calico_applies_to_egress,
    calico_internet_ports,
    calico_order,
    calico_selectors,
    calico_steps,
    calico_tier,
    tier_end,
)
from inventory.sources.egress_ports import cilium_ports, merge
from inventory.sources.raw import dicts, mapping, meta, name_of, str_dict, str_tuple, text

# (API group, kind) -> namespaced?
CNI_POLICY_KINDS: dict[tuple[str, str], bool] = {
    ("cilium.io", "CiliumNetworkPolicy"): True,
    ("cilium.io", "CiliumClusterwideNetworkPolicy"): False,
    ("crd.projectcalico.org", "NetworkPolicy"): True,
    ("projectcalico.org", "NetworkPolicy"): True,
    ("crd.projectcalico.org", "GlobalNetworkPolicy"): False,
    ("projectcalico.org", "GlobalNetworkPolicy"): False,
    # Calico's tiers: their order and end action place the policies above (cni_calico.py).
    ("crd.projectcalico.org", "Tier"): False,
    ("projectcalico.org", "Tier"): False,
    ("crd.antrea.io", "NetworkPolicy"): True,
    ("crd.antrea.io", "ClusterNetworkPolicy"): False,
    ("policy.networking.k8s.io", "AdminNetworkPolicy"): False,
    ("policy.networking.k8s.io", "BaselineAdminNetworkPolicy"): False,
    # Its successor in the same group (v1alpha2), one kind for both tiers.
    ("policy.networking.k8s.io", "ClusterNetworkPolicy"): False,
    # Namespaced egress firewalls: OVN-Kubernetes (OpenShift 4's default network) and
    # OpenShift SDN deny or allow destinations by CIDR or DNS name for the whole namespace.
    ("k8s.ovn.org", "EgressFirewall"): True,
    ("network.openshift.io", "EgressNetworkPolicy"): True,
    # GKE Dataplane V2's egress allow-list by domain name.
    ("networking.gke.io", "FQDNNetworkPolicy"): True,
    # Istio: a Sidecar whose outboundTrafficPolicy is REGISTRY_ONLY lets the proxied pods it
    # selects reach only known services (sidecar_limits_egress); other Sidecars are not kept.
    ("networking.istio.io", "Sidecar"): True,
}


def cni_policy_kind(obj: dict[str, Any]) -> str | None:
    """ "group/Kind" when the object is a CNI's own network policy, else None."""
    api_version = text(obj.get("apiVersion"), "") or ""
    key = (api_version.rpartition("/")[0], text(obj.get("kind"), "") or "")
    if key == ("networking.istio.io", "Sidecar") and not sidecar_limits_egress(obj):
        return None
    return f"{key[0]}/{key[1]}" if key in CNI_POLICY_KINDS else None


def sidecar_limits_egress(obj: dict[str, Any]) -> bool:
    """An Istio Sidecar with `outboundTrafficPolicy.mode: REGISTRY_ONLY`: its proxies pass
    only traffic to services in the mesh's registry. Whether a pod runs the proxy, and what
    the registry holds, is not read: its effect is unknown, not "none"."""
    policy = mapping(mapping(obj.get("spec")).get("outboundTrafficPolicy"))
    return (text(policy.get("mode"), "") or "").upper() == "REGISTRY_ONLY"


def cni_policy_namespace(obj: dict[str, Any]) -> str:
    """Its namespace; "" for a cluster-wide kind, whatever stray namespace a manifest gives."""
    group, _, kind = (cni_policy_kind(obj) or "").partition("/")
    if not CNI_POLICY_KINDS.get((group, kind), False):
        return ""
    return text(meta(obj).get("namespace"), "") or ""


def cni_policies_from(obj: dict[str, Any]) -> list[NetworkPolicy]:
    """The policy (cni_policy_from); a Cilium policy whose rules (`spec` and the entries of
    `specs`) select different pods, one per rule with egress, read as if each were a policy of
    its own: Cilium adds up every rule selecting an endpoint, so each rule acts on the pods it
    selects as a one-rule policy would. Each is named after its rule ("name specs[1]"), one
    stored object per rule; a rule not read leaves its pods "unevaluated", not the others."""
    spec = obj.get("spec")
    labelled = [("spec", spec)] if isinstance(spec, dict) else []
    labelled += [(f"specs[{i}]", r) for i, r in enumerate(_list(obj.get("specs")))]
    rules = [
        (where, r)
        for where, r in labelled
        if isinstance(r, dict) and (dicts(r.get("egress")) or dicts(r.get("egressDeny")))
    ]
    whole = cni_policy_from(obj)
    if not whole.engine.startswith("cilium.io/") or len(rules) < 2:
        return [whole]
    if len({repr(mapping(r.get("endpointSelector"))) for _, r in rules}) == 1:
        return [whole]  # the same pods: read as one policy, as before
    single = {k: v for k, v in obj.items() if k not in ("spec", "specs")}
    return [
        replace(cni_policy_from({**single, "spec": rule}), name=f"{whole.name} {where}")
        for where, rule in rules
    ]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def cni_policy_from(obj: dict[str, Any]) -> NetworkPolicy:
    """The policy by name, kind and namespace ("" for a cluster-wide one). Its rules are not
    read, so it selects no pod here and restricts nothing by itself, but for a Cilium rule
    denying egress to the world (cilium_world_deny) and a Cilium, Calico or
    AdminNetworkPolicy rule opening it (cni_allows.py: egress_allows_all)."""
    policy = NetworkPolicy(
        namespace=cni_policy_namespace(obj),
        name=name_of(obj),
        selects_all_pods=False,
        engine=cni_policy_kind(obj) or "",
    )
    if policy.engine.startswith("cilium.io/"):
        policy = replace(policy, egress_subjects=cilium_egress_subjects(obj))
        deny = cilium_world_deny(obj)
        if deny is not None:
            return replace(_selecting(policy, deny), egress_denies_world=True)
        return _with_port_deny(obj, _rules_read(obj, policy))
    return _rules_read(obj, policy)


def cilium_egress_subjects(obj: dict[str, Any]) -> str:
    """Whose egress the Cilium policy's rules (spec, specs) can restrict (egress_subjects):
    "pods" where a rule acting at egress selects endpoints, "nodes" where only rules selecting
    nodes (nodeSelector: host policies) do, "none" where no rule acts at egress. A rule holds
    one of endpointSelector and nodeSelector; it acts at egress where it has an egress or
    egressDeny entry (empty or omitted, "this rule does not apply at egress": Cilium's Rule)
    or asks for egress default deny (enableDefaultDeny.egress: true, which holds without rules).
    A rule with neither selector is read as one of pods: it is not known to spare them."""
    acting = [r for r in _cilium_rules(obj) if _acts_at_egress(r)]
    if not acting:
        return "none"
    if all("nodeSelector" in r and "endpointSelector" not in r for r in acting):
        return "nodes"
    return "pods"


def _acts_at_egress(rule: dict[str, Any]) -> bool:
    default_deny = mapping(rule.get("enableDefaultDeny")).get("egress")
    return bool(dicts(rule.get("egress")) or dicts(rule.get("egressDeny"))) or default_deny is True


def _rules_read(obj: dict[str, Any], policy: NetworkPolicy) -> NetworkPolicy:
    """The policy with what is read of its rules (cni_policy_from)."""
    if policy.engine.endswith("/Tier"):
        # Not a policy: the tier's order and end, one step matching every packet.
        return replace(
            policy, tier=policy.name, order=calico_order(obj), egress_steps=tier_end(obj)
        )
    if policy.engine.partition("/")[0] in CALICO_GROUPS:
        policy = _calico_placed(obj, policy)
    allow = _world_allow(obj, policy)
    if allow is not None:
        # A rule opening the internet to the pods it selects, which no NetworkPolicy takes
        # back (inventory/sources/cni_allows.py): K8S-007 reads it as an allow-all rule.
        return replace(_selecting(policy, allow), policy_types=("Egress",), egress_allows_all=True)
    if policy.engine.startswith("cilium.io/"):
        limited = _cilium_limited(obj)
        if limited is not None:
            # Egress only to an allow-list: an egress restriction like a NetworkPolicy's,
            # which a NetworkPolicy (or Cilium rule) allowing all would still undo.
            ports = merge(*(cilium_internet_ports(r) for r in _cilium_rules(obj)))
            return replace(
                _selecting(policy, limited), policy_types=("Egress",), internet_ports=ports
            )
    return policy


def _with_port_deny(obj: dict[str, Any], policy: NetworkPolicy) -> NetworkPolicy:
    """The Cilium policy with the ports its rule's egressDeny to the world limited by toPorts
    denies (egress_denied_ports): those ports only, so the pods' internet egress on others
    stays as the allows leave it (Cilium's deny policy docs). Read where one rule has such a
    deny, every egressDeny's effect is known (cilium_deny_read), and its egress rules are read
    for the same pods or it has none; else the policy is left as it was (not evaluated)."""
    rules = _cilium_rules(obj)
    picked = [r for r in rules if cilium_denied_ports(r)]
    denies = [e for r in rules for e in dicts(r.get("egressDeny"))]
    if len(picked) != 1 or not all(cilium_deny_read(e) for e in denies):
        return policy
    selector = _rule_selector(obj, picked[0])
    if selector is None:
        return policy
    if "Egress" in policy.policy_types:  # its egress rules read: for the same pods only
        if (policy.pod_selector, policy.match_expressions) != selector:
            return policy
        return replace(policy, egress_denied_ports=cilium_denied_ports(picked[0]))
    if any(dicts(r.get("egress")) for r in rules):
        return policy  # egress rules not read: the policy stays not evaluated
    return replace(_selecting(policy, selector), egress_denied_ports=cilium_denied_ports(picked[0]))


def _cilium_limited(
    obj: dict[str, Any],
) -> tuple[dict[str, str], tuple[dict[str, Any], ...]] | None:
    """The pods the policy's egress rules (spec and each of specs) put in default deny with
    an allow-list only (cilium_limits_egress): every rule with egress must be such a rule, and
    select the same pods (one selector is kept; rules for other pods are split: cni_policies_from);
    else None (not evaluated). Rules without
    egress (ingress, egressDeny) open nothing and are passed over."""
    with_egress = [r for r in _cilium_rules(obj) if dicts(r.get("egress"))]
    if not with_egress or not all(cilium_limits_egress(r) for r in with_egress):
        return None
    selectors = [_rule_selector(obj, r) for r in with_egress]
    if selectors[0] is None or any(s != selectors[0] for s in selectors):
        return None
    return selectors[0]


CALICO_GROUPS = ("projectcalico.org", "crd.projectcalico.org")
# The kinds whose objects may decide a GPU pod's egress to the internet (K8S-007), labelled as
# a sync labels them ("group/Kind"): the policies above and Calico's network sets (the nets a
# rule's destination selector picks: calico_sets.py). A live list of one refused leaves the
# pods' egress unknown. Istio's Sidecar is not one: it limits only what goes through the proxy.
EGRESS_CONTROL_KINDS = frozenset(
    {f"{group}/{kind}" for group, kind in CNI_POLICY_KINDS if group != "networking.istio.io"}
    | {f"{group}/{kind}" for group in CALICO_GROUPS for kind in ("GlobalNetworkSet", "NetworkSet")}
)
# Of them, those whose objects only ever restrict egress, never allow what a NetworkPolicy
# denies: OVN-Kubernetes' and OpenShift SDN's egress firewalls, the baseline admin policy
# (it acts only where no NetworkPolicy selects the pod), and Calico's network sets (nets for
# the selectors of policies that were read). Refused, they leave a restricted pod restricted.
RESTRICT_ONLY_KINDS = frozenset(
    {
        "k8s.ovn.org/EgressFirewall",
        "network.openshift.io/EgressNetworkPolicy",
        "policy.networking.k8s.io/BaselineAdminNetworkPolicy",
    }
    | {f"{group}/{kind}" for group in CALICO_GROUPS for kind in ("GlobalNetworkSet", "NetworkSet")}
)


def _calico_placed(obj: dict[str, Any], policy: NetworkPolicy) -> NetworkPolicy:
    """A Calico policy's tier, order, selectors as written and egress rules as "action:reach"
    (cni_calico.py), which K8S-007 evaluates in Calico's order; pod_selector holds its selector
    where it is of `==` and has() terms only (for the record)."""
    selector, namespaces = calico_selectors(obj)
    placed = replace(
        policy,
        tier=calico_tier(obj),
        order=calico_order(obj),
        policy_types=("Egress",) if calico_applies_to_egress(obj) else (),
        selector_expr=selector,
        namespace_selector_expr=namespaces if not policy.namespace else "",
        egress_steps=calico_steps(obj),
        internet_ports=calico_internet_ports(obj),
    )
    selection = calico_selection(obj, policy.namespace)
    if selection is None:
        return placed
    return _selecting(placed, selection)


def _selecting(
    policy: NetworkPolicy, selector: tuple[dict[str, str], tuple[dict[str, Any], ...]]
) -> NetworkPolicy:
    """The policy selecting the pods of (matchLabels, matchExpressions); all when both empty."""
    labels, expressions = selector
    return replace(
        policy,
        pod_selector=labels,
        match_expressions=expressions,
        selects_all_pods=not labels and not expressions,
    )


def _world_allow(
    obj: dict[str, Any], policy: NetworkPolicy
) -> tuple[dict[str, str], tuple[dict[str, Any], ...]] | None:
    group, _, kind = policy.engine.partition("/")
    if group == "cilium.io":
        return _cilium_selector(obj, cilium_allows_world)
    if group in CALICO_GROUPS:
        return calico_world_allow(obj, policy.namespace)
    if group == "policy.networking.k8s.io" and kind != "BaselineAdminNetworkPolicy":
        return admin_world_allow(obj)
    return None


WORLD_ENTITIES = ("world", "all")
# Cilium writes Kubernetes labels with a source prefix, or none (any source).
LABEL_SOURCES = ("k8s:", "any:")
NAMESPACE_LABEL = "io.kubernetes.pod.namespace"


def cilium_world_deny(
    obj: dict[str, Any],
) -> tuple[dict[str, str], tuple[dict[str, Any], ...]] | None:
    """The pod selector (matchLabels, matchExpressions) of the policy's rule that denies egress
    to the world on every port, when exactly one rule does and its endpointSelector uses only
    pod labels (and, cluster-wide, the namespace label); else None (not evaluated)."""
    return _cilium_selector(
        obj, lambda rule: any(_denies_world(e) for e in dicts(rule.get("egressDeny")))
    )


def _cilium_selector(
    obj: dict[str, Any], chosen: Callable[[dict[str, Any]], bool]
) -> tuple[dict[str, str], tuple[dict[str, Any], ...]] | None:
    """The endpointSelector of the one rule (spec, or an entry of specs) `chosen` picks, as
    pod labels; None when not exactly one rule is picked or its selector is not of pods."""
    picked = [r for r in _cilium_rules(obj) if chosen(r)]
    if len(picked) != 1:
        return None
    return _rule_selector(obj, picked[0])


def _rule_selector(
    obj: dict[str, Any], rule: dict[str, Any]
) -> tuple[dict[str, str], tuple[dict[str, Any], ...]] | None:
    """A rule's endpointSelector as pod labels; None when it has none or not of pods."""
    if "endpointSelector" not in rule:
        return None
    selector = mapping(rule.get("endpointSelector"))
    labels = {_label(k): v for k, v in str_dict(selector.get("matchLabels")).items()}
    expressions = tuple(
        {
            "key": _label(text(e.get("key"), "") or ""),
            "operator": text(e.get("operator"), "") or "",
            "values": list(str_tuple(e.get("values"))),
        }
        for e in dicts(selector.get("matchExpressions"))
    )
    keys = set(labels) | {e["key"] for e in expressions}
    if any(k.startswith("io.cilium.") or (":" in k) for k in keys):
        return None  # a service-account or other reserved label: not a pod label we have
    namespace = labels.pop(NAMESPACE_LABEL, None)
    if expressions and any(e["key"] == NAMESPACE_LABEL for e in expressions):
        return None
    if namespace is not None:
        if cni_policy_namespace(obj) and namespace != cni_policy_namespace(obj):
            return None
        labels[NAMESPACE_LABEL] = namespace  # kept: egress.py matches it against the pod's
    return labels, expressions


def _cilium_rules(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Its rules: `spec`, and the entries of `specs`."""
    spec = obj.get("spec")
    return ([spec] if isinstance(spec, dict) else []) + dicts(obj.get("specs"))


def _denies_world(entry: dict[str, Any]) -> bool:
    entities = {str(e).lower() for e in str_tuple(entry.get("toEntities"))}
    # Every port: no toPorts, or one matching every port (port "0", none given).
    return bool(entities & set(WORLD_ENTITIES)) and cilium_ports(entry) is None


def _label(key: str) -> str:
    for source in LABEL_SOURCES:
        if key.startswith(source):
            return key[len(source) :]
    return key
