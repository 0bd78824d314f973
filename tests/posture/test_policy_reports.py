"""Findings as Kubernetes policy reports, checked against the published shapes.

REPORT_SCHEMA restates, as JSON Schema, the openAPIV3Schema of the upstream CRDs:
openreports.io/v1alpha1 Report and ClusterReport (openreports/reports-api,
apis/openreports.io/v1alpha1/report_types.go and common.go) and wgpolicyk8s.io/v1alpha2
PolicyReport and ClusterPolicyReport (the wg-policy prototype CRDs as Kyverno ships them,
config/crds/policyreport/). The API server prunes fields a CRD does not declare, so an
unknown field is an error here (`additionalProperties: false`), as is a wrong type or enum."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import jsonschema
import pytest
import yaml
from django.core.management import call_command

from posture.exports import export_text
from posture.policy_reports import report_documents, report_items
from posture.rules import CHECKS

_STR = {"type": "string"}
_INT = {"type": "integer"}
OBJECT_REFERENCE = {  # core/v1 ObjectReference
    "type": "object",
    "additionalProperties": False,
    "properties": {
        k: _STR
        for k in ("apiVersion", "fieldPath", "kind", "name", "namespace", "resourceVersion", "uid")
    },
}
LABEL_SELECTOR = {"type": "object"}
RESULT = {
    "type": "object",
    "required": ["policy"],
    "additionalProperties": False,
    "properties": {
        "source": _STR,
        "policy": _STR,
        "rule": _STR,
        "category": _STR,
        "severity": {"enum": ["critical", "high", "low", "medium", "info"]},
        "timestamp": {
            "type": "object",
            "required": ["nanos", "seconds"],
            "additionalProperties": False,
            "properties": {
                "nanos": {"type": "integer", "minimum": 0, "maximum": 999999999},
                "seconds": _INT,
            },
        },
        "result": {"enum": ["pass", "fail", "warn", "error", "skip"]},
        "scored": {"type": "boolean"},
        "resources": {"type": "array", "items": OBJECT_REFERENCE},
        "resourceSelector": LABEL_SELECTOR,
        "message": _STR,
        "properties": {"type": "object", "additionalProperties": _STR},
    },
}
SUMMARY = {
    "type": "object",
    "additionalProperties": False,
    "properties": {k: _INT for k in ("pass", "fail", "warn", "error", "skip")},
}
METADATA = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {
            "type": "string",
            "pattern": r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
            "maxLength": 253,
        },
        "namespace": _STR,
        "labels": {
            "type": "object",
            "additionalProperties": {
                "type": "string",
                "pattern": r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$",
                "maxLength": 63,
            },
        },
    },
}


def report_schema(api_version: str, kind: str, namespaced: bool, source: bool) -> dict:
    properties = {
        "apiVersion": {"const": api_version},
        "kind": {"const": kind},
        "metadata": METADATA,
        "scope": OBJECT_REFERENCE,
        "scopeSelector": LABEL_SELECTOR,
        "summary": SUMMARY,
        "results": {"type": "array", "items": RESULT},
    }
    if source:  # openreports.io only: a report-level source (v1alpha2 has none)
        properties["source"] = _STR
        properties["configuration"] = {"type": "object"}
    schema = {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata"],
        "additionalProperties": False,
        "properties": properties,
    }
    if namespaced:
        schema["properties"]["metadata"] = {**METADATA, "required": ["name", "namespace"]}
    else:
        schema["properties"]["metadata"] = {
            **METADATA,
            "not": {"required": ["namespace"]},  # cluster-scoped
        }
    return schema


SCHEMAS = {
    ("openreports.io/v1alpha1", "Report"): report_schema(
        "openreports.io/v1alpha1", "Report", True, True
    ),
    ("openreports.io/v1alpha1", "ClusterReport"): report_schema(
        "openreports.io/v1alpha1", "ClusterReport", False, True
    ),
    ("wgpolicyk8s.io/v1alpha2", "PolicyReport"): report_schema(
        "wgpolicyk8s.io/v1alpha2", "PolicyReport", True, False
    ),
    ("wgpolicyk8s.io/v1alpha2", "ClusterPolicyReport"): report_schema(
        "wgpolicyk8s.io/v1alpha2", "ClusterPolicyReport", False, False
    ),
}


def check_shape(document: dict) -> None:
    schema = SCHEMAS[(document["apiVersion"], document["kind"])]
    jsonschema.Draft7Validator(schema).validate(document)
    counted = {k: 0 for k in ("pass", "fail", "warn", "error", "skip")}
    for result in document.get("results", []):
        counted[result["result"]] += 1
    assert document["summary"] == counted  # the summary counts what the report holds


def row(**kw) -> dict:
    base = {
        "id": 41,
        "check": "POD-001",
        "severity": "critical",
        "status": "open",
        "tenants": ["alpha"],
        "cluster": "prod-east",
        "subject_kind": "Deployment",
        "subject_namespace": "team-alpha",
        "subject_name": "trainer",
        "title": "Deployment team-alpha/trainer runs a privileged container",
        "evidence": {"container": "cuda", "securityContext.privileged": True},
        "remediation": "Remove privileged: true.",
        "mappings": ["SP800-53:AC-6"],
        "first_seen": "2026-11-30T08:00:00Z",
        "last_seen": "2026-12-02T09:30:00.250000Z",
        "accepted_reason": None,
        "accepted_until": None,
    }
    return base | kw


ROWS = [
    row(),
    row(
        id=42,
        check="POD-006",
        severity="medium",
        status="accepted",
        subject_name="notebook",
        title="GPU requests differ from limits",
        accepted_reason="Vendor image, fixed in Q1",
        accepted_until="2027-01-31T00:00:00Z",
    ),
    row(id=43, check="POD-007", severity="medium", status="resolved", subject_name="old"),
    row(
        id=44,
        check="K8S-001",
        severity="medium",
        subject_kind="Namespace",
        subject_namespace="team-beta",
        subject_name="team-beta",
        tenants=["beta"],
    ),
    row(
        id=45,
        check="STACK-001",
        severity="high",
        subject_kind="Node",
        subject_namespace="",
        subject_name="gpu-a100-1",
        tenants=["alpha", "beta"],
    ),
    row(
        id=46,
        check="SHARE-005",
        severity="low",
        subject_kind="SharingMode",
        subject_namespace="",
        subject_name="time-slicing",
    ),
    row(
        id=47,
        check="STACK-001",
        severity="high",
        cluster="neo-west",
        subject_kind="Node",
        subject_namespace="",
        subject_name="nw-h100-1",
    ),
]


@pytest.mark.parametrize("kind", ["openreports", "policyreport"])
def test_every_report_has_the_published_shape(kind):
    documents = report_documents(kind, ROWS, CHECKS, link="https://gp.example/api/v1/findings/")
    for document in documents:
        check_shape(document)
    kinds = [(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in documents]
    namespaced, cluster = (
        ("Report", "ClusterReport")
        if kind == "openreports"
        else ("PolicyReport", "ClusterPolicyReport")
    )
    # One report per namespace, one cluster-scoped report per cluster.
    assert kinds == [
        (namespaced, "team-alpha", "gpuposture-prod-east"),
        (namespaced, "team-beta", "gpuposture-prod-east"),
        (cluster, None, "gpuposture-neo-west"),
        (cluster, None, "gpuposture-prod-east"),
    ]


def test_results_map_status_severity_and_subject():
    alpha = report_documents("openreports", ROWS, CHECKS)[0]
    by_id = {r["properties"]["findingId"]: r for r in alpha["results"]}
    assert {k: (r["result"], r["scored"]) for k, r in by_id.items()} == {
        "41": ("fail", True),  # open
        "42": ("warn", False),  # accepted risk: unmet, not scored
        "43": ("pass", True),  # resolved
    }
    assert alpha["summary"] == {"pass": 1, "fail": 1, "warn": 1, "error": 0, "skip": 0}
    first = by_id["41"]
    assert first["policy"] == "POD-001" and first["rule"] == CHECKS["POD-001"].title
    assert first["severity"] == "critical" and first["source"] == "gpuposture"
    assert first["resources"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "trainer",
            "namespace": "team-alpha",
        }
    ]
    when = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)  # last_seen, to the nanosecond
    assert first["timestamp"] == {"seconds": int(when.timestamp()), "nanos": 250000000}
    assert by_id["42"]["properties"]["acceptedReason"] == "Vendor image, fixed in Q1"
    assert first["properties"]["evidence"].startswith('{"container": "cuda"')


def test_cluster_scoped_subjects_that_are_not_objects_carry_no_resource():
    cluster = report_documents("policyreport", ROWS, CHECKS)[-1]
    results = {r["policy"]: r for r in cluster["results"]}
    assert results["STACK-001"]["resources"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "gpu-a100-1"}
    ]
    assert "resources" not in results["SHARE-005"]  # a sharing mode is not a Kubernetes object
    assert results["SHARE-005"]["properties"]["subject"] == "SharingMode/time-slicing"


@pytest.mark.parametrize(
    ("kind", "api_version"),
    [("LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1"), ("Notebook", "kubeflow.org/v1")],
)
def test_a_controller_the_owner_chain_names_is_referenced_as_its_object(kind, api_version):
    (report,) = report_documents("openreports", [row(subject_kind=kind)], CHECKS)
    assert report["results"][0]["resources"] == [
        {"apiVersion": api_version, "kind": kind, "name": "trainer", "namespace": "team-alpha"}
    ]


@pytest.mark.parametrize(
    ("kind", "api_version", "expected"),
    [
        ("Rollout", "argoproj.io/v1alpha1", ("argoproj.io/v1alpha1", "Rollout")),
        ("CloneSet", "apps.kruise.io/v1alpha1", ("apps.kruise.io/v1alpha1", "CloneSet")),
        # A custom resource named with its group: the kind is the CRD's, by its apiVersion.
        (
            "StatefulSet.apps.kruise.io",
            "apps.kruise.io/v1beta1",
            ("apps.kruise.io/v1beta1", "StatefulSet"),
        ),
        ("PipelineRun", "tekton.dev/v1", ("tekton.dev/v1", "PipelineRun")),
        # A group that disagrees with the kind's own is not taken.
        ("StatefulSet.apps.kruise.io", "apps/v1", None),
    ],
)
def test_a_custom_resource_subject_is_referenced_by_the_api_version_its_owner_gave(
    kind, api_version, expected
):
    """exports.md: `resources` is left out only for subjects that are not Kubernetes objects.
    A workload the owner chain names is one; its owner reference told its apiVersion."""
    evidence = {"workload": f"{kind} team-alpha/trainer", "workload_api_version": api_version}
    (report,) = report_documents("openreports", [row(subject_kind=kind, evidence=evidence)], CHECKS)
    got = report["results"][0].get("resources")
    if expected is None:
        assert got is None
    else:
        assert got == [
            {
                "apiVersion": expected[0],
                "kind": expected[1],
                "name": "trainer",
                "namespace": "team-alpha",
            }
        ]


def test_an_api_version_told_for_another_workload_than_the_subject_is_not_taken():
    """A debug container's finding is its pod's: the evidence's workload is then the pod, and
    an apiVersion told for the controller would not be the pod's."""
    evidence = {
        "workload": "Rollout team-alpha/ranker",
        "workload_api_version": "argoproj.io/v1alpha1",
    }
    (report,) = report_documents(
        "openreports",
        [row(subject_kind="Rollout", subject_name="other", evidence=evidence)],
        CHECKS,
    )
    assert "resources" not in report["results"][0]


