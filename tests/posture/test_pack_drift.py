"""DRIFT-005: the pure comparison of a generated pack with the deployed objects (our own
fixtures in the shapes the pack generator makes), the rule over stored admission policies,
and its wiring to the enforcement app's generator."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

import posture.rules  # noqa: F401
from inventory.sources.normalise import normalise
from posture.policy_packs import deployed_dialects
from posture.rules.drift.pack import deployed_object
from posture.rules.drift.pack_diff import WEAKENED, pack_drift
from posture.rules.registry import run_checks
from tests.posture.admission_world import MANAGED, binding, kyverno, namespace, vap
from tests.posture.builders import inputs, pod, tenant
from tests.posture.test_admission_exceptions import exception

PARAMS = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "gpuposture-params", "namespace": "gpuposture", "labels": MANAGED},
    "data": {"external": "team-alpha"},
}


def vap_pack(actions=("Deny",)):
    return [vap(labels=MANAGED), binding(actions=actions, labels=MANAGED), PARAMS]


def as_deployed(objects):
    """What the API server hands back: our objects plus the fields it defaults."""
    deployed = copy.deepcopy([o for o in objects if o["kind"] != "ConfigMap"])
    for obj in deployed:
        obj["metadata"] |= {"uid": "8d0e6c1f", "resourceVersion": "4242", "generation": 1}
        if obj["kind"] == "ValidatingAdmissionPolicy":
            obj["spec"]["matchConstraints"]["matchPolicy"] = "Equivalent"
            obj["spec"]["matchConstraints"]["resourceRules"][0]["scope"] = "*"
        obj["status"] = {"observedGeneration": 1}
    return deployed


def changes(expected, deployed):
    return [(d.kind, d.name, d.change) for d in pack_drift(expected, deployed).differences]


def test_the_pack_as_applied_is_no_drift_whatever_the_server_defaults():
    comparison = pack_drift(vap_pack(), as_deployed(vap_pack()))
    assert comparison.differences == ()
    assert comparison.compared == 2
    assert comparison.not_compared == ("ConfigMap gpuposture/gpuposture-params",)


def test_a_missing_object_is_drift():
    deployed = [o for o in as_deployed(vap_pack()) if o["kind"] != "ValidatingAdmissionPolicy"]
    assert changes(vap_pack(), deployed) == [
        ("ValidatingAdmissionPolicy", "gpuposture-pod-rules", "missing")
    ]


def test_an_edited_expression_is_drift_with_its_path():
    deployed = as_deployed(vap_pack())
    deployed[0]["spec"]["validations"][0]["expression"] = "true"
    (difference,) = pack_drift(vap_pack(), deployed).differences
    assert difference.change == "changed"
    assert difference.paths == ("spec.validations[0].expression",)


def test_a_narrowing_added_by_hand_is_drift_but_an_empty_default_selector_is_not():
    deployed = as_deployed(vap_pack())
    # The API server defaults the selectors to {}: not a difference.
    deployed[0]["spec"]["matchConstraints"]["objectSelector"] = {}
    assert changes(vap_pack(), deployed) == []
    # A match condition that skips one namespace weakens the policy without touching its rule.
    deployed[0]["spec"]["matchConditions"] = [
        {"name": "skip-llm", "expression": "object.metadata.namespace != 'research-llm'"}
    ]
    (difference,) = pack_drift(vap_pack(), deployed).differences
    assert difference.change == "weakened"
    assert difference.paths == ("spec.matchConditions",)
    assert difference.detail == WEAKENED + "spec.matchConditions added"


TENANT_SELECTOR = {
    "matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["alpha", "alpha-dev"]}
    ]
}


def tenant_binding_pack():
    """A binding to one tenant's namespaces, as enforcement.build writes it."""
    return [vap(labels=MANAGED), binding(namespace_selector=TENANT_SELECTOR, labels=MANAGED)]


