"""What the generated pack reaches on a real API server: a debug container added through the
ephemeralcontainers subresource is judged by the pod rules, and a cluster without DRA
(resource.k8s.io/v1) still takes the Kyverno pod rules (Kyverno refuses a whole policy that
names a kind the cluster does not serve)."""

from __future__ import annotations

import pytest

from enforcement.rules import CLAIM_RULES, POD_RULES
from tests.enforcement.packs import pack

POD_RULE_IDS = {r.id for r in POD_RULES}


@pytest.mark.parametrize("mode", ["audit", "enforce"])
def test_vap_pod_rules_judge_debug_containers(mode):
    policies = [o for o in pack("vap", mode) if o["kind"] == "ValidatingAdmissionPolicy"]
    for policy in policies:
        rule_id = policy["metadata"]["labels"]["gpuposture.io/rule"]
        (resource_rule,) = policy["spec"]["matchConstraints"]["resourceRules"]
        if rule_id in POD_RULE_IDS:
            assert resource_rule["resources"] == ["pods", "pods/ephemeralcontainers"]
            assert "UPDATE" in resource_rule["operations"]
        else:
            assert not any("/" in r for r in resource_rule["resources"])


@pytest.mark.parametrize("mode", ["audit", "enforce"])
def test_kyverno_pod_rules_judge_debug_containers(mode):
    for policy in (o for o in pack("kyverno", mode) if o["kind"] == "ClusterPolicy"):
        for rule in policy["spec"]["rules"]:
            kinds = rule["match"]["any"][0]["resources"]["kinds"]
            if rule["name"] in POD_RULE_IDS:
                assert kinds == ["Pod", "Pod/ephemeralcontainers"]


def test_kyverno_dra_rules_have_policies_of_their_own():
    policies = [o for o in pack("kyverno", "enforce") if o["kind"] == "ClusterPolicy"]
    claim_ids = {r.id for r in CLAIM_RULES}
    for policy in policies:
        kinds = {
            k
            for rule in policy["spec"]["rules"]
            for k in rule["match"]["any"][0]["resources"]["kinds"]
        }
        dra = {k for k in kinds if k.startswith("resource.k8s.io/")}
        assert not dra or dra == kinds, policy["metadata"]["name"]
    names = {p["metadata"]["name"]: {r["name"] for r in p["spec"]["rules"]} for p in policies}
    assert names["gpuposture-alpha"] == POD_RULE_IDS
    assert names["gpuposture--dra-alpha"] == claim_ids
    assert names["gpuposture--dra-secure"] == claim_ids