def test_a_tenant_viewer_gets_their_namespaces_only():
    documents = report_documents("openreports", ROWS, CHECKS, namespaces=frozenset({"team-beta"}))
    namespaces = [d["metadata"].get("namespace") for d in documents]
    assert namespaces == ["team-beta", None, None]


def reports(text: str) -> list[dict]:
    """The reports of an export: one JSON document (a v1 List, or one report)."""
    return report_items(json.loads(text))


def test_export_text_is_one_json_list_of_the_reports():
    text = "".join(export_text("openreports", ROWS, (), CHECKS))
    document = json.loads(text)  # JSON, which kubectl apply -f reads as YAML too
    assert (document["apiVersion"], document["kind"]) == ("v1", "List")
    assert [d["kind"] for d in document["items"]].count("Report") == 2
    assert yaml.safe_load(text) == document


def test_one_report_is_the_report_itself_and_none_an_empty_list():
    only = [r for r in ROWS if r.get("subject_namespace") == "team-beta"]
    document = json.loads("".join(export_text("policyreport", only, (), CHECKS)))
    assert document["kind"] == "PolicyReport" and document["metadata"]["namespace"] == "team-beta"
    check_shape(document)
    empty = json.loads("".join(export_text("policyreport", [], (), CHECKS)))
    assert empty == {"apiVersion": "v1", "kind": "List", "items": []}


