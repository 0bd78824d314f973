"""CNI policy rules opening egress to the internet (inventory/sources/cni_allows.py), read
through normalise as a sync reads them. Objects written here after each project's docs."""

from __future__ import annotations

import pytest

from inventory.sources.normalise import normalise

NS = "io.kubernetes.pod.namespace"


def _obj(api_version, kind, spec, namespace="team-alpha", name="p"):
    meta = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec}


def _read(obj):
    (policy,) = normalise([obj]).network_policies
    if not policy.egress_allows_all:
        return None
    return policy.pod_selector, policy.match_expressions


def cilium(spec, kind="CiliumNetworkPolicy", namespace="team-alpha"):
    return _obj("cilium.io/v2", kind, spec, namespace)


def calico(spec, kind="NetworkPolicy", namespace="team-alpha", group="projectcalico.org/v3"):
    return _obj(group, kind, spec, namespace)


def anp(spec):
    return _obj("policy.networking.k8s.io/v1alpha1", "AdminNetworkPolicy", spec, None)


GPU = {"matchLabels": {"app": "train"}}


@pytest.mark.parametrize(
    ("obj", "opens"),
    [
        pytest.param(
            cilium({"endpointSelector": GPU, "egress": [{"toEntities": ["world"]}]}),
            ({"app": "train"}, ()),
            id="cilium-world",
        ),
        pytest.param(
            cilium({"endpointSelector": {}, "egress": [{"toCIDR": ["0.0.0.0/0"]}]}),
            ({}, ()),
            id="cilium-cidr",
        ),
        pytest.param(
            cilium(
                {"endpointSelector": {}, "egress": [{"toCIDRSet": [{"cidr": "0.0.0.0/0"}]}]},
                kind="CiliumClusterwideNetworkPolicy",
                namespace=None,
            ),
            ({}, ()),
            id="ccnp-cidrset",
        ),
        # Only port 443 of the world, or only the cluster: not every port of the internet.
        pytest.param(
            cilium(
                {
                    "endpointSelector": {},
                    "egress": [
                        {"toEntities": ["world"], "toPorts": [{"ports": [{"port": "443"}]}]}
                    ],
                }
            ),
            None,
            id="cilium-one-port",
        ),
        pytest.param(
            cilium({"endpointSelector": {}, "egress": [{"toEntities": ["cluster"]}]}),
            None,
            id="cilium-cluster",
        ),
        pytest.param(
            calico(
                {
                    "selector": "app == 'train'",
                    "types": ["Egress"],
                    "order": 100,
                    "egress": [{"action": "Allow", "destination": {"nets": ["0.0.0.0/0"]}}],
                }
            ),
            ({"app": "train", NS: "team-alpha"}, ()),
            id="calico-np-nets",
        ),
        pytest.param(
            calico(
                {"selector": "all()", "egress": [{"action": "Allow"}]},
                kind="GlobalNetworkPolicy",
                namespace=None,
                group="crd.projectcalico.org/v1",
            ),
            ({}, ()),
            id="calico-gnp-all",
        ),
        pytest.param(
            calico(
                {
                    "selector": 'has(gpu) && projectcalico.org/namespace == "team-alpha"',
                    "egress": [{"action": "Allow"}],
                },
                kind="GlobalNetworkPolicy",
                namespace=None,
            ),
            ({NS: "team-alpha"}, ({"key": "gpu", "operator": "Exists", "values": []},)),
            id="calico-gnp-namespace",
        ),
        # A Deny first, a protocol, a destination port, another tier, a selector with ||:
        # not evaluated (or narrower than the internet).
        pytest.param(
            calico(
                {
                    "selector": "all()",
                    "egress": [
                        {"action": "Deny", "destination": {"nets": ["1.2.3.4/32"]}},
                        {"action": "Allow"},
                    ],
                }
            ),
            None,
            id="calico-deny-first",
        ),
        pytest.param(
            calico({"selector": "all()", "egress": [{"action": "Allow", "protocol": "TCP"}]}),
            None,
            id="calico-protocol",
        ),
        pytest.param(
            calico(
                {
                    "selector": "all()",
                    "egress": [{"action": "Allow", "destination": {"ports": [443]}}],
                }
            ),
            None,
            id="calico-port",
        ),
        pytest.param(
            calico({"tier": "security", "selector": "all()", "egress": [{"action": "Allow"}]}),
            None,
            id="calico-other-tier",
        ),
        pytest.param(
            calico({"selector": "a == 'x' || b == 'y'", "egress": [{"action": "Allow"}]}),
            None,
            id="calico-or",
        ),
        pytest.param(
            anp(
                {
                    "priority": 10,
                    "subject": {
                        "pods": {
                            "namespaceSelector": {
                                "matchLabels": {"kubernetes.io/metadata.name": "team-alpha"}
                            },
                            "podSelector": GPU,
                        }
                    },
                    "egress": [
                        {"name": "out", "action": "Allow", "to": [{"networks": ["0.0.0.0/0"]}]}
                    ],
                }
            ),
            ({"app": "train", NS: "team-alpha"}, ()),
            id="anp-allow",
        ),
        pytest.param(
            anp(
                {
                    "priority": 10,
                    "subject": {"namespaces": {}},
                    "egress": [{"action": "Deny", "to": [{"networks": ["0.0.0.0/0"]}]}],
                }
            ),
            None,
            id="anp-deny",
        ),
        pytest.param(
            anp(
                {
                    "priority": 10,
                    "subject": {"namespaces": {"matchLabels": {"tier": "gpu"}}},
                    "egress": [{"action": "Allow", "to": [{"networks": ["0.0.0.0/0"]}]}],
                }
            ),
            None,
            id="anp-namespace-labels",
        ),
    ],
)
def test_cni_rules_opening_the_internet_are_read(obj, opens):
    assert _read(obj) == opens


