"""The redaction rule (tenants.redaction), as a table of cases: no database."""

from __future__ import annotations

import pytest

from tenants.redaction import (
    HIDDEN_ADVISORY,
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


def test_other_parties_pods_are_hidden_by_bare_name_in_what_people_type_only():
    """People name a pod bare ("before Cedar's c3dar-score-0"); the product names it with its
    namespace, so a tenant's pod named like a tool ("nvidia-smi") hides no word of a title."""
    scope = HiddenScope(
        tenants=frozenset({"c3dar"}), typed_objects=frozenset({"c3dar-score-0", "nvidia-smi"})
    )
    declared = {"note": Field.TYPED, "title": Field.TEXT}
    row = {
        "note": "after c3dar's c3dar-score-0 ran nvidia-smi; before trainer-0",
        "title": "nvidia-smi -q -x reads c3dar-score-0 for c3dar",
    }
    scope.fields(row, declared)
    assert row == {
        "note": f"after {HIDDEN_TENANT}'s {HIDDEN_OBJECT} ran {HIDDEN_OBJECT}; before trainer-0",
        "title": f"nvidia-smi -q -x reads c3dar-score-0 for {HIDDEN_TENANT}",
    }
    # A slug joined by a hyphen to other words is not the slug as a word: another name.
    assert scope.text("c3dar-testers") == "c3dar-testers"


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


# Bulletins a viewer may not read (TLP other than CLEAR/WHITE): their ids and CVEs.
MARKED = HiddenScope(
    advisories=frozenset({"amb-1", "RHSA-2026:0101"}), cves=frozenset({"CVE-2026-0001"})
)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "driver 570.1: amb-1 (CVE-2026-0001): open",
            f"driver 570.1: {HIDDEN_ADVISORY} ({HIDDEN_ADVISORY}): open",
        ),
        (
            "branch R550 is not in bulletin RHSA-2026:0101, which",
            f"branch R550 is not in bulletin {HIDDEN_ADVISORY}, which",
        ),
        ("firmware: VBIOS version unknown (pub-2 names firmware)", None),
        # Ids are the same ids in any case: a note typed in lower case names them too.
        (
            "tracked as cve-2026-0001 (see rhsa-2026:0101, AMB-1)",
            f"tracked as {HIDDEN_ADVISORY} (see {HIDDEN_ADVISORY}, {HIDDEN_ADVISORY})",
        ),
        ("Cve-2026-0001 is open", f"{HIDDEN_ADVISORY} is open"),
    ],
)
def test_a_hidden_advisory_is_not_named_in_text(text, shown):
    assert MARKED.text(text) == (shown or text)


def test_a_record_of_a_hidden_advisory_keeps_the_nodes_facts():
    record = {
        "component": "driver",
        "installed": "570.1",
        "fixed_version": "570.2",
        "affected": "< 570.2",
        "cves": ["CVE-2026-0001", "CVE-2026-0002"],
        "max_cvss": 9.1,
        "severity": "critical",
        "advisory_id": "amb-1",
        "released": "2026-01-01",
        "condition": "only with the vendor's secret switch",
        "condition_status": "unverified",
        "reason": {"code": "condition_unverified", "text": "the vendor's secret switch"},
    }
    public = record | {"advisory_id": "pub-2", "cves": ["CVE-2026-0002"]}
    evidence = {"exposures": [record, public], "cves": ["CVE-2026-0001", "CVE-2026-0002"]}
    shown = MARKED.value(evidence)
    hidden, kept = shown["exposures"]
    assert kept == public and shown["cves"] == ["CVE-2026-0002"]
    assert set(hidden) == set(record)
    assert hidden["advisory_id"] == HIDDEN_ADVISORY and hidden["cves"] == []
    assert hidden["max_cvss"] is None and hidden["condition"] is None
    assert "secret" not in str(hidden) and hidden["reason"]["code"] == "condition_unverified"
    assert {k: hidden[k] for k in ("component", "installed", "fixed_version", "severity")} == {
        k: record[k] for k in ("component", "installed", "fixed_version", "severity")
    }
    assert evidence["exposures"][0]["advisory_id"] == "amb-1"  # the stored row is untouched
    assert HiddenScope().value(evidence) is evidence


def test_a_hidden_cve_in_lower_case_is_hidden_in_values_and_lists():
    evidence = {"cves": ["cve-2026-0001", "CVE-2026-0002"], "note": "see cve-2026-0001"}
    shown = MARKED.value(evidence)
    assert shown == {"cves": ["CVE-2026-0002"], "note": f"see {HIDDEN_ADVISORY}"}
    assert MARKED.value({"advisory_id": "Amb-1", "cves": []})["advisory_id"] == HIDDEN_ADVISORY


def test_a_hidden_advisorys_no_fix_keeps_its_category_not_the_vendors_words():
    record = {"advisory_id": "amb-1", "no_fix": "no_fix_planned: the secret branch is retired"}
    assert MARKED.value({"exposures": [record]})["exposures"][0]["no_fix"] == "no_fix_planned"


