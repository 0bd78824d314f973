"""VEX per cluster from the bulletin judgements: statements, OpenVEX and CSAF 2.0 VEX.

The inputs are real-shaped: the demo's CSAF bulletins (NVIDIA's product-tree shape, public
facts) parsed by inventory.bulletins.csaf, judged by inventory.patching.status against node
versions and facts.
OpenVEX is checked against OPENVEX_SCHEMA, which restates the published OpenVEX 0.2.0 JSON
schema (openvex/spec, openvex_json_schema.json); CSAF against csaf-lib's verifier (the CSAF
2.0 JSON schema and the csaf_vex profile's mandatory tests), a maintained package that runs
offline."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime

import jsonschema
import pytest
from csaf_lib.verification.verifier import Verifier

from demo.bulletins import cdi_bulletin, dcgm_bulletin, driver_bulletin, toolkit_bulletin
from inventory.bulletins.csaf.document import parse_advisory
from inventory.bulletins.csaf.fixes import fixes
from inventory.bulletins.vex.csaf import csaf_document
from inventory.bulletins.vex.openvex import openvex_document
from inventory.bulletins.vex.statements import NodeJudgement, cluster_statements, counts
from inventory.conditions import NodeFacts
from inventory.patching.status import NodeStack, node_patch_status

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
_STR = {"type": "string"}
_IDENTIFIERS = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"purl": _STR, "@cpe22": _STR, "@cpe23": _STR},
}
_SUBCOMPONENT = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"@id": _STR, "identifiers": _IDENTIFIERS, "hashes": {"type": "object"}},
}
JUSTIFICATIONS = [
    "component_not_present",
    "vulnerable_code_not_present",
    "vulnerable_code_not_in_execute_path",
    "vulnerable_code_cannot_be_controlled_by_adversary",
    "inline_mitigations_already_exist",
]
OPENVEX_SCHEMA = {
    "type": "object",
    "required": ["@context", "@id", "author", "timestamp", "version", "statements"],
    "additionalProperties": False,
    "properties": {
        "@context": _STR,
        "@id": _STR,
        "author": _STR,
        "role": _STR,
        "timestamp": {"type": "string", "format": "date-time"},
        "last_updated": {"type": "string", "format": "date-time"},
        "version": {"type": "integer", "minimum": 1},
        "tooling": _STR,
        "statements": {
            "type": "array",
            "minItems": 1,
            "uniqueItems": True,
            "items": {
                "type": "object",
                "required": ["vulnerability", "status"],
                "additionalProperties": False,
                "properties": {
                    "@id": _STR,
                    "version": {"type": "integer", "minimum": 1},
                    "vulnerability": {
                        "type": "object",
                        "required": ["name"],
                        "additionalProperties": False,
                        "properties": {
                            "@id": _STR,
                            "name": _STR,
                            "description": _STR,
                            "aliases": {"type": "array", "items": _STR, "uniqueItems": True},
                        },
                    },
                    "timestamp": _STR,
                    "last_updated": _STR,
                    "products": {
                        "type": "array",
                        "uniqueItems": True,
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "@id": _STR,
                                "identifiers": _IDENTIFIERS,
                                "hashes": {"type": "object"},
                                "subcomponents": {
                                    "type": "array",
                                    "uniqueItems": True,
                                    "items": _SUBCOMPONENT,
                                },
                            },
                        },
                    },
                    "status": {
                        "enum": ["not_affected", "affected", "fixed", "under_investigation"]
                    },
                    "supplier": _STR,
                    "status_notes": _STR,
                    "justification": {"enum": JUSTIFICATIONS},
                    "impact_statement": _STR,
                    "action_statement": _STR,
                    "action_statement_timestamp": _STR,
                },
                "allOf": [
                    # not_affected: a justification or an impact statement, not both
                    {
                        "if": {"properties": {"status": {"const": "not_affected"}}},
                        "then": {
                            "oneOf": [
                                {
                                    "required": ["justification"],
                                    "not": {"required": ["impact_statement"]},
                                },
                                {
                                    "required": ["impact_statement"],
                                    "not": {"required": ["justification"]},
                                },
                            ]
                        },
                    },
                    {
                        "if": {"properties": {"status": {"const": "affected"}}},
                        "then": {"required": ["action_statement"]},
                    },
                ],
            },
        },
    },
}


def check_openvex(document: dict) -> None:
    jsonschema.Draft202012Validator(
        OPENVEX_SCHEMA, format_checker=jsonschema.FormatChecker()
    ).validate(document)


def csaf_failures(document: dict) -> list[str]:
    report = Verifier(document).run_all()
    return [
        f"{r.test_id} {r.message} {r.details}" for r in report.results if r.status.value == "fail"
    ]


def bulletin_fixes() -> list:
    return [
        f
        for b in (toolkit_bulletin, cdi_bulletin, dcgm_bulletin)
        for f in fixes(parse_advisory(b()))[0]
    ]


CDI_OFF = NodeFacts(cdi=False, sources={"cdi": "ClusterPolicy cluster-policy spec.cdi.enabled"})
CDI_ON = NodeFacts(cdi=True, sources={"cdi": "ClusterPolicy cluster-policy spec.cdi.enabled"})


def judged_nodes() -> list[NodeJudgement]:
    """Three nodes of one cluster: the same old toolkit with CDI off and on, and a patched
    node without a DCGM exporter."""
    found = bulletin_fixes()
    nodes = []
    for name, toolkit, dcgm, facts, absent in (
        ("gpu-legacy", "1.17.4", "3.3.9-3.6.1", CDI_OFF, frozenset()),
        ("gpu-cdi", "1.17.4", "3.3.9-3.6.1", CDI_ON, frozenset()),
        ("gpu-new", "1.17.8", None, CDI_ON, frozenset({"dcgm_exporter"})),
    ):
        versions = {"container_toolkit_version": toolkit, "dcgm_exporter_version": dcgm}
        status = node_patch_status(versions, found, NodeStack(not_installed=absent, facts=facts))
        nodes.append(NodeJudgement(name, "NVIDIA-H100-80GB-HBM3", status))
    return nodes


def by_key(statements) -> dict:
    return {(s.vulnerability, s.product.node, s.product.component): s for s in statements}


def test_statements_per_cve_and_node_component():
    found = by_key(cluster_statements(judged_nodes()))
    # A CDI-only flaw on a node not in CDI mode: not affected, the code is never run.
    legacy = found[("CVE-2025-23266", "gpu-legacy", "container_toolkit")]
    assert legacy.status == "not_affected"
    assert legacy.justification == "vulnerable_code_not_in_execute_path"
    assert "CDI" in legacy.impact and "cluster-policy" in legacy.impact
    # The same version with CDI on: affected, with the upgrade to make.
    cdi = found[("CVE-2025-23266", "gpu-cdi", "container_toolkit")]
    assert cdi.status == "affected" and cdi.justification is None
    assert "to 1.17.8 or later" in cdi.action and "demo-5659" in cdi.action
    # Past every bound: fixed, for both bulletins' CVEs.
    assert found[("CVE-2025-23266", "gpu-new", "container_toolkit")].status == "fixed"
    assert found[("CVE-2025-23359", "gpu-new", "container_toolkit")].status == "fixed"
    # No exporter on the node: not affected, the component is not there.
    absent = found[("CVE-2026-47483", "gpu-new", "dcgm_exporter")]
    assert (absent.status, absent.justification) == ("not_affected", "component_not_present")
    assert absent.product.version is None
    assert found[("CVE-2026-47483", "gpu-legacy", "dcgm_exporter")].status == "affected"
    # One statement per (vulnerability, node component), whatever the number of bounds.
    keys = [(s.vulnerability, s.product.id) for s in cluster_statements(judged_nodes())]
    assert len(keys) == len(set(keys))


def test_openvex_document_has_the_published_shape():
    statements = cluster_statements(judged_nodes())
    document = openvex_document("prod-east", statements, now=NOW)
    check_openvex(document)
    assert document["timestamp"] == "2026-12-03T12:00:00Z"
    legacy = next(
        s
        for s in document["statements"]
        if s["vulnerability"]["name"] == "CVE-2025-23266" and s["status"] == "not_affected"
    )
    assert legacy["justification"] == "vulnerable_code_not_in_execute_path"
    assert legacy["vulnerability"]["aliases"] == ["demo-5659"]
    (product,) = legacy["products"]
    assert product["@id"] == "urn:gpuposture:node:prod-east:gpu-legacy"
    assert product["subcomponents"][0]["identifiers"]["purl"] == (
        "pkg:generic/nvidia/nvidia-container-toolkit@1.17.4?node=gpu-legacy"
    )
    # The same facts give the same id; a changed judgement a new one.
    assert openvex_document("prod-east", statements, now=NOW)["@id"] == document["@id"]
    assert openvex_document("prod-east", statements[1:], now=NOW)["@id"] != document["@id"]


def test_the_schema_check_catches_what_the_spec_forbids():
    document = openvex_document("prod-east", cluster_statements(judged_nodes()), now=NOW)
    broken = copy.deepcopy(document)
    affected = next(s for s in broken["statements"] if s["status"] == "affected")
    del affected["action_statement"]
    with pytest.raises(jsonschema.ValidationError):
        check_openvex(broken)


def test_csaf_vex_passes_the_verifier():
    statements = cluster_statements(judged_nodes())
    document = csaf_document("prod-east", statements, now=NOW, namespace="https://gp.example/")
    assert csaf_failures(document) == []
    assert document["document"]["category"] == "csaf_vex"
    (vuln,) = [v for v in document["vulnerabilities"] if v.get("cve") == "CVE-2025-23266"]
    assert vuln["product_status"] == {
        "fixed": ["gpu-new:container_toolkit"],
        "known_affected": ["gpu-cdi:container_toolkit"],
        "known_not_affected": ["gpu-legacy:container_toolkit"],
        # The bulletin names the device plugin and GPU Operator too; no node states their
        # versions nor that they are absent: not known (tests/inventory/test_vex_unread.py).
        "under_investigation": [
            f"{node}:{component}"
            for node in ("gpu-cdi", "gpu-legacy", "gpu-new")
            for component in ("device_plugin", "gpu_operator")
        ],
    }
    assert {
        "label": "vulnerable_code_not_in_execute_path",
        "product_ids": ["gpu-legacy:container_toolkit"],
    } in vuln["flags"]
    fix = next(r for r in vuln["remediations"] if "gpu-cdi:container_toolkit" in r["product_ids"])
    assert fix["category"] == "vendor_fix" and "1.17.8" in fix["details"]
    names = {p["product_id"]: p for p in document["product_tree"]["full_product_names"]}
    assert names["gpu-new:dcgm_exporter"]["product_identification_helper"]["purl"] == (
        "pkg:generic/nvidia/dcgm-exporter?node=gpu-new"
    )


def test_the_verifier_catches_a_missing_action_or_impact():
    document = csaf_document("prod-east", cluster_statements(judged_nodes()), now=NOW)
    broken = copy.deepcopy(document)
    for vuln in broken["vulnerabilities"]:
        vuln.pop("remediations", None)
        vuln.pop("flags", None)
        vuln.pop("threats", None)
    failures = csaf_failures(broken)
    assert any("action statement" in f for f in failures), failures
    assert any("impact statement" in f for f in failures), failures


def test_counts():
    # 2 CDI CVEs x 3 nodes, the February toolkit CVE x 3 (all past 1.17.3), the exporter CVE
    # x 3: the exporter is affected on the two nodes that run it, and so is the DCGM its image
    # bundles (3.3.9, below the bulletin's DCGM fix), judged only where an exporter runs.
    # The device plugin (2 CDI CVEs) and GPU Operator (those and the February one), whose
    # versions no node states, on 3 nodes: 15 under investigation.
    assert counts(cluster_statements(judged_nodes())) == {
        "affected": 6,
        "fixed": 5,
        "not_affected": 3,
        "under_investigation": 15,
    }


def test_a_driver_on_a_branch_no_bulletin_names_is_stated_under_investigation():
    # The demo's April driver bulletin fixes R550 and R535; a node on R570 is unknown on the
    # patch page, and both documents say so for each driver CVE, with why (valid in both).
    found = fixes(parse_advisory(driver_bulletin()))[0]
    status = node_patch_status({"driver_version": "570.172.08"}, found)
    statements = cluster_statements([NodeJudgement("gpu-r570", None, status)])
    document = openvex_document("prod-east", statements, now=NOW)
    check_openvex(document)
    driver = [s for s in document["statements"] if "nvidia-driver" in json.dumps(s["products"])]
    assert {s["vulnerability"]["name"] for s in driver} == {"CVE-2025-23244", "CVE-2025-23245"}
    assert {s["status"] for s in driver} == {"under_investigation"}
    assert all("branch R570 is in no imported bulletin" in s["status_notes"] for s in driver)
    csaf = csaf_document("prod-east", statements, now=NOW, namespace="https://gp.example/")
    assert csaf_failures(csaf) == []
    for vuln in csaf["vulnerabilities"]:
        assert vuln["product_status"] == {"under_investigation": ["gpu-r570:driver"]}
        [threat] = vuln["threats"]
        assert threat["category"] == "impact" and "branch R570" in threat["details"]
