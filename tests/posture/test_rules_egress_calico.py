"""K8S-007 and Calico's order of evaluation: an Allow to the internet opens a pod's egress only
where no Deny or Pass of a policy evaluated before it (an earlier tier, a lower order) selects
the pod. Calico objects written after Calico's tiers and policy docs, read as a sync reads them."""

from __future__ import annotations

from dataclasses import replace

import pytest

import posture.rules  # noqa: F401
from inventory.snapshot import Namespace, NetworkPolicy
from inventory.sources.normalise import normalise
from posture.rules.registry import run_checks
from tests.posture.builders import inputs, pod, tenant

ALPHA = tenant("alpha")
DENY_ALL = NetworkPolicy("alpha", "deny-egress", {}, True, ("Egress",), 0, 0)


def gnp(name, egress, tier=None, order=None, selector="all()"):
    spec = {"selector": selector, "types": ["Egress"], "egress": egress}
    if tier:
        spec["tier"] = tier
    if order is not None:
        spec["order"] = order
    # Calico names a policy of a named tier "<tier>.<name>".
    full = f"{tier}.{name}" if tier else name
    return {
        "apiVersion": "projectcalico.org/v3",
        "kind": "GlobalNetworkPolicy",
        "metadata": {"name": full},
        "spec": spec,
    }


ALLOW = gnp("allow-internet", [{"action": "Allow"}], order=500)
METADATA = {"nets": ["169.254.169.254/32"]}


def k8s007(*calico):
    world = inputs(
        pods=(pod("alpha", gpu={"nvidia.com/gpu": 1}, labels={"app": "train"}),),
        tenants=(ALPHA,),
        network_policies=(DENY_ALL, *normalise(list(calico)).network_policies),
    )
    return run_checks(world, only=["K8S-007"])


def test_a_default_tier_allow_with_nothing_before_it_opens_the_internet():
    (draft,) = k8s007(ALLOW)
    assert draft.evidence["verdict"] == "not restricted"
    assert "allowed egress to the internet by" in draft.title


def tier(name, order=None, default_action=None):
    spec = {} if order is None else {"order": order}
    if default_action:
        spec["defaultAction"] = default_action
    return {
        "apiVersion": "projectcalico.org/v3",
        "kind": "Tier",
        "metadata": {"name": name},
        "spec": spec,
    }


NO_METADATA = gnp("no-metadata", [{"action": "Deny", "destination": METADATA}], tier="security")


def test_a_named_tier_whose_order_is_not_in_the_snapshot_leaves_egress_unknown_and_low():
    # Its end drops what no rule matched (the Allow never reached) if the tier comes first,
    # not if it comes after the default tier: without the Tier object, gpuposture cannot tell.
    (draft,) = k8s007(NO_METADATA, ALLOW)
    assert draft.evidence["verdict"] == "unknown"
    (entry,) = draft.evidence["calico_not_evaluated"]
    assert "security" in entry["why"] and "not in the snapshot" in entry["why"]
    assert draft.severity == "low"
    assert draft.evidence["basis"].startswith("unverified")
    assert "cannot tell whether egress" in draft.title


@pytest.mark.parametrize(
    ("security", "open_"),
    [
        pytest.param(tier("security", 100), False, id="tier-first-drops-at-its-end"),
        pytest.param(tier("security", 100, "Pass"), True, id="tier-first-passes-at-its-end"),
        pytest.param(tier("security", 2_000_000), True, id="tier-after-default"),
        pytest.param(tier("security"), True, id="tier-without-order-last"),
    ],
)
def test_the_tier_order_read_from_the_tier_object_decides(security, open_):
    drafts = k8s007(security, NO_METADATA, ALLOW)
    if not open_:
        assert drafts == []
        return
    (draft,) = drafts
    assert draft.evidence["verdict"] == "not restricted"
    assert draft.severity != "low"  # the check's own, medium


@pytest.mark.parametrize(
    "before",
    [
        # A lower order in the default tier denying only the metadata address: an internet
        # address matches no rule of it, so the Allow is reached.
        pytest.param(
            gnp("no-metadata", [{"action": "Deny", "destination": METADATA}], order=100),
            id="lower-order-deny-of-one-address",
        ),
        # A Pass skips the rest of the default tier; no later tier: the profile allows.
        pytest.param(gnp("skip", [{"action": "Pass"}], order=100), id="lower-order-pass"),
        # A Deny evaluated after the Allow (higher order): the Allow has decided.
        pytest.param(gnp("late", [{"action": "Deny"}], order=900), id="higher-order-deny"),
        # A Deny for other pods.
        pytest.param(
            gnp("web", [{"action": "Deny"}], order=100, selector="app == 'web'"), id="other-pods"
        ),
    ],
)
def test_what_does_not_stop_an_internet_packet_before_the_allow_leaves_it_open(before):
    (draft,) = k8s007(before, ALLOW)
    assert draft.evidence["verdict"] == "not restricted"
    assert "allowed egress to the internet by" in draft.title


