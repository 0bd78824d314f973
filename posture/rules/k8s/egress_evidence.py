"""K8S-007's evidence: how its policies and pods are said (moved out of egress.py)."""

from __future__ import annotations

from collections.abc import Callable

from inventory.snapshot import NetworkPolicy, Pod
from inventory.sources.egress_ports import note, subtract
from posture.rules.common import pod_ref
from posture.rules.registry import MEMBERS_SHOWN


def host_network(pods: list[Pod]) -> dict[str, object]:
    on_host = [pod_ref(p) for p in pods if p.host_network]
    if not on_host:
        return {}
    return {
        "host_network_pods": on_host[:MEMBERS_SHOWN],
        "host_network_note": "hostNetwork pods use the node's network: NetworkPolicy does not "
        "restrict them",
    }


def selector_of(policy: NetworkPolicy) -> dict[str, object]:
    if not policy.match_expressions:
        return dict(policy.pod_selector)  # the shape earlier findings' evidence has
    return {
        "matchLabels": dict(policy.pod_selector),
        "matchExpressions": [dict(e) for e in policy.match_expressions],
    }


def port_limits(
    chosen: list[NetworkPolicy | None],
    ref: Callable[[NetworkPolicy], str],
    denied: tuple[str, ...] = (),
) -> dict[str, str]:
    """The CNI policies restricting a pod that let it reach the internet on some ports (a
    Cilium allow-list selecting it, the Calico policy whose Allow of some ports preceded the
    deny), each with what it lets through: "internet reachable on ports 443/TCP", less the
    ports a Cilium deny takes away from the pod (`denied`); none said where none is left."""
    left = {
        ref(p): subtract(p.internet_ports, denied)
        for p in chosen
        if p is not None and p.internet_ports
    }
    return {name: note(ports) for name, ports in left.items() if ports}
