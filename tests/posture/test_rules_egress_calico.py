"""K8S-007 and Calico's order of evaluation: an Allow to the internet opens a pod's egress only
where no Deny or Pass of a policy evaluated before it (an earlier tier, a lower order) selects
the pod. Calico objects written after Calico's tiers and policy docs, read as a sync reads them."""

from __future__ import annotations

import pytest

import posture.rules  # noqa: F401
from inventory.snapshot import NetworkPolicy
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


@pytest.mark.parametrize(
    "before",
    [
        # A security tier denying the metadata address: what it does not match is dropped at
        # the tier's end, so the default tier's Allow may never be reached.
        pytest.param(
            gnp("no-metadata", [{"action": "Deny", "destination": METADATA}], tier="security"),
            id="named-tier-deny",
        ),
        # A lower order in the default tier with a Deny first.
        pytest.param(
            gnp("no-metadata", [{"action": "Deny", "destination": METADATA}], order=100),
            id="lower-order-deny",
        ),
        # A Pass skips the rest of the default tier, the Allow with it.
        pytest.param(gnp("skip", [{"action": "Pass"}], order=100), id="lower-order-pass"),
    ],
)
def test_a_deny_or_pass_before_the_allow_makes_egress_unknown(before):
    (draft,) = k8s007(before, ALLOW)
    assert draft.evidence["verdict"] == "unknown"
    assert draft.evidence["calico_allows_after_deny_or_pass"] == [
        "projectcalico.org/GlobalNetworkPolicy cluster-wide allow-internet"
    ]
    assert "after another Calico policy's Deny or Pass" in draft.title


@pytest.mark.parametrize(
    "other",
    [
        # A named tier whose first rule passes every packet on to the next tier.
        pytest.param(gnp("hand-on", [{"action": "Pass"}], tier="security"), id="tier-pass-all"),
        # A Deny evaluated after the Allow (higher order): the Allow has decided.
        pytest.param(
            gnp("late", [{"action": "Deny", "destination": METADATA}], order=900),
            id="higher-order-deny",
        ),
        # A Deny for other pods.
        pytest.param(
            gnp("web", [{"action": "Deny"}], tier="security", selector="app == 'web'"),
            id="other-pods",
        ),
    ],
)
def test_a_policy_not_before_the_allow_leaves_it_open(other):
    (draft,) = k8s007(other, ALLOW)
    assert draft.evidence["verdict"] == "not restricted"
    assert "allowed egress to the internet by" in draft.title
