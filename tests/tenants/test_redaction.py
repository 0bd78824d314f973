"""The redaction rule (tenants.redaction), as a table of cases: no database."""

from __future__ import annotations

import pytest

from tenants.redaction import (
    HIDDEN_NAMESPACE,
    HIDDEN_OBJECT,
    HIDDEN_PRINCIPAL,
    HIDDEN_TENANT,
    Field,
    HiddenScope,
    hide_text,
    tenant_rows,
    visible_tenants,
)

SCOPE = HiddenScope(
    tenants=frozenset({"beta", "Beta Corp"}),
    namespaces=frozenset({"beta-prod", "beta-jobs"}),
    principals=frozenset({"group:beta-ops", "beta-ops", "ops@beta.example"}),
)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Tenant alpha time-slices with beta", f"Tenant alpha time-slices with {HIDDEN_TENANT}"),
        ("shared with beta.", f"shared with {HIDDEN_TENANT}."),  # a sentence's end
        ("beta's ConfigMap", f"{HIDDEN_TENANT}'s ConfigMap"),
        ("pod beta-prod/inference-0 holds it", f"pod {HIDDEN_OBJECT} holds it"),
        ("ConfigMap beta-jobs/ts key 'a'", f"ConfigMap {HIDDEN_OBJECT} key 'a'"),
        ("namespace beta-prod", f"namespace {HIDDEN_NAMESPACE}"),
        ("system:serviceaccount:beta-prod:runner", f"system:serviceaccount:{HIDDEN_OBJECT}"),
        ("bound to group:beta-ops", f"bound to group:{HIDDEN_PRINCIPAL}"),
        ("user ops@beta.example may patch", f"user {HIDDEN_PRINCIPAL} may patch"),
        (
            "gpuposture.io/tenant=beta:NoSchedule",
            f"gpuposture.io/tenant={HIDDEN_TENANT}:NoSchedule",
        ),
        # A DRA claim as co-tenancy evidence names it: with its namespace, it is hidden whole.
        ("resourceclaim/beta-prod/rag-ts-gpu", f"resourceclaim/{HIDDEN_OBJECT}"),
        (
            "ResourceClaim beta-prod/rag-ts-gpu: gpu.nvidia.com gpu-a/gpu-0; DRA GpuConfig",
            f"ResourceClaim {HIDDEN_OBJECT}: gpu.nvidia.com gpu-a/gpu-0; DRA GpuConfig",
        ),
        ("resourceclaim/team-alpha/train-gpu", "resourceclaim/team-alpha/train-gpu"),
        # Words that only contain a hidden name are someone else's: left alone.
        ("beta-testers and alphabeta", "beta-testers and alphabeta"),
        ("nothing hidden here", "nothing hidden here"),
    ],
)
def test_text(text, shown):
    assert SCOPE.text(text) == shown


def test_structured_values_keys_and_exact_names():
    evidence = {
        "tenant": "alpha",
        "other_tenants": [{"tenant": "beta", "pods": [{"pod": "beta-prod/inference-0"}]}],
        "by_tenant": {"beta": 2, "alpha": 1},
        "name": "Beta Corp",
        "subjects": ["group:beta-ops"],
        "replicas": 4,
    }
    assert SCOPE.value(evidence) == {
        "tenant": "alpha",
        "other_tenants": [{"tenant": HIDDEN_TENANT, "pods": [{"pod": HIDDEN_OBJECT}]}],
        "by_tenant": {HIDDEN_TENANT: 2, "alpha": 1},
        "name": HIDDEN_TENANT,
        "subjects": [HIDDEN_PRINCIPAL],
        "replicas": 4,
    }
    # Two hidden tenants as keys stay two entries (counted, never named).
    two = HiddenScope(tenants=frozenset({"beta", "gamma"}))
    assert two.value({"beta": 1, "gamma": 2}) == {HIDDEN_TENANT: 1, f"{HIDDEN_TENANT} 2": 2}