# --- through the CLI and the API, on findings in the database ---------------------------------


@pytest.fixture
def findings_world(db):
    from django.utils import timezone

    from inventory.models import Cluster, Node, Pod
    from posture.models import Finding
    from tenants.models import Tenant, TenantNamespace, TrustClass

    now = timezone.now()
    cluster = Cluster.objects.create(name="lab")
    internal = TrustClass.objects.get(slug="internal")
    tenants = {}
    for slug in ("alpha", "beta"):
        tenant = Tenant.objects.create(slug=slug, name=slug.title(), trust_class=internal)
        TenantNamespace.objects.create(tenant=tenant, name=f"team-{slug}")
        node = Node.objects.create(
            cluster=cluster, name=f"gpu-{slug}", is_gpu_node=True, changed_at=now
        )
        Pod.objects.create(
            cluster=cluster,
            namespace=f"team-{slug}",
            name="p",
            node=node,
            tenant=tenant,
            phase="Running",
            changed_at=now,
        )
        finding = Finding.objects.create(
            check_id="POD-001",
            severity="critical",
            cluster=cluster,
            subject_kind="Pod",
            subject_namespace=f"team-{slug}",
            subject_name="p",
            fingerprint=f"f-{slug}",
            title=f"Pod team-{slug}/p is privileged",
            first_seen=now,
            last_seen=now,
        )
        finding.tenants.add(tenant)
        tenants[slug] = tenant
    shared = Finding.objects.create(
        check_id="SHARE-001",
        severity="critical",
        cluster=cluster,
        subject_kind="Node",
        subject_namespace="",
        subject_name="gpu-alpha",
        fingerprint="f-share",
        title="Tenants alpha and beta time-slice one GPU",
        first_seen=now,
        last_seen=now,
    )
    shared.tenants.add(*tenants.values())
    return tenants


