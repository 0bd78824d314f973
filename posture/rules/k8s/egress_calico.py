"""K8S-007: a pod's egress to the internet under Calico's own policies, evaluated in Calico's
order (inventory/sources/cni_calico.py says how the policies were summarised).

Per pod: the Calico policies (and Kubernetes NetworkPolicies, Calico's default tier at order
1000) selecting it for egress are grouped by tier, tiers and policies ordered as Calico does,
and a packet to an internet address is walked through their rules. "open" when an Allow of
every port of the internet is reached (or every tier passes it on, to the namespace's
profile, which allows); "restricted" when a Deny of it (or a tier's end) is reached first,
whatever Allows of some ports or named peers came before (a NetworkPolicy's narrowing counts as
a restriction too); "unknown" when a selector is not parsed, a rule is not read, or tiers
whose order the snapshot lacks would decide.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from inventory.snapshot import NetworkPolicy, Pod
from inventory.sources.calico_selector import parse_selector
from inventory.sources.cni_calico import DEFAULT_TIER, DEFAULT_TIER_ORDER
from inventory.sources.cni_policies import CALICO_GROUPS

OPEN, RESTRICTED, UNKNOWN = "open", "restricted", "unknown"
KNP_ORDER = 1000.0  # where Calico places a Kubernetes NetworkPolicy in the default tier
# Tiers Calico creates with a fixed order (v3.30): AdminNetworkPolicy's before the default
# tier, BaselineAdminNetworkPolicy's after it.
FIXED_TIERS = {
    "adminnetworkpolicy": 1000.0,
    "kube-admin": 1000.0,
    "baselineadminnetworkpolicy": 10_000_000.0,
    "kube-baseline": 10_000_000.0,
}
LAST = float("inf")


@dataclass(frozen=True)
class CalicoEgress:
    state: str  # OPEN, RESTRICTED or UNKNOWN
    policy: NetworkPolicy | None = None  # the Calico policy that decided, or cannot be read
    why: str = ""  # for UNKNOWN: what gpuposture cannot evaluate


def is_calico(policy: NetworkPolicy) -> bool:
    return policy.engine.partition("/")[0] in CALICO_GROUPS


def is_tier(policy: NetworkPolicy) -> bool:
    return is_calico(policy) and policy.engine.endswith("/Tier")


def calico_egress(
    cni: Iterable[NetworkPolicy],
    kubernetes: Iterable[NetworkPolicy],
    pod: Pod,
    namespace_labels: dict[str, str] | None,
) -> CalicoEgress | None:
    """The pod's egress as Calico decides it; None when no Calico policy selects it for
    egress (the NetworkPolicies alone then decide, as before). `kubernetes`: the
    NetworkPolicies selecting the pod for egress. A hostNetwork pod is no Calico workload."""
    if pod.host_network:
        return None
    cni = list(cni)
    tiers = {p.name: p for p in cni if is_tier(p)}
    applying: list[NetworkPolicy] = []
    for policy in cni:
        if not is_calico(policy) or is_tier(policy) or policy.namespace not in ("", pod.namespace):
            continue
        if not policy.selector_expr:
            why = "kept by a sync from before gpuposture read Calico's rules: sync again"
            return CalicoEgress(UNKNOWN, policy, why)
        if "Egress" not in policy.policy_types:
            continue
        selects = _selects(policy, pod, namespace_labels)
        if selects is None:
            why = f"its selector {policy.selector_expr!r} is not read"
            if policy.namespace_selector_expr:
                why = (
                    f"its selector {policy.selector_expr!r} or namespaceSelector "
                    f"{policy.namespace_selector_expr!r} is not read"
                )
            return CalicoEgress(UNKNOWN, policy, why)
        if selects:
            applying.append(policy)
    if not applying:
        return None
    for policy in kubernetes:
        steps = (
            ("allow:all",)
            if policy.egress_allows_all
            else ("allow:some",) * bool(policy.egress_rules)
        )
        applying.append(
            NetworkPolicy(
                policy.namespace,
                f"knp.default.{policy.name}",
                tier=DEFAULT_TIER,
                order=KNP_ORDER,
                egress_steps=steps,
            )
        )
    unknown_tiers = sorted(
        {p.tier for p in applying} - set(tiers) - set(FIXED_TIERS) - {DEFAULT_TIER}
    )
    first = _walk(applying, tiers, 0.0)
    if unknown_tiers and _walk(applying, tiers, LAST).state != first.state:
        return CalicoEgress(
            UNKNOWN,
            first.policy,
            f"the order of tier(s) {', '.join(unknown_tiers)} is not in the snapshot "
            "(Calico Tier objects)",
        )
    return first


def _selects(
    policy: NetworkPolicy, pod: Pod, namespace_labels: dict[str, str] | None
) -> bool | None:
    """Whether the policy selects the pod; None when its selectors are not read."""
    chosen = parse_selector(policy.selector_expr)
    if chosen is None:
        return None
    namespace = namespace_labels or {}
    # The labels Calico gives a pod's workload endpoint (its namespace's, prefixed pcns.).
    labels = {
        **pod.labels,
        **{f"pcns.{k}": v for k, v in namespace.items()},
        "projectcalico.org/namespace": pod.namespace,
        "projectcalico.org/orchestrator": "k8s",
        "projectcalico.org/serviceaccount": pod.service_account,
    }
    if not chosen(labels):
        return False
    if policy.namespace or not policy.namespace_selector_expr:
        return True
    scope = parse_selector(policy.namespace_selector_expr)
    if scope is None or namespace_labels is None:
        return None  # a namespace whose labels the snapshot lacks
    return scope({**namespace_labels, "projectcalico.org/name": pod.namespace})


def _walk(
    applying: list[NetworkPolicy], tiers: dict[str, NetworkPolicy], unknown_at: float
) -> CalicoEgress:
    """A packet to an internet address through the tiers in order (module docstring)."""

    def tier_rank(name: str) -> tuple[float, str]:
        if name in tiers:
            order = tiers[name].order
            return (LAST if order is None else order, name)
        if name == DEFAULT_TIER:
            return (DEFAULT_TIER_ORDER, name)
        return (FIXED_TIERS.get(name, unknown_at), name)

    partial: NetworkPolicy | None = None  # an Allow (or Pass) of some ports reached
    passed: NetworkPolicy | None = None  # the policy (or tier's end) passing it on last
    for name in sorted({p.tier for p in applying}, key=tier_rank):
        policies = sorted(
            (p for p in applying if p.tier == name),
            key=lambda p: (LAST if p.order is None else p.order, p.name),
        )
        end = tiers[name].egress_steps if name in tiers else ("deny:all",)
        decided = ""
        for policy, steps in [*((p, p.egress_steps) for p in policies), (policies[-1], end)]:
            for step in steps:
                action, _, reach = step.partition(":")
                if action == "log" or reach == "none":
                    continue
                if reach == "unknown" or action not in ("allow", "deny", "pass"):
                    return CalicoEgress(UNKNOWN, policy, f"its egress rule {step!r} is not read")
                if reach == "some":
                    partial = partial or (policy if action != "deny" else None)
                    continue
                decided = action
                break
            if decided:
                if decided == "allow":
                    return CalicoEgress(OPEN, policy)
                if decided == "deny":
                    return CalicoEgress(RESTRICTED, partial or policy)
                passed = policy  # on to the next tier
                break
    # Passed on by every tier: the namespace's profile, which allows.
    return CalicoEgress(OPEN, passed)