def cnp(tier):
    return _obj(
        "policy.networking.k8s.io/v1alpha2",
        "ClusterNetworkPolicy",
        {
            "tier": tier,
            "priority": 10,
            "subject": {"namespaces": {}},
            "egress": [{"action": "Accept", "to": [{"networks": ["::/0", "0.0.0.0/0"]}]}],
        },
        None,
    )


@pytest.mark.parametrize(("tier", "opens"), [("Admin", ({}, ())), ("Baseline", None)])
def test_cluster_network_policy_accept_in_the_admin_tier_opens(tier, opens):
    obj = cnp(tier)
    assert _read(obj) == opens


# The DNS rule a toFQDNs policy needs (Cilium's DNS-based policy docs): to kube-dns on port 53.
KUBE_DNS = {
    "toEndpoints": [
        {
            "matchLabels": {
                "k8s:io.kubernetes.pod.namespace": "kube-system",
                "k8s:k8s-app": "kube-dns",
            }
        }
    ],
    "toPorts": [
        {
            "ports": [{"port": "53", "protocol": "ANY"}],
            "rules": {"dns": [{"matchPattern": "*"}]},
        }
    ],
}


def test_cilium_fqdn_pattern_star_opens_the_internet():
    obj = cilium(
        {"endpointSelector": GPU, "egress": [{"toFQDNs": [{"matchPattern": "*"}]}, KUBE_DNS]}
    )
    assert _read(obj) == ({"app": "train"}, ())