def test_a_namespace_dropped_from_a_bindings_selector_is_weakened_and_named():
    deployed = as_deployed(tenant_binding_pack())
    (names,) = deployed[1]["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
    names["values"] = ["alpha"]
    (difference,) = pack_drift(tenant_binding_pack(), deployed).differences
    assert (difference.kind, difference.change) == ("ValidatingAdmissionPolicyBinding", "weakened")
    assert difference.detail == WEAKENED + "namespaces not matched: alpha-dev"
    # A namespace the registry added after the pack was deployed reads the same: not "by hand".
    assert "deployed before the tenant registry changed" in difference.detail
    # One namespace more is a change, not a weakening.
    names["values"] = ["alpha", "alpha-dev", "alpha-test"]
    assert changes(tenant_binding_pack(), deployed) == [
        ("ValidatingAdmissionPolicyBinding", "gpuposture-pod-rules-external", "changed")
    ]


def test_resource_rules_excluded_from_a_binding_by_hand_are_weakened():
    deployed = as_deployed(tenant_binding_pack())
    deployed[1]["spec"]["matchResources"]["excludeResourceRules"] = [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
    ]
    (difference,) = pack_drift(tenant_binding_pack(), deployed).differences
    assert difference.change == "weakened"
    assert difference.paths == ("spec.matchResources.excludeResourceRules",)


def test_a_namespace_dropped_from_a_kyverno_rules_match_is_weakened():
    expected = [kyverno(namespaces=("alpha", "alpha-dev"), labels=MANAGED)]
    deployed = as_deployed([kyverno(namespaces=("alpha",), labels=MANAGED)])
    (difference,) = pack_drift(expected, deployed).differences
    assert difference.change == "weakened"
    assert "namespaces not matched: alpha-dev" in difference.detail


def test_an_edited_check_annotation_is_drift():
    deployed = as_deployed(vap_pack())
    deployed[0]["metadata"]["annotations"]["gpuposture.io/checks"] = "POD-002"
    assert changes(vap_pack(), deployed) == [
        ("ValidatingAdmissionPolicy", "gpuposture-pod-rules", "changed")
    ]


def test_audit_where_the_class_says_enforce_is_a_mode_difference():
    deployed = as_deployed(vap_pack(actions=("Audit", "Warn")))
    (difference,) = pack_drift(vap_pack(), deployed).differences
    assert (difference.change, difference.expected_mode, difference.deployed_mode) == (
        "mode",
        "Enforce",
        "Audit",
    )
    assert "Audit where the class says Enforce" in difference.detail


def test_kyverno_audit_where_enforce_and_per_rule_actions():
    expected = [kyverno(labels=MANAGED)]
    deployed = as_deployed([kyverno(action="Audit", labels=MANAGED)])
    assert changes(expected, deployed) == [("ClusterPolicy", "gpuposture-pod-rules", "mode")]
    # Kyverno 1.13 writes the action per rule; Enforce there is the same mode.
    per_rule = as_deployed([kyverno(action="Audit", labels=MANAGED)])
    per_rule[0]["spec"].pop("validationFailureAction")
    per_rule[0]["spec"]["rules"][0]["validate"]["failureAction"] = "Enforce"
    assert changes(expected, per_rule) == []


@pytest.mark.parametrize(
    ("where", "key", "value"),
    [
        ("spec", "admission", False),
        ("spec", "failurePolicy", "Ignore"),
        ("spec", "validationFailureActionOverrides", [{"action": "Audit", "namespaces": ["a*"]}]),
        ("rule", "failureActionOverrides", [{"action": "Audit", "namespaces": ["alpha"]}]),
        ("spec", "webhookConfiguration", {"matchConditions": [{"name": "x", "expression": "1>2"}]}),
    ],
)
def test_kyverno_switched_off_by_a_key_the_pack_leaves_out_is_drift(where, key, value):
    expected = [kyverno(labels=MANAGED)]
    deployed = as_deployed(expected)
    target = deployed[0]["spec"] if where == "spec" else deployed[0]["spec"]["rules"][0]["validate"]
    target[key] = value
    (difference,) = pack_drift(expected, deployed).differences
    assert difference.change == "weakened"
    assert difference.paths[0].endswith(key)


def test_kyverno_defaults_of_those_keys_are_no_drift():
    expected = [kyverno(labels=MANAGED)]
    deployed = as_deployed(expected)
    deployed[0]["spec"] |= {"admission": True, "failurePolicy": "Fail", "emitWarning": False}
    deployed[0]["spec"]["validationFailureActionOverrides"] = []
    assert changes(expected, deployed) == []


def test_a_deployed_object_of_ours_no_longer_generated_is_drift_and_others_are_not():
    stale = vap(name="gpuposture-old-rule", labels=MANAGED)
    theirs = vap(name="platform-team-rule")
    assert changes(vap_pack(), as_deployed([*vap_pack(), stale, theirs])) == [
        ("ValidatingAdmissionPolicy", "gpuposture-old-rule", "unexpected")
    ]


# --- the rule over what a sync stored ----------------------------------------------------------

ALPHA = tenant("alpha")


def cluster_with(deployed, packs):
    read = normalise(deployed)
    base = inputs(pods=(pod("alpha"),), tenants=(ALPHA,))
    snapshot = replace(base.snapshot, admission_policies=read.admission_policies)
    return replace(base, snapshot=snapshot, policy_packs=packs)


def test_drift005_reports_one_finding_per_dialect_from_stored_policies():
    deployed = [namespace("alpha"), *as_deployed(vap_pack(actions=("Audit",)))]
    world = cluster_with(deployed, {"vap": tuple(vap_pack())})
    (draft,) = run_checks(world, only=["DRIFT-005"])
    assert (draft.subject_kind, draft.subject_name, draft.tenants) == (
        "PolicyPack",
        "vap",
        ("alpha",),
    )
    assert draft.evidence["differences"][0]["change"] == "mode"
    assert "1 in a weaker mode" in draft.title


def test_drift005_is_silent_when_the_stored_pack_matches_or_nothing_is_generated():
    deployed = as_deployed(vap_pack())
    assert run_checks(cluster_with(deployed, {"vap": tuple(vap_pack())}), only=["DRIFT-005"]) == []
    assert run_checks(cluster_with(deployed, {}), only=["DRIFT-005"]) == []


def test_stored_policies_round_trip_to_the_objects_compared():
    (policy,) = normalise([vap(labels=MANAGED)]).admission_policies
    obj = deployed_object(policy)
    assert obj["metadata"]["labels"] == MANAGED
    assert pack_drift([vap(labels=MANAGED)], [obj]).differences == ()
    assert deployed_dialects(normalise([vap(labels=MANAGED), kyverno()])) == ["vap"]


@pytest.mark.django_db
def test_drift005_compares_with_the_enforcement_apps_generated_pack():
    from inventory.sync import cluster_get_or_create
    from posture.policy_packs import expected_policy_packs

    cluster = cluster_get_or_create(name="drift")
    snapshot = normalise([vap(labels=MANAGED)])
    packs = expected_policy_packs(cluster, snapshot)
    assert set(packs) == {"vap"}
    assert all(isinstance(o, dict) and o.get("kind") for o in packs["vap"])


# --- the adapter (posture/policy_packs.py) -----------------------------------------------------


def test_without_the_enforcement_app_no_pack_is_generated_and_drift005_is_silent():
    from posture import policy_packs

    snapshot = normalise([vap(labels=MANAGED), binding(labels=MANAGED)])
    registered = list(policy_packs._generator)
    policy_packs.pack_generator_register(None)
    try:
        assert policy_packs.expected_policy_packs(object(), snapshot) == {}
    finally:
        policy_packs._generator[:] = registered


def test_the_adapter_asks_the_generator_only_for_dialects_deployed():
    from posture import policy_packs

    asked = []

    def generate(cluster, dialect, inputs):
        asked.append((cluster, dialect))
        return [vap(labels=MANAGED)]

    registered = list(policy_packs._generator)
    policy_packs.pack_generator_register(generate)
    try:
        cluster = object()
        assert policy_packs.expected_policy_packs(cluster, normalise([kyverno()])) == {}
        assert asked == []  # none of ours deployed: nothing generated
        found = policy_packs.expected_policy_packs(
            cluster, normalise([vap(labels=MANAGED), kyverno()])
        )
        assert found == {"vap": (vap(labels=MANAGED),)}
        assert asked == [(cluster, "vap")]
    finally:
        policy_packs._generator[:] = registered


@pytest.mark.django_db
def test_the_enforcement_app_registers_the_pack_in_enforce_mode():
    from enforcement.packs import policy_pack
    from inventory.sync import cluster_get_or_create
    from posture import policy_packs

    cluster = cluster_get_or_create(name="drift")
    (generate,) = policy_packs._generator
    assert generate(cluster, "kyverno", None) == policy_pack(
        cluster, dialect="kyverno", mode="enforce"
    )


# --- Kyverno PolicyExceptions naming the pack's rules --------------------------------------------


def alpha_policy():
    return kyverno(name="gpuposture-alpha", namespaces=("alpha",), labels=MANAGED)


def exception_world(exception_obj, reads=()):
    deployed = [namespace("alpha"), *as_deployed([alpha_policy()]), exception_obj]
    world = cluster_with(deployed, {"kyverno": (alpha_policy(),)})
    return replace(world, snapshot=replace(world.snapshot, admission_reads=tuple(reads)))


def test_drift005_names_a_policy_exception_that_lifts_the_packs_rules():
    lifting = exception(("gpuposture-alpha", ["no-*"]), namespaces=("alp*",))
    (draft,) = run_checks(exception_world(lifting), only=["DRIFT-005"])
    (difference,) = draft.evidence["differences"]
    assert (difference["kind"], difference["name"], difference["change"]) == (
        "PolicyException",
        "research-profiling",
        "lifted",
    )
    assert difference["detail"] == (
        "lifted by PolicyException kyverno/research-profiling for namespaces alpha: "
        "rule(s) no-privileged of gpuposture-alpha"
    )
    assert "1 difference(s) from the generated pack, 1 in a weaker mode" in draft.title


@pytest.mark.parametrize(
    "other",
    [
        exception(("gpuposture-alpha", ["no-privileged"]), namespaces=("beta",)),
        exception(("platform-baseline", ["no-privileged"]), namespaces=("alpha",)),
        exception(("gpuposture-alpha", ["no-host-*"]), namespaces=("alpha",)),
        # Deployments alone: the pods they make still meet the Pod rule.
        exception(("gpuposture-alpha", ["no-privileged"]), kinds=("Deployment",)),
    ],
    ids=["other-namespace", "other-policy", "other-rule", "not-pods"],
)
def test_an_exception_that_lifts_nothing_of_the_pack_is_no_drift(other):
    assert run_checks(exception_world(other), only=["DRIFT-005"]) == []


def test_unread_policy_exceptions_are_said_not_compared():
    from inventory.snapshot_admission import FORBIDDEN, AdmissionRead

    lifting = exception(("gpuposture-alpha", ["no-privileged"]))
    read = AdmissionRead("kyverno.io/policyexceptions", FORBIDDEN, "403")
    (draft,) = run_checks(exception_world(lifting, reads=(read,)), only=["DRIFT-005"])
    assert "kyverno.io/policyexceptions (forbidden: 403)" in draft.evidence["not_compared"]
