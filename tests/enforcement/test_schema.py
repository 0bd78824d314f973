"""The generated objects are valid: VAP, bindings, ConfigMaps and the Namespace against the
OpenAPI models of the pinned `kubernetes` client (every field known, every required field
present, enumerations as the API server accepts them); Kyverno ClusterPolicies against the
fields Kyverno's ClusterPolicy CRD defines.

No registry package ships Kyverno's CRD schema for offline use, so the Kyverno checks below
are written from the CRD (kyverno.io/v1 ClusterPolicy, Kyverno 1.11+ for `validate.cel` and
`celPreconditions`): the required fields and enumerations our packs rely on.
"""

from __future__ import annotations

import re

import pytest
import yaml
from kubernetes import client

from enforcement.build import CHECKS, MANAGED_BY
from enforcement.render import kustomize_files, pack_yaml
from enforcement.rules import RULES
from tests.enforcement.packs import pack

MODELS = {
    "ValidatingAdmissionPolicy": client.V1ValidatingAdmissionPolicy,
    "ValidatingAdmissionPolicyBinding": client.V1ValidatingAdmissionPolicyBinding,
    "ConfigMap": client.V1ConfigMap,
    "Namespace": client.V1Namespace,
}
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
CONFIGMAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


def strict(model: type, data: object, path: str) -> None:
    """Every key of `data` is a field of the model (from_dict alone drops unknown keys)."""
    if not isinstance(model, type) or not hasattr(model, "attribute_map"):
        return
    assert isinstance(data, dict), path
    fields = {json: attr for attr, json in model.attribute_map.items()}
    for key, value in data.items():
        assert key in fields, f"{path}.{key} is not a field of {model.__name__}"
        kind = model.openapi_types[fields[key]]
        inner = re.fullmatch(r"List\[(\w+)\]", kind)
        if inner:
            for i, item in enumerate(value):
                strict(getattr(client, inner.group(1), None), item, f"{path}.{key}[{i}]")
        else:
            strict(getattr(client, kind, None), value, f"{path}.{key}")


