"""K8S-007: which CNI policies leave a namespace's open GPU pods "unknown" rather than open
(moved out of egress.py). A policy gpuposture cannot read may restrict the pods' egress, so
the finding says it cannot tell; one whose rules are read far enough to know that it cannot
restrict them (an allow-list for other pods, a deny of some ports, an ingress-only or host
firewall policy) leaves them open, as the rest of the evidence says.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from inventory.snapshot import NetworkPolicy, Pod
from inventory.sources.cni_policies import EGRESS_CONTROL_KINDS
from inventory.sources.kube_kinds import plural
from posture.rules.k8s.egress_calico import is_calico


def read_deny(policy: NetworkPolicy) -> bool:
    """A Cilium policy read as a deny of some ports only, with no egress rule of its own: it
    never restricts a pod's egress as a whole, and is not "unevaluated"."""
    return bool(policy.egress_denied_ports) and "Egress" not in policy.policy_types


def names_only(policy: NetworkPolicy) -> bool:
    """A Cilium policy read as limiting egress to an allow-list (cni_policies.py)."""
    return (
        policy.engine.startswith("cilium.io/")
        and "Egress" in policy.policy_types
        and not policy.egress_allows_all
        and not policy.egress_denies_world
    )


def spares_egress(policy: NetworkPolicy, pods: Iterable[Pod]) -> bool:
    """A Cilium policy none of whose rules can restrict these pods' egress (egress_subjects):
    none acts at egress (an ingress-only policy), or only rules selecting nodes do (a host
    firewall: it governs the node's own traffic) and no pod is hostNetwork, whose traffic is
    the node's. Nearly every Cilium cluster has such a host policy: it must not make every
    namespace's egress "unknown". "" (not read, or stored before it was) spares no pod."""
    if policy.egress_subjects == "none":
        return True
    return policy.egress_subjects == "nodes" and not any(p.host_network for p in pods)


def unread_policies(
    cni: Iterable[NetworkPolicy],
    namespace: str,
    open_pods: list[Pod],
    shown: Collection[str],
) -> list[NetworkPolicy]:
    """The CNI policies here or cluster-wide that may restrict the open pods' egress but that
    gpuposture does not evaluate, in a stable order; `shown` leaves out those the evidence
    already names (by policy_ref: opening the internet to the pods). Calico's are evaluated
    (egress_calico.py): never unread."""
    return sorted(
        (
            p
            for p in cni
            if p.namespace in (namespace, "")
            and policy_ref(p) not in shown
            and not names_only(p)  # read: it selects none of these pods
            and not read_deny(p)  # read: it takes some ports away, no more
            and not spares_egress(p, open_pods)  # read: it cannot restrict their egress
            and not is_calico(p)
        ),
        key=lambda p: (p.namespace, p.engine, p.name),
    )


def policy_ref(policy: NetworkPolicy) -> str:
    """How the evidence names a CNI policy: its kind, then namespace/name or "cluster-wide"."""
    where = f"{policy.namespace}/" if policy.namespace else "cluster-wide "
    return f"{policy.engine} {where}{policy.name}"


def refused_kinds(unread: Iterable[str]) -> list[str]:
    """The CNI policy kinds (EGRESS_CONTROL_KINDS) the last full sync was refused listing
    (inventory.kinds_read: a 403 or 401; one not served, a 404, is an answer and not here):
    any of their objects may allow or deny a GPU pod's egress, so it cannot be told."""
    return sorted(k for k in unread if k in EGRESS_CONTROL_KINDS)


def grants(kinds: Iterable[str]) -> list[dict[str, str]]:
    """Each refused kind, with the grant that lets the next sync read it."""
    found = []
    for label in kinds:
        group, _, kind = label.partition("/")
        grant = f"grant get/list/watch on {plural(kind)}.{group} (deploy/rbac.yaml)"
        found.append({"kind": label, "grant": grant})
    return found
