"""Calico's GlobalNetworkSets and NetworkSets: the nets a policy rule's destination selector
picks (K8S-007). PURE.

A Calico rule's `destination.selector` picks workload endpoints and network sets by their labels
(Calico's network set reference): a namespaced NetworkPolicy the NetworkSets of its own
namespace (and, with `namespaceSelector: global()`, the GlobalNetworkSets); a
GlobalNetworkPolicy the GlobalNetworkSets and every namespace's NetworkSets; with another
`namespaceSelector`, either picks the NetworkSets of the namespaces that selector matches (by
the Namespace's labels in the snapshot; unknown where the snapshot lacks the Namespace). A set
holding 0.0.0.0/0 (or a range wider than a /8) is the internet: the rule is then read with
those nets as its destination (cni_calico.py), not as a rule to named peers. Sets are read
after every object of the snapshot, since a policy may come before the sets it names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from inventory.snapshot import Namespace, NetworkPolicy
from inventory.sources.raw import mapping, meta, name_of, str_dict, str_tuple, text

SET_GROUPS = ("projectcalico.org", "crd.projectcalico.org")
SET_KINDS = ("GlobalNetworkSet", "NetworkSet")


@dataclass(frozen=True)
class NetSet:
    namespace: str  # "" for a GlobalNetworkSet
    name: str
    labels: dict[str, str]
    nets: tuple[str, ...]
    # A NetworkSet's namespace's labels, as a rule's namespaceSelector matches them (with
    # projectcalico.org/name and kubernetes.io/metadata.name); None when the snapshot does not
    # hold the Namespace, or for a GlobalNetworkSet.
    namespace_labels: dict[str, str] | None = None


def is_network_set(obj: dict[str, Any]) -> bool:
    group = (text(obj.get("apiVersion"), "") or "").rpartition("/")[0]
    return group in SET_GROUPS and obj.get("kind") in SET_KINDS


def network_set(obj: dict[str, Any]) -> NetSet:
    namespaced = obj.get("kind") == "NetworkSet"
    return NetSet(
        namespace=(text(meta(obj).get("namespace"), "") or "") if namespaced else "",
        name=name_of(obj),
        labels=dict(str_dict(meta(obj).get("labels"))),
        nets=str_tuple(mapping(obj.get("spec")).get("nets")),
    )


def with_network_sets(
    policies: list[NetworkPolicy],
    raw: list[dict[str, Any]],
    sets: list[NetSet],
    namespaces: Sequence[Namespace] = (),
) -> list[NetworkPolicy]:
    """The policies, each Calico one re-read with the network sets its rules' destination
    selectors pick (where there are sets at all); `namespaces` give the NetworkSets' namespace
    labels, which a rule's namespaceSelector picks them by."""
    if not sets:
        return policies
    sets = [_placed(s, {n.name: n.labels for n in namespaces}) for s in sets]
    # Imported here: cni_policies imports cni_calico, which imports this module's NetSet.
    from inventory.sources.cni_calico import calico_internet_ports, calico_steps
    from inventory.sources.cni_policies import cni_policy_kind, cni_policy_namespace

    reread: dict[tuple[str, str, str], dict[str, Any]] = {
        (cni_policy_kind(obj) or "", cni_policy_namespace(obj), name_of(obj)): obj for obj in raw
    }
    result = []
    for policy in policies:
        obj = reread.get((policy.engine, policy.namespace, policy.name))
        if obj is not None and not policy.engine.endswith("/Tier"):
            policy = replace(
                policy,
                egress_steps=calico_steps(obj, sets, policy.namespace),
                internet_ports=calico_internet_ports(obj, sets, policy.namespace),
            )
        result.append(policy)
    return result


def _placed(netset: NetSet, labels: dict[str, dict[str, str]]) -> NetSet:
    """The set with its namespace's labels, as Calico matches a namespaceSelector: the
    Namespace's own, its name as projectcalico.org/name and (set by the API server on every
    namespace) kubernetes.io/metadata.name."""
    if not netset.namespace or netset.namespace not in labels:
        return netset
    names = {"projectcalico.org/name": netset.namespace}
    names["kubernetes.io/metadata.name"] = netset.namespace
    return replace(netset, namespace_labels={**labels[netset.namespace], **names})