def test_cli_writes_policy_reports(findings_world):
    out, err = io.StringIO(), io.StringIO()
    call_command("export_findings", "--format", "policyreport", stdout=out, stderr=err)
    documents = reports(out.getvalue())
    for document in documents:
        check_shape(document)
    assert [(d["kind"], d["metadata"].get("namespace")) for d in documents] == [
        ("PolicyReport", "team-alpha"),
        ("PolicyReport", "team-beta"),
        ("ClusterPolicyReport", None),
    ]
    assert "3 findings exported" in err.getvalue()


def test_api_export_for_a_tenant_viewer_holds_their_namespaces_only(findings_world, personas):
    from tests.conftest import api_client, content

    viewer = personas["viewer_alpha"]
    findings_world["alpha"].viewers.add(viewer)
    response = api_client(viewer).get("/api/v1/findings/export/?format=openreports")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    text = content(response).decode()
    documents = reports(text)
    assert [(d["kind"], d["metadata"].get("namespace")) for d in documents] == [
        ("Report", "team-alpha"),
        ("ClusterReport", None),
    ]
    assert (
        "team-beta" not in text
        and "beta" not in documents[1]["results"][0]["properties"]["tenants"]
    )
    link = documents[0]["results"][0]["properties"]["link"]
    assert link.startswith("http://testserver/api/v1/findings/") and link.endswith("/")
    lead = api_client(personas["security_lead"]).get(
        "/api/v1/findings/export/?format=openreports&tenant=beta"
    )
    namespaces = [d["metadata"].get("namespace") for d in reports(content(lead).decode())]
    assert namespaces == ["team-beta", None]  # the findings filters apply


def test_api_refuses_an_unknown_format(findings_world, personas):
    from tests.conftest import api_client

    response = api_client(personas["security_lead"]).get("/api/v1/findings/export/?format=xml")
    assert response.status_code == 400
    assert "openreports" in response.json()["detail"]


def test_the_findings_page_offers_both_report_downloads_with_its_filters(findings_world, personas):
    from django.test import Client

    client = Client()
    client.force_login(personas["security_lead"])
    page = client.get("/findings/?cluster=lab&status=open").content.decode()
    for kind in ("openreports", "policyreport"):
        assert f"/api/v1/findings/export/?format={kind}&amp;cluster=lab&amp;status=open" in page