@pytest.mark.parametrize("mode", ["audit", "enforce"])
def test_vap_pack_validates_against_the_kubernetes_models(mode):
    objects = pack("vap", mode)
    kinds = {o["kind"] for o in objects}
    assert kinds == set(MODELS)
    for obj in objects:
        model = MODELS[obj["kind"]]
        strict(model, obj, obj["kind"])
        parsed = model.from_dict(obj)  # required fields and types (pydantic)
        assert parsed.metadata.name == obj["metadata"]["name"]
        assert DNS_SUBDOMAIN.match(obj["metadata"]["name"])
    for binding in (o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"):
        actions = binding["spec"]["validationActions"]
        assert set(actions) <= {"Deny", "Warn", "Audit"} and actions
        assert not {"Deny", "Warn"} <= set(actions)  # the API server refuses the pair
        assert binding["spec"]["paramRef"]["parameterNotFoundAction"] in ("Allow", "Deny")
        assert ("Deny" in actions) == (mode == "enforce")
    for policy in (o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"):
        assert policy["spec"]["failurePolicy"] in ("Fail", "Ignore")
        for condition in policy["spec"].get("matchConditions", []):
            assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", condition["name"])
    for cm in (o for o in objects if o["kind"] == "ConfigMap"):
        assert all(CONFIGMAP_KEY.match(k) and isinstance(v, str) for k, v in cm["data"].items())


def test_every_rule_is_in_the_vap_pack_with_its_check():
    objects = pack("vap")
    policies = {
        o["metadata"]["name"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"
    }
    for rule in RULES:
        policy = policies[f"gpuposture-{rule.id}"]
        assert policy["metadata"]["annotations"][CHECKS] == rule.check
        assert policy["spec"]["validations"][0]["expression"] == rule.expression


def check_kyverno_policy(obj: dict) -> None:
    assert obj["apiVersion"] == "kyverno.io/v1" and obj["kind"] == "ClusterPolicy"
    assert DNS_SUBDOMAIN.match(obj["metadata"]["name"])
    spec = obj["spec"]
    assert set(spec) <= {
        "validationFailureAction",
        "background",
        "rules",
        "admission",
        "failurePolicy",
        "webhookConfiguration",
    }
    assert spec["validationFailureAction"] in ("Audit", "Enforce", "audit", "enforce")
    assert isinstance(spec["background"], bool)
    assert spec["rules"], "a ClusterPolicy needs at least one rule"
    names = [r["name"] for r in spec["rules"]]
    assert len(names) == len(set(names))
    for rule in spec["rules"]:
        assert set(rule) <= {
            "name",
            "match",
            "exclude",
            "validate",
            "celPreconditions",
            "preconditions",
            "context",
        }
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", rule["name"])
        assert len(rule["name"]) <= 63
        # match: `any` or `all` of resource filters, each with kinds
        filters = rule["match"].get("any") or rule["match"].get("all")
        assert filters and all(f["resources"]["kinds"] for f in filters)
        for f in filters:
            assert set(f["resources"]) <= {
                "kinds",
                "namespaces",
                "names",
                "operations",
                "selector",
                "namespaceSelector",
            }
            assert set(f["resources"].get("operations", [])) <= {
                "CREATE",
                "UPDATE",
                "DELETE",
                "CONNECT",
            }
        # validate: exactly one of pattern, anyPattern, deny, podSecurity, cel, ...
        validate = rule["validate"]
        assert set(validate) == {"cel"}
        cel = validate["cel"]
        assert set(cel) <= {"expressions", "paramKind", "paramRef", "auditAnnotations", "variables"}
        assert cel["expressions"] and all(
            set(e) <= {"expression", "message", "messageExpression", "reason"} and e["expression"]
            for e in cel["expressions"]
        )
        assert set(cel["paramKind"]) == {"apiVersion", "kind"}
        assert cel["paramRef"]["parameterNotFoundAction"] in ("Allow", "Deny")
        assert {"name", "namespace"} <= set(cel["paramRef"])
        for v in cel.get("variables", []):
            assert set(v) == {"name", "expression"}
        for c in rule.get("celPreconditions", []):
            assert set(c) == {"name", "expression"}


@pytest.mark.parametrize("mode", ["audit", "enforce"])
def test_kyverno_pack_has_the_fields_of_the_clusterpolicy_crd(mode):
    objects = pack("kyverno", mode)
    policies = [o for o in objects if o["kind"] == "ClusterPolicy"]
    assert len(policies) == 5  # two tenants' pod and DRA policies, and the nodes
    for policy in policies:
        check_kyverno_policy(policy)
        expected = "Enforce" if mode == "enforce" else "Audit"
        assert policy["spec"]["validationFailureAction"] == expected
    for obj in objects:
        if obj["kind"] in MODELS:
            strict(MODELS[obj["kind"]], obj, obj["kind"])
            MODELS[obj["kind"]].from_dict(obj)
    rules = {r["name"] for p in policies for r in p["spec"]["rules"]}
    assert rules == {r.id for r in RULES}


@pytest.mark.parametrize("dialect", ["vap", "kyverno"])
def test_every_object_is_labelled_and_names_its_checks(dialect):
    for obj in pack(dialect):
        assert obj["metadata"]["labels"][MANAGED_BY] == "gpuposture"
        checks = obj["metadata"]["annotations"][CHECKS].split(",")
        assert checks and all(re.fullmatch(r"[A-Z0-9]+-\d{3}", c) for c in checks)


@pytest.mark.parametrize("dialect", ["vap", "kyverno"])
def test_yaml_and_kustomize_files_round_trip(dialect):
    objects = pack(dialect)
    assert list(yaml.safe_load_all(pack_yaml(objects))) == objects
    files = kustomize_files(objects)
    kustomization = yaml.safe_load(files["kustomization.yaml"])
    assert kustomization["resources"] == [n for n in files if n != "kustomization.yaml"]
    assert [yaml.safe_load(files[n]) for n in kustomization["resources"]] == objects


def test_the_strict_check_catches_a_misspelt_field():
    policy = pack("vap")[-2]
    assert policy["kind"] == "ValidatingAdmissionPolicy"
    policy["spec"]["validations"][0]["messsage"] = "typo"
    with pytest.raises(AssertionError, match="messsage"):
        strict(client.V1ValidatingAdmissionPolicy, policy, "policy")