@pytest.mark.parametrize(
    ("egress", "restricts"),
    [
        pytest.param(
            [
                {
                    "toFQDNs": [
                        {"matchName": "huggingface.co"},
                        {"matchPattern": "*.s3.amazonaws.com"},
                    ]
                },
                KUBE_DNS,
            ],
            True,
            id="named",
        ),
        pytest.param(
            [
                {
                    "toFQDNs": [{"matchName": "huggingface.co"}],
                    "toPorts": [{"ports": [{"port": "443"}]}],
                },
                KUBE_DNS,
            ],
            True,
            id="named-443",
        ),
        # "*" on port 443 only: the internet on one port, a restriction by the project's
        # decision (inventory/sources/egress_ports.py), not every port.
        pytest.param(
            [{"toFQDNs": [{"matchPattern": "*"}], "toPorts": [{"ports": [{"port": "443"}]}]}],
            True,
            id="star-443",
        ),
        # A private range beside the names: still an allow-list.
        pytest.param(
            [{"toFQDNs": [{"matchName": "huggingface.co"}]}, {"toCIDR": ["10.0.0.0/8"]}],
            True,
            id="with-private-cidr",
        ),
        # DNS to kube-dns and the pods of its own namespace (`{}`), no FQDN at all: Cilium's
        # default deny for egress but those peers.
        pytest.param([KUBE_DNS, {"toEndpoints": [{}]}], True, id="dns-and-namespace"),
        pytest.param(
            [
                {"toEntities": ["cluster", "kube-apiserver"]},
                {"toCIDRSet": [{"cidr": "192.168.0.0/16", "except": ["192.168.1.0/24"]}]},
                {"toServices": [{"k8sService": {"serviceName": "db", "namespace": "data"}}]},
            ],
            True,
            id="cluster-private-range-service",
        ),
        # A CIDR wider than a /8 is much of the internet; a CIDR group is not read.
        pytest.param([{"toCIDR": ["0.0.0.0/1", "128.0.0.0/1"]}], False, id="half-internet"),
        pytest.param([{"toCIDRSet": [{"cidrGroupRef": "partners"}]}], False, id="cidr-group"),
        # Ports alone: every address on them: the internet on 443 only, a restriction too.
        pytest.param([{"toPorts": [{"ports": [{"port": "443"}]}]}], True, id="ports-only"),
        pytest.param(
            [
                {"toFQDNs": [{"matchName": "a.io"}]},
                {"toEndpoints": [{"matchLabels": {"reserved:world": ""}}]},
            ],
            False,
            id="reserved-world",
        ),
    ],
)
def test_cilium_egress_to_an_allow_list_is_a_restriction(egress, restricts):
    (policy,) = normalise([cilium({"endpointSelector": GPU, "egress": egress})]).network_policies
    assert not policy.egress_allows_all
    assert (policy.policy_types == ("Egress",)) is restricts
    if restricts:
        assert policy.pod_selector == {"app": "train"}


def test_cilium_fqdn_rule_without_default_deny_only_adds():
    spec = {
        "endpointSelector": GPU,
        "enableDefaultDeny": {"egress": False},
        "egress": [{"toFQDNs": [{"matchName": "huggingface.co"}]}],
    }
    (policy,) = normalise([cilium(spec)]).network_policies
    assert policy.policy_types == ()


def _specs(*rules):
    return _obj("cilium.io/v2", "CiliumNetworkPolicy", None) | {"specs": list(rules)}


@pytest.mark.parametrize(
    ("rules", "restricts"),
    [
        # Rule by rule: each with egress an allow-list, for the same pods; ingress passed over.
        pytest.param(
            [
                {"endpointSelector": GPU, "egress": [KUBE_DNS]},
                {"endpointSelector": GPU, "egress": [{"toEndpoints": [{}]}]},
                {"endpointSelector": {}, "ingress": [{"fromEndpoints": [{}]}]},
            ],
            True,
            id="same-pods",
        ),
    ],
)
def test_cilium_specs_are_read_rule_by_rule(rules, restricts):
    (policy,) = normalise([_specs(*rules)]).network_policies
    assert (policy.policy_types == ("Egress",)) is restricts


def test_cilium_specs_for_different_pods_are_read_one_policy_per_rule():
    # Cilium adds up every rule selecting an endpoint: each acts on its own pods.
    rules = [
        {"endpointSelector": GPU, "egress": [KUBE_DNS]},
        {"endpointSelector": {}, "egress": [{"toEndpoints": [{}]}]},
        {"endpointSelector": {}, "ingress": [{"fromEndpoints": [{}]}]},  # no egress: passed over
    ]
    first, second = normalise([_specs(*rules)]).network_policies
    assert (first.pod_selector, first.policy_types) == ({"app": "train"}, ("Egress",))
    assert (second.selects_all_pods, second.policy_types) == (True, ("Egress",))
    assert (first.name, second.name) == ("p specs[0]", "p specs[1]")