def calico_np(spec, group="crd.projectcalico.org/v1", name="default.default-deny"):
    return {
        "apiVersion": group,
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": "alpha"},
        "spec": spec,
    }


def k8s007_alone(*calico, labels=None):
    """The GPU pod with only Calico's policies (no Kubernetes NetworkPolicy)."""
    world = inputs(
        pods=(pod("alpha", gpu={"nvidia.com/gpu": 1}, labels={"app": "train"}),),
        tenants=(ALPHA,),
        network_policies=normalise(list(calico)).network_policies,
    )
    if labels is not None:
        snapshot = replace(world.snapshot, namespaces=(Namespace("alpha", labels),))
        world = replace(world, snapshot=snapshot)
    return run_checks(world, only=["K8S-007"])


DEFAULT_DENY = {
    "tier": "default",
    "order": 1000,
    "selector": "all()",
    "types": ["Ingress", "Egress"],
}


@pytest.mark.parametrize("group", ["crd.projectcalico.org/v1", "projectcalico.org/v3"])
def test_a_calico_policy_with_egress_in_types_and_no_rules_denies_egress(group):
    # Calico: a policy whose types hold Egress and no egress rule denies all egress.
    assert k8s007_alone(calico_np(DEFAULT_DENY, group)) == []


DNS = {
    "action": "Allow",
    "protocol": "UDP",
    "destination": {
        "namespaceSelector": "projectcalico.org/name == 'kube-system'",
        "selector": "k8s-app == 'kube-dns'",
        "ports": [53],
    },
}
LOCKDOWN = gnp("external-egress-lockdown", [DNS, {"action": "Deny"}], order=100)
LOCKDOWN["spec"]["namespaceSelector"] = "tenant-class == 'external' && !has(legacy)"


def test_a_global_policy_allowing_dns_then_denying_restricts_the_namespaces_it_selects():
    assert k8s007_alone(LOCKDOWN, labels={"tenant-class": "external"}) == []
    # Namespaces it does not select stay open; without their labels, unknown.
    (other,) = k8s007_alone(LOCKDOWN, labels={"tenant-class": "internal"})
    assert other.evidence["verdict"] == "not restricted" and other.severity != "low"
    world = inputs(
        pods=(pod("alpha", gpu={"nvidia.com/gpu": 1}),),
        tenants=(ALPHA,),
        namespaces=(),
        network_policies=normalise([LOCKDOWN]).network_policies,
    )
    (unlabelled,) = run_checks(world, only=["K8S-007"])
    assert unlabelled.evidence["verdict"] == "unknown"


@pytest.mark.parametrize(
    ("egress", "restricted"),
    [
        # An allow-list of in-cluster peers and private ranges, then the tier's end: restricted.
        pytest.param([DNS, {"action": "Allow", "destination": {"nets": ["10.0.0.0/8"]}}], True),
        # Port 443 of every address: a narrowing, as a NetworkPolicy's is, then the end.
        pytest.param(
            [{"action": "Allow", "protocol": "TCP", "destination": {"ports": [443]}}], True
        ),
        # TCP on every port of every address: open.
        pytest.param([{"action": "Allow", "protocol": "TCP"}], False),
        pytest.param([{"action": "Allow", "destination": {"nets": ["0.0.0.0/0"]}}], False),
    ],
)
def test_a_calico_allow_list_without_the_internet_restricts(egress, restricted):
    spec = {"selector": "app == 'train' || app == 'serve'", "types": ["Egress"], "egress": egress}
    drafts = k8s007_alone(calico_np(spec, name="allow-list"))
    assert (drafts == []) is restricted


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({"selector": "app matches 'tr.*'", "types": ["Egress"]}, id="not-parsed"),
        # Pods chosen by their service account's labels too, not in the snapshot.
        pytest.param(
            {"serviceAccountSelector": "role == 'trainer'", "types": ["Egress"]},
            id="service-account-selector",
        ),
    ],
)
def test_a_selector_gpuposture_cannot_read_leaves_egress_unknown(spec):
    (draft,) = k8s007_alone(calico_np(spec))
    assert draft.evidence["verdict"] == "unknown"
    (entry,) = draft.evidence["calico_not_evaluated"]
    assert "is not read" in entry["why"]
    assert draft.severity == "low"


def network_set(nets, kind="GlobalNetworkSet", namespace=None, labels=None):
    meta = {"name": "egress-targets", "labels": labels or {"role": "egress-targets"}}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "projectcalico.org/v3",
        "kind": kind,
        "metadata": meta,
        "spec": {"nets": nets},
    }


def to_set(extra=None, namespace=None):
    """An Allow to whatever the `role == 'egress-targets'` selector picks, then Deny."""
    destination = {"selector": "role == 'egress-targets'", **(extra or {})}
    rules = [{"action": "Allow", "destination": destination}, {"action": "Deny"}]
    if namespace is None:
        return gnp("to-set", rules, order=100)
    return {
        "apiVersion": "projectcalico.org/v3",
        "kind": "NetworkPolicy",
        "metadata": {"name": "to-set", "namespace": namespace},
        "spec": {"selector": "all()", "types": ["Egress"], "egress": rules, "order": 100},
    }


