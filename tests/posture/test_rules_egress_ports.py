"""K8S-007 and internet egress limited to named ports, alike for the three engines: a deliberate
egress policy letting pods reach the internet only on some ports (443/TCP) is a control:
"restricted", no finding, its evidence saying "internet reachable on ports 443/TCP"; the
internet on every port stays "open". Objects written after each project's policy docs, read as
a sync reads them."""

from __future__ import annotations

import pytest

import posture.rules  # noqa: F401
from inventory.sources.normalise import normalise
from posture.rules.registry import run_checks
from tests.posture.builders import inputs, pod, tenant

ALPHA = tenant("alpha")
GPU = {"nvidia.com/gpu": 1}
HTTPS_NOTE = "internet reachable on ports 443/TCP"


def knp(ports):
    rule = {"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["169.254.169.254/32"]}}]}
    if ports is not None:
        rule["ports"] = ports
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "egress", "namespace": "alpha"},
        "spec": {
            "podSelector": {"matchLabels": {"app": "train"}},
            "policyTypes": ["Egress"],
            "egress": [rule],
        },
    }


def cnp(to_ports, peer=None):
    entry = dict(peer if peer is not None else {"toEntities": ["world"]})
    if to_ports is not None:
        entry["toPorts"] = to_ports
    return {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": {"name": "egress", "namespace": "alpha"},
        "spec": {"endpointSelector": {"matchLabels": {"app": "train"}}, "egress": [entry]},
    }


def gnp(destination, protocol="TCP"):
    rule = {"action": "Allow", "destination": destination}
    if protocol:
        rule["protocol"] = protocol
    return {
        "apiVersion": "projectcalico.org/v3",
        "kind": "GlobalNetworkPolicy",
        "metadata": {"name": "egress"},
        "spec": {"selector": "app == 'train'", "types": ["Egress"], "egress": [rule]},
    }


HTTPS = [{"port": 443, "protocol": "TCP"}]
CILIUM_HTTPS = [{"ports": [{"port": "443", "protocol": "TCP"}]}]
LIMITED = [
    pytest.param(knp(HTTPS), id="networkpolicy"),
    pytest.param(knp([{"port": 443}]), id="networkpolicy-default-tcp"),
    pytest.param(cnp(CILIUM_HTTPS), id="cilium-world"),
    pytest.param(cnp(CILIUM_HTTPS, {"toCIDR": ["0.0.0.0/0"]}), id="cilium-cidr"),
    pytest.param(cnp(CILIUM_HTTPS, {}), id="cilium-ports-alone"),
    pytest.param(gnp({"nets": ["0.0.0.0/0"], "ports": [443]}), id="calico-nets"),
    pytest.param(gnp({"ports": [443]}), id="calico-no-nets"),
]


def k8s007(obj, *, other_pod=False):
    pods = [pod("alpha", gpu=GPU, labels={"app": "train"})]
    if other_pod:
        pods.append(pod("alpha", name="web", gpu=GPU, labels={"app": "web"}))
    world = inputs(
        pods=tuple(pods), tenants=(ALPHA,), network_policies=normalise([obj]).network_policies
    )
    return run_checks(world, only=["K8S-007"])


@pytest.mark.parametrize("obj", LIMITED)
def test_internet_egress_limited_to_a_port_is_restricted(obj):
    assert k8s007(obj) == []
    (policy,) = normalise([obj]).network_policies
    assert policy.internet_ports == ("443/TCP",)


@pytest.mark.parametrize("obj", LIMITED)
def test_the_evidence_says_on_which_ports_the_internet_is_reachable(obj):
    # Another GPU pod of the namespace, which the policy does not select, stays open: the
    # finding's evidence says what the policy lets the selected pod reach.
    (draft,) = k8s007(obj, other_pod=True)
    assert draft.evidence["open_gpu_pods"] == 1
    assert draft.evidence["verdict"] == "not restricted"
    said = [p.get("internet") for p in draft.evidence["network_policies"]]
    said += [
        p["internet"] for p in draft.evidence.get("cni_policies_limiting_internet_to_ports", [])
    ]
    assert HTTPS_NOTE in said


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(knp(None), id="networkpolicy-no-ports"),
        pytest.param(knp([{"protocol": "TCP"}]), id="networkpolicy-every-tcp-port"),
        pytest.param(knp([{"port": 1, "endPort": 65535}]), id="networkpolicy-full-range"),
        pytest.param(cnp(None), id="cilium-world"),
        pytest.param(cnp([{"ports": [{"port": "0", "protocol": "ANY"}]}]), id="cilium-port-0"),
        pytest.param(gnp({"nets": ["0.0.0.0/0"]}), id="calico-every-tcp-port"),
        pytest.param(gnp({"nets": ["0.0.0.0/0"], "ports": ["1:65535"]}), id="calico-full-range"),
    ],
)
def test_internet_egress_on_every_port_stays_open(obj):
    (draft,) = k8s007(obj)
    assert draft.evidence["verdict"] == "not restricted"
    assert draft.severity != "low"
