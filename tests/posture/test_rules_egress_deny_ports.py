"""K8S-007 and a Cilium `egressDeny` to the world limited by `toPorts`: it denies those ports
only (Cilium's deny policy docs), so the pod's internet egress on other ports stays as the
allows leave it, and an allow-list of ports loses the denied ones. Objects written after
Cilium's policy docs, read as a sync reads them."""

from __future__ import annotations

import pytest

import posture.rules  # noqa: F401
from inventory.sources.normalise import normalise
from posture.rules.registry import run_checks
from tests.posture.builders import inputs, tenant
from tests.posture.test_rules_egress_cni import CILIUM, TWO_PODS

TRAIN = {"matchLabels": {"app": "train"}}


def ports(*numbers, protocol="TCP"):
    return [{"ports": [{"port": str(n), "protocol": protocol} for n in numbers]}]


def cnp(name, rule):
    return {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": {"name": name, "namespace": "alpha"},
        "spec": {"endpointSelector": TRAIN, **rule},
    }


def deny(to_ports, peer=None):
    entry = {**(peer or {"toEntities": ["world"]}), **({"toPorts": to_ports} if to_ports else {})}
    return cnp("no-smtp", {"egressDeny": [entry]})


def allow(to_ports=None):
    entry = {"toEntities": ["world"], **({"toPorts": to_ports} if to_ports else {})}
    return cnp("egress", {"egress": [entry]})


def k8s007(*objects, pods=TWO_PODS[:1]):
    world = inputs(
        pods=pods,
        tenants=(tenant("alpha"),),
        network_policies=normalise(list(objects)).network_policies,
        workloads=(CILIUM,),
    )
    return run_checks(world, only=["K8S-007"])


DENIED = [
    {
        "policy": "cilium.io/CiliumNetworkPolicy alpha/no-smtp",
        "internet": "internet denied on ports 25/TCP",
    }
]


def test_a_port_limited_deny_alone_leaves_the_other_ports_open():
    # Nothing else restricts the pod: open on every port but 25, and known so (not unknown).
    (draft,) = k8s007(deny(ports(25)))
    assert draft.evidence["verdict"] == "not restricted"
    assert "unevaluated_policies" not in draft.evidence
    assert draft.evidence["cni_policies_denying_internet_on_ports"] == DENIED


def test_a_port_limited_deny_beside_an_allow_of_the_world_leaves_the_pod_open():
    (draft,) = k8s007(deny(ports(25)), allow())
    assert draft.evidence["verdict"] == "not restricted"
    assert draft.evidence["cni_policies_allowing_internet"] == [
        "cilium.io/CiliumNetworkPolicy alpha/egress"
    ]
    assert "allowed egress to the internet by" in draft.title


def test_a_port_limited_deny_takes_its_ports_from_an_allow_list_of_ports():
    # web (not selected) is open; train may reach the internet on 443 only: 80 is denied.
    (draft,) = k8s007(deny(ports(80)), allow(ports(443, 80)), pods=TWO_PODS)
    assert draft.evidence["gpu_pods_without_egress_policy"] == ["alpha/web"]
    assert draft.evidence["cni_policies_limiting_internet_to_ports"] == [
        {
            "policy": "cilium.io/CiliumNetworkPolicy alpha/egress",
            "internet": "internet reachable on ports 443/TCP",
        }
    ]


def test_a_port_limited_deny_of_every_allowed_port_leaves_no_internet_said():
    (draft,) = k8s007(deny(ports(443, protocol="ANY")), allow(ports(443)), pods=TWO_PODS)
    assert draft.evidence["gpu_pods_without_egress_policy"] == ["alpha/web"]
    assert "cni_policies_limiting_internet_to_ports" not in draft.evidence


def test_a_deny_of_a_wide_range_on_every_port_is_still_not_evaluated():
    # Half the internet on every port: gpuposture does not add up ranges; unknown.
    (draft,) = k8s007(deny(None, {"toCIDR": ["0.0.0.0/1"]}))
    assert draft.evidence["verdict"] == "unknown"


@pytest.mark.parametrize(
    "to_ports",
    [
        pytest.param(None, id="no-toPorts"),
        # Cilium's port "0" is every port: a deny of the world as a whole.
        pytest.param([{"ports": [{"port": "0", "protocol": "ANY"}]}], id="port-0"),
    ],
)
def test_a_deny_of_the_world_on_every_port_still_restricts(to_ports):
    assert k8s007(deny(to_ports)) == []


@pytest.mark.parametrize(
    ("allowed", "denied", "left"),
    [
        (("443/TCP", "80/TCP"), ("80/TCP",), ("443/TCP",)),
        (("8000-8080/TCP",), ("8080/TCP", "8000/TCP"), ("8001-8079/TCP",)),
        (("8000-8080/TCP",), ("8040/ANY",), ("8000-8039/TCP", "8041-8080/TCP")),
        (("443/TCP",), ("443/UDP",), ("443/TCP",)),
        # An allow of every protocol on 53 less UDP still lets TCP (and SCTP) through.
        (("53/ANY",), ("53/UDP",), ("53/ANY",)),
        (("53/ANY",), ("53/ANY",), ()),
        # A named port's number is the pod's: only the same name takes it away.
        (("https/TCP",), ("443/TCP",), ("https/TCP",)),
        (("https/TCP",), ("https/TCP",), ()),
    ],
)
def test_subtract_takes_away_only_the_denied_ports(allowed, denied, left):
    from inventory.sources.egress_ports import subtract  # noqa: PLC0415

    assert subtract(allowed, denied) == left