@pytest.mark.parametrize(
    "objects",
    [
        pytest.param((to_set(), network_set(["0.0.0.0/0"])), id="global-set"),
        # The set may come after the policy in the snapshot.
        pytest.param((network_set(["::/0", "0.0.0.0/0"]), to_set()), id="set-first"),
        pytest.param(
            (to_set(namespace="alpha"), network_set(["0.0.0.0/0"], "NetworkSet", "alpha")),
            id="namespaced-set",
        ),
        pytest.param(
            (to_set({"namespaceSelector": "global()"}, "alpha"), network_set(["0.0.0.0/0"])),
            id="namespaced-policy-global-set",
        ),
    ],
)
def test_a_network_set_of_the_internet_picked_by_a_selector_opens_egress(objects):
    (draft,) = k8s007(*objects)
    assert draft.evidence["verdict"] == "not restricted"
    assert "allowed egress to the internet by" in draft.title


@pytest.mark.parametrize(
    "objects",
    [
        pytest.param((to_set(), network_set(["10.0.0.0/8", "203.0.113.7/32"])), id="named-nets"),
        pytest.param(
            (to_set(), network_set(["0.0.0.0/0"], labels={"role": "other"})), id="not-picked"
        ),
        # A namespaced policy's plain selector picks only its own namespace's sets.
        pytest.param(
            (to_set(namespace="alpha"), network_set(["0.0.0.0/0"], "NetworkSet", "beta")),
            id="other-namespace",
        ),
    ],
)
def test_a_network_set_of_named_nets_or_not_picked_keeps_egress_restricted(objects):
    assert k8s007(*objects) == []


def test_a_network_set_of_the_internet_on_one_port_restricts_and_says_the_port():
    policy = to_set({"ports": [443]})
    policy["spec"]["egress"][0]["protocol"] = "TCP"
    assert k8s007(policy, network_set(["0.0.0.0/0"])) == []
    calico = [
        p for p in normalise([policy, network_set(["0.0.0.0/0"])]).network_policies if p.engine
    ]
    assert calico[0].internet_ports == ("443/TCP",)


def namespace(name, labels=None):
    """A Namespace as the API server returns it (kubernetes.io/metadata.name set)."""
    meta = {"name": name, "labels": {"kubernetes.io/metadata.name": name, **(labels or {})}}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


INFRA = {"namespaceSelector": 'kubernetes.io/metadata.name == "infra"'}
BY_ZONE = {"namespaceSelector": "zone == 'egress'"}


@pytest.mark.parametrize(
    "objects",
    [
        pytest.param(
            (
                to_set(INFRA, "alpha"),
                network_set(["0.0.0.0/0"], "NetworkSet", "infra"),
                namespace("infra"),
            ),
            id="by-name",
        ),
        pytest.param(
            (
                network_set(["0.0.0.0/0"], "NetworkSet", "infra"),
                namespace("infra", {"zone": "egress"}),
                to_set(BY_ZONE),
            ),
            id="by-label-global-policy",
        ),
    ],
)
def test_a_network_set_of_the_internet_in_a_namespace_the_rule_selects_opens_egress(objects):
    # Calico: a rule's namespaceSelector picks the NetworkSets of the namespaces it selects.
    (draft,) = k8s007(*objects)
    assert draft.evidence["verdict"] == "not restricted"
    assert "allowed egress to the internet by" in draft.title


@pytest.mark.parametrize(
    "objects",
    [
        pytest.param(
            (
                to_set(INFRA, "alpha"),
                network_set(["10.0.0.0/8", "192.168.0.0/16"], "NetworkSet", "infra"),
                namespace("infra"),
            ),
            id="private-nets",
        ),
        # The set of the internet is in a namespace the selector does not pick.
        pytest.param(
            (
                to_set(INFRA, "alpha"),
                network_set(["0.0.0.0/0"], "NetworkSet", "beta"),
                network_set(["10.0.0.0/8"], "NetworkSet", "infra"),
                namespace("infra"),
                namespace("beta"),
            ),
            id="other-namespace",
        ),
        pytest.param(
            (
                to_set(BY_ZONE),
                network_set(["0.0.0.0/0"], "NetworkSet", "infra"),
                namespace("infra", {"zone": "internal"}),
            ),
            id="label-not-matching",
        ),
    ],
)
def test_a_namespace_selected_network_set_without_the_internet_keeps_egress_restricted(objects):
    assert k8s007(*objects) == []


def test_a_network_set_of_the_internet_in_a_namespace_whose_labels_are_unknown_is_unknown():
    # No Namespace object for infra in the snapshot: whether `zone == 'egress'` picks it
    # cannot be told.
    (draft,) = k8s007(to_set(BY_ZONE), network_set(["0.0.0.0/0"], "NetworkSet", "infra"))
    assert draft.evidence["verdict"] == "unknown"
