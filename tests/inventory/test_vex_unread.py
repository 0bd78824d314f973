"""A node component whose version was not read, named by an imported bulletin: the VEX states
it `under_investigation` (OpenVEX; CSAF VEX: the `under_investigation` product status list with
an `impact` threat), saying which version was not read on which node and what input would
tell; a component known not installed stays `not_affected`, `component_not_present`; a
bulletin that cannot concern the node (firmware for another GPU model) states nothing.

Before, such a component had no statement at all: a VEX reader saw nothing for that node and
vulnerability, which reads as "nothing to say"."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from demo.bulletins import driver_bulletin
from inventory.bulletins.csaf.document import parse_advisory
from inventory.bulletins.csaf.fixes import fixes
from inventory.bulletins.vex.csaf import csaf_document
from inventory.bulletins.vex.openvex import openvex_document
from inventory.bulletins.vex.statements import NodeJudgement, cluster_statements
from inventory.components import COMPONENT_FIELDS, HOST_READ
from inventory.models import Node
from inventory.patching.status import NodeStack, node_patch_status
from tests.conftest import api_client
from tests.inventory.test_patching import firmware_bulletin
from tests.inventory.test_vex import (
    CDI_ON,
    NOW,
    bulletin_fixes,
    by_key,
    check_openvex,
    csaf_failures,
)
from tests.inventory.test_vex_api import statements_by_node, world  # noqa: F401

H100 = "NVIDIA-H100-80GB-HBM3"
TOOLKIT_CVES = ("CVE-2025-23266", "CVE-2025-23267", "CVE-2025-23359")


def judge(name: str, versions: dict, found: list, model: str | None = H100, **stack):
    status = node_patch_status(versions, found, NodeStack(gpu_model=model, **stack))
    return NodeJudgement(name, model, status)


def all_fixes() -> list:
    return [
        *bulletin_fixes(),
        *fixes(parse_advisory(firmware_bulletin()))[0],
        *fixes(parse_advisory(driver_bulletin()))[0],
    ]


def unread_nodes() -> list[NodeJudgement]:
    found = all_fixes()
    host_only = frozenset(COMPONENT_FIELDS) - set(HOST_READ)
    return [
        # Driver, toolkit and VBIOS not read; the exporter is known not installed.
        judge(
            "gpu-unread",
            {},
            found,
            facts=CDI_ON,
            not_installed=frozenset({"dcgm_exporter"}),
        ),
        # Everything read but the exporter, which runs there (its version not shown).
        judge(
            "gpu-read",
            {
                "driver_version": "550.163.01",
                "container_toolkit_version": "1.17.8",
                "firmware_version": "96.00.99.00.01",
            },
            found,
        ),
        # An A100: the H100 firmware bulletin cannot concern it.
        judge("gpu-a100", {"driver_version": "550.163.01"}, found, "NVIDIA-A100-SXM4-80GB"),
        # GPU model not read: an H100 firmware bulletin cannot be ruled out.
        judge("gpu-nomodel", {"driver_version": "550.163.01"}, found, None),
        # Described by nvidia-smi alone: the toolkit is not shown.
        judge(
            "gpu-host",
            {"driver_version": "550.163.01", "firmware_version": "96.00.99.00.01"},
            found,
            not_read=host_only,
        ),
    ]


def test_a_version_not_read_is_under_investigation_saying_why():
    found = by_key(cluster_statements(unread_nodes()))
    for cve in TOOLKIT_CVES:
        toolkit = found[(cve, "gpu-unread", "container_toolkit")]
        assert toolkit.status == "under_investigation" and toolkit.justification is None
        assert "container toolkit was not read on node gpu-unread" in toolkit.impact
        assert toolkit.product.version is None and "not read" in toolkit.product.label
    driver = found[("CVE-2025-23244", "gpu-unread", "driver")]
    assert driver.status == "under_investigation"
    assert "driver was not read on node gpu-unread" in driver.impact
    assert "nvidia-smi -q -x" in driver.impact
    firmware = found[("CVE-2026-0001", "gpu-unread", "firmware")]
    assert firmware.status == "under_investigation"
    assert "nvidia-smi -q -x" in firmware.impact and "gpu-unread" in firmware.impact
    exporter = found[("CVE-2026-47483", "gpu-read", "dcgm_exporter")]
    assert exporter.status == "under_investigation"
    assert "DCGM exporter was not read on node gpu-read" in exporter.impact
    host = found[("CVE-2025-23359", "gpu-host", "container_toolkit")]
    assert host.status == "under_investigation"
    assert "Kubernetes API does not list this node" in host.impact


def test_not_installed_stays_not_affected_and_another_model_states_nothing():
    statements = cluster_statements(unread_nodes())
    found = by_key(statements)
    absent = found[("CVE-2026-47483", "gpu-unread", "dcgm_exporter")]
    assert (absent.status, absent.justification) == ("not_affected", "component_not_present")
    assert not [s for s in statements if s.product.id == "gpu-a100:firmware"]
    nomodel = found[("CVE-2026-0001", "gpu-nomodel", "firmware")]
    assert nomodel.status == "under_investigation" and "GPU model" in nomodel.impact
    # Read versions keep their judgement.
    assert found[("CVE-2026-0001", "gpu-read", "firmware")].status == "fixed"
    assert found[("CVE-2025-23359", "gpu-read", "container_toolkit")].status == "fixed"
    # One statement per (vulnerability, node component), whatever the number of branches.
    keys = [(s.vulnerability, s.product.id) for s in statements]
    assert len(keys) == len(set(keys))


def test_both_formats_state_it_and_stay_valid():
    statements = cluster_statements(unread_nodes())
    openvex = openvex_document("prod-east", statements, now=NOW)
    check_openvex(openvex)
    [toolkit] = [
        s
        for s in openvex["statements"]
        if s["vulnerability"]["name"] == "CVE-2025-23359"
        and s["products"][0]["@id"].endswith(":gpu-unread")
        and "toolkit" in s["products"][0]["subcomponents"][0]["@id"]
    ]
    assert toolkit["status"] == "under_investigation"
    assert "was not read on node gpu-unread" in toolkit["status_notes"]
    assert toolkit["products"][0]["subcomponents"][0]["identifiers"]["purl"] == (
        "pkg:generic/nvidia/nvidia-container-toolkit?node=gpu-unread"
    )
    csaf = csaf_document("prod-east", statements, now=NOW, namespace="https://gp.example/")
    assert csaf_failures(csaf) == []
    (vuln,) = [v for v in csaf["vulnerabilities"] if v.get("cve") == "CVE-2025-23359"]
    assert "gpu-unread:container_toolkit" in vuln["product_status"]["under_investigation"]
    [threat] = [t for t in vuln["threats"] if "gpu-unread:container_toolkit" in t["product_ids"]]
    assert threat["category"] == "impact" and "was not read on node gpu-unread" in threat["details"]


@pytest.mark.django_db
def test_api_and_page_state_it_within_the_viewers_nodes(world, personas):  # noqa: F811
    Node.objects.filter(name="gpu-b").update(data={"not_installed": {}})  # toolkit not read
    lead = json.loads(
        api_client(personas["security_lead"]).get("/api/v1/clusters/lab/vex/").content
    )
    check_openvex(lead)
    assert statements_by_node(lead)["gpu-b"] == {(c, "under_investigation") for c in TOOLKIT_CVES}
    csaf = api_client(personas["security_lead"]).get("/api/v1/clusters/lab/vex/?format=csaf")
    assert csaf_failures(json.loads(csaf.content)) == []
    # A tenant viewer sees the nodes their pods run on only.
    alpha = api_client(personas["viewer_alpha"]).get("/api/v1/clusters/lab/vex/")
    assert set(statements_by_node(json.loads(alpha.content))) == {"gpu-a"}
    beta = api_client(personas["viewer_beta"]).get("/api/v1/clusters/lab/vex/")
    assert set(statements_by_node(json.loads(beta.content))) == {"gpu-b"}
    client = Client()
    client.force_login(personas["platform_engineer"])
    page = client.get("/clusters/lab/vex/").content.decode()
    assert page.count("container_toolkit (version not read)") == 3
    assert "container toolkit was not read on node gpu-b" in page
    assert "(version not read)" in page