def test_a_hidden_advisorys_no_fix_in_the_findings_summary_keeps_only_its_category():
    # STACK-00x evidence lists the no-fix statements beside the exposures: each names its
    # advisory, so the vendor's words of a hidden one go as they do in the exposure.
    evidence = {
        "no_fix": [
            {"advisory_id": "amb-1", "no_fix": "no_fix_planned: the secret branch is retired"},
        ]
    }
    (said,) = MARKED.value(evidence)["no_fix"]
    assert said["no_fix"] == "no_fix_planned" and "secret" not in str(said)


def test_a_title_that_grows_with_hidden_names_still_fits_its_column():
    # "beta" is 4 characters, its token 16: a full-length title would outgrow the 300 the
    # schema promises (the fuzzer found a 300-character RBAC title naming several tenants).
    from inventory.presenter import present
    from posture.models import Finding

    title = ("beta may write in beta-prod; " * 11)[:300]
    row = {"title": title, "tenants": ["alpha", "beta"], "evidence": {}}
    shown = present(SCOPE, row, Finding)["title"]
    assert len(shown) == 300 and shown.endswith("…")
    assert "beta" not in shown.replace(HIDDEN_TENANT, "")
    short = present(SCOPE, {"title": "beta shares a GPU", "evidence": {}}, Finding)["title"]
    assert short == f"{HIDDEN_TENANT} shares a GPU"


# Display names of several words, and the viewer's own tenants' names beside them.
NAMED = HiddenScope(
    tenants=frozenset({"beta", "Beta Corp", "orbital", "Orbital Research", "research", "Research"}),
    names=frozenset({"Beta Corp", "Orbital Research", "Research"}),
    own_names=frozenset({"Beta Corp Labs", "Team Alpha", "Research Labs"}),
)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Accepted: Beta Corp agreed", f"Accepted: {HIDDEN_TENANT} agreed"),
        # Several words: any case and spacing, a sentence's end, a possessive.
        ("beta  corp and BETA CORP.", f"{HIDDEN_TENANT} and {HIDDEN_TENANT}."),
        ("Beta Corp's GPU", f"{HIDDEN_TENANT}'s GPU"),
        ("Orbital\nResearch shares it", f"{HIDDEN_TENANT} shares it"),
        # Longest first: the viewer's own "Beta Corp Labs" is read whole, not half-hidden.
        ("Beta Corp Labs and Beta Corp", f"Beta Corp Labs and {HIDDEN_TENANT}"),
        ("Team Alpha with beta", f"Team Alpha with {HIDDEN_TENANT}"),
        # One word: only as the tenant wrote it (its slug, lower case, is a word as always).
        ("Research needs the GPU", f"{HIDDEN_TENANT} needs the GPU"),
        ("ReSearch on the GPU", "ReSearch on the GPU"),
        ("Research Labs and Research", f"Research Labs and {HIDDEN_TENANT}"),  # theirs whole
        # Inside a longer name: someone else's.
        ("team-Beta Corp and beta-corp", "team-Beta Corp and beta-corp"),
        ("Beta Corporation", "Beta Corporation"),
    ],
)
def test_display_names_are_hidden_as_whole_phrases(text, shown):
    assert NAMED.text(text) == shown


def test_a_name_in_structured_values_and_one_with_an_accent():
    assert NAMED.value({"note": "shared with beta corp"}) == {
        "note": f"shared with {HIDDEN_TENANT}"
    }
    evidence = {"note": "Beta Corp Labs only"}
    assert NAMED.value(evidence) is evidence  # the viewer's own name: nothing hidden, no copy
    # The compact scan reads a value as written: an accented name is found in it.
    accented = HiddenScope(tenants=frozenset({"Zürich"}), names=frozenset({"Zürich"}))
    assert accented.value({"site": ["Zürich"]}) == {"site": [HIDDEN_TENANT]}
    assert accented.value({"note": "for Zürich"}) == {"note": f"for {HIDDEN_TENANT}"}


def test_a_scan_for_names_looks_only_for_those_a_text_may_hold():
    # Five thousand tenants named alike: a text is scanned for the few it may name.
    names = frozenset(f"Company {i} Holdings" for i in range(5000))
    scope = HiddenScope(tenants=names, names=names)
    text = "Company 4999 Holdings agreed; company  12 HOLDINGS too; Company 7 Ltd did not"
    assert scope.text(text) == f"{HIDDEN_TENANT} agreed; {HIDDEN_TENANT} too; Company 7 Ltd did not"
    assert scope._phrases(["Company", "4999", "Holdings"]).pattern.count("|") == 0


def test_a_record_of_a_hidden_tenants_hides_its_images_as_well():
    """A workload finding's evidence says whose it is (`tenant`): read by a neighbour
    (posture.rules.pod.neighbours), its images and container names, which no word of the scope
    matches, are hidden; the viewer's own records keep theirs."""
    theirs = {
        "tenant": "beta",
        "containers": [{"container": "main", "image": "docker.io/betacorp/infer:2.3"}],
        "neighbours": {"alpha": {"nodes": ["gpu-1"], "node_count": 1}},
    }
    shown = SCOPE.value(theirs)
    assert shown["tenant"] == HIDDEN_TENANT
    assert shown["containers"] == [{"container": HIDDEN_OBJECT, "image": HIDDEN_OBJECT}]
    assert shown["neighbours"] == theirs["neighbours"]
    own = {"tenant": "alpha", "containers": [{"image": "docker.io/alpha/x:1"}], "peer": "beta"}
    assert SCOPE.value(own)["containers"] == own["containers"]