def test_what_names_nothing_hidden_is_the_same_object_not_a_copy():
    evidence = {"node": "gpu-1", "pods": [{"pod": "team-alpha/trainer-0"}]}
    assert SCOPE.value(evidence) is evidence
    title = "Tenant alpha on gpu-1"
    assert SCOPE.text(title) is title


def test_declared_fields_hide_a_subject_with_its_namespace():
    declared = {
        "subject_namespace": Field.NAMESPACE,
        "subject_name": Field.SUBJECT_NAME,
        "title": Field.TEXT,
        "evidence": Field.VALUE,
        "tenant": Field.TENANT,
    }
    row = {
        "subject_namespace": "beta-prod",
        "subject_name": "inference-0",
        "title": "x",
        "evidence": {"t": "beta"},
        "tenant": "beta",
    }
    SCOPE.fields(row, declared)
    assert row == {
        "subject_namespace": HIDDEN_NAMESPACE,
        "subject_name": HIDDEN_OBJECT,
        "title": "x",
        "evidence": {"t": HIDDEN_TENANT},
        "tenant": HIDDEN_TENANT,
    }
    own = {
        "subject_namespace": "team-alpha",
        "subject_name": "trainer-0",
        "title": "beta",
        "evidence": {},
        "tenant": "alpha",
    }
    SCOPE.fields(own, declared)
    assert own["subject_name"] == "trainer-0" and own["title"] == HIDDEN_TENANT
    assert own["subject_namespace"] == "team-alpha" and own["tenant"] == "alpha"
    # A cluster-scoped subject (no namespace) is looked at as text.
    node = {"subject_namespace": "", "subject_name": "beta", "title": "", "evidence": None}
    SCOPE.fields(node, declared)
    assert node["subject_name"] == HIDDEN_TENANT and node["evidence"] is None


def test_an_empty_scope_hides_nothing():
    assert HiddenScope().empty and not SCOPE.empty
    assert HiddenScope().text("beta-prod/x") == "beta-prod/x"


def test_objects_that_exist_for_a_hidden_tenant_are_hidden_by_name():
    scope = HiddenScope(objects=frozenset({"acme-node-patch"}))
    row = {
        "subject_namespace": "",
        "subject_name": "acme-node-patch",
        "title": "edit acme-node-patch",
    }
    scope.fields(
        row,
        {
            "subject_namespace": Field.NAMESPACE,
            "subject_name": Field.SUBJECT_NAME,
            "title": Field.TEXT,
        },
    )
    assert row == {
        "subject_namespace": "",
        "subject_name": "(another tenant's object)",
        "title": "edit (another tenant's object)",
    }


def test_objects_in_a_hidden_namespace_are_hidden_all_together():
    declared = {"namespace": Field.NAMESPACE, "consumers": Field.OBJECTS}
    theirs = {"namespace": "beta-prod", "consumers": ["trainer-0", "trainer-1"]}
    SCOPE.fields(theirs, declared)
    assert theirs == {"namespace": HIDDEN_NAMESPACE, "consumers": [HIDDEN_OBJECT] * 2}
    mine = {"namespace": "alpha-prod", "consumers": ["trainer-0", "beta"]}
    SCOPE.fields(mine, declared)
    assert mine == {"namespace": "alpha-prod", "consumers": ["trainer-0", HIDDEN_TENANT]}


def test_readers_of_every_tenant_have_no_scope_and_see_everything():
    assert hide_text(None, "shared with beta") == "shared with beta"
    assert visible_tenants(None, ["beta", "alpha"]) == ["alpha", "beta"]
    assert visible_tenants(SCOPE, ["beta", "alpha"]) == ["alpha"]
    pairs = [("alpha", "Alpha"), ("beta", "Beta Corp"), ("gamma", "Gamma")]
    assert tenant_rows(None, pairs) == [{"slug": s, "name": n} for s, n in pairs]


def test_each_hidden_tenant_is_a_nameless_row_after_the_others():
    pairs = [("beta", "Beta Corp"), ("alpha", "Alpha")]
    assert tenant_rows(SCOPE, pairs) == [
        {"slug": "alpha", "name": "Alpha"},
        {"slug": "", "name": HIDDEN_TENANT},
    ]
