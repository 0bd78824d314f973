"""What a bulletin says to do besides upgrading (CSAF remediations `mitigation`, `workaround`,
`vendor_fix` with its URL) reaches the user where they decide: the node's exposure, the
STACK-00x evidence, the VEX (OpenVEX action_statement, CSAF remediations), the bulletin and node
pages; and a viewer who may not read the bulletin (TLP) does not read its words either."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest
from django.test import Client

from inventory.bulletins.csaf.document import parse_advisory
from inventory.bulletins.csaf.fixes import fixes
from inventory.bulletins.patch_refresh import exposure_dicts, fixes_from_db
from inventory.bulletins.store import ImportResult, bulletin_import
from inventory.bulletins.vex.csaf import csaf_document
from inventory.bulletins.vex.openvex import openvex_document
from inventory.bulletins.vex.statements import NodeJudgement, cluster_statements
from inventory.models import Bulletin
from inventory.patching.status import node_patch_status
from posture.rules.registry import CHECKS
from tenants.redaction import HIDDEN_ADVISORY, HiddenScope
from tests.inventory.test_csaf_shapes import document, version
from tests.posture.builders import gpu_node, inputs, pod, run, tenant

HOOK = "Disable the CUDA compat lib hook: set features.disable-cuda-compat-lib-hook in config.toml."
ERRATA = "https://example.invalid/security/EX-1"


def remedied() -> dict:
    return document(
        [
            version("A", "vers:generic/<=1.17.7", "product_version_range"),
            version("F", "1.17.8"),
            version("O", "1.9.0"),
        ],
        {"known_affected": ["A", "O"], "fixed": ["F"]},
        remediations=[
            {
                "category": "vendor_fix",
                "details": "Upgrade to 1.17.8.",
                "url": ERRATA,
                "product_ids": ["A"],
            },
            {"category": "mitigation", "details": HOOK, "product_ids": ["A"]},
            {"category": "workaround", "details": "Only for O.", "product_ids": ["O"]},
        ],
    )


def judged():
    return node_patch_status(
        {"driver_version": "570.172.08", "container_toolkit_version": "1.17.4"},
        fixes(parse_advisory(remedied()))[0],
    )


def test_the_exposure_carries_the_remediations_for_its_product():
    (exposure,) = [e for e in judged().exposures if e.affected == "<= 1.17.7"]
    assert ("mitigation", HOOK, "") in exposure.remedies
    assert ("vendor_fix", "Upgrade to 1.17.8.", ERRATA) in exposure.remedies
    assert all(details != "Only for O." for _, details, _ in exposure.remedies)


def world_with(status):
    world = inputs(
        nodes=(gpu_node("gpu-1"),),
        pods=(pod("alpha-ns", "train", gpu={"nvidia.com/gpu": 1}),),
        tenants=(tenant("alpha", namespaces=("alpha-ns",)),),
    )
    patch = {"gpu-1": {"status": status.status, "exposures": exposure_dicts(status.exposures)}}
    return dataclasses.replace(world, patch=patch, patch_sla_days={"high": 30})


def test_stack_evidence_lists_mitigations_first_and_the_remediation_points_there():
    (draft,) = run("STACK-002", world_with(judged()))
    remedies = draft.evidence["remedies"]
    assert remedies[0] == {
        "advisory_id": "EX-1",
        "category": "mitigation",
        "details": HOOK,
        "url": "",
    }
    assert {
        "advisory_id": "EX-1",
        "category": "vendor_fix",
        "details": "Upgrade to 1.17.8.",
        "url": ERRATA,
    } in remedies
    assert "`remedies`" in CHECKS["STACK-002"].remediation


def test_the_vex_says_what_to_do_until_the_upgrade():
    statements = cluster_statements([NodeJudgement("gpu-1", None, judged())])
    now = datetime(2026, 12, 1, tzinfo=UTC)
    openvex = openvex_document("lab", statements, now=now)
    [action] = {s["action_statement"] for s in openvex["statements"] if s["status"] == "affected"}
    assert "Upgrade the" in action and f"Mitigation (EX-1): {HOOK}" in action
    csaf = csaf_document("lab", statements, now=now)
    [remediations] = [v["remediations"] for v in csaf["vulnerabilities"]]
    mitigation = [r for r in remediations if r["category"] == "mitigation"]
    assert mitigation == [
        {"category": "mitigation", "details": HOOK, "product_ids": mitigation[0]["product_ids"]}
    ]
    assert mitigation[0]["product_ids"]


def test_a_viewer_who_may_not_read_the_bulletin_does_not_read_its_remediations():
    (draft,) = run("STACK-002", world_with(judged()))
    hidden = HiddenScope(advisories=frozenset({"EX-1"}), cves=frozenset({"CVE-2099-0001"}))
    shown = hidden.value(draft.evidence)
    assert HOOK not in str(shown) and ERRATA not in str(shown)
    assert {r["category"] for r in shown["remedies"]} == {"mitigation", "vendor_fix"}
    assert all(r["advisory_id"] == HIDDEN_ADVISORY for r in shown["remedies"])
    assert all(e["remedies"] == [] for e in shown["exposures"])


@pytest.mark.django_db
def test_remediations_are_stored_and_shown_on_the_bulletin_page(personas):
    data = remedied()
    data["document"]["distribution"] = {"tlp": {"label": "WHITE"}}
    bulletin_import(data=data, source="test", result=ImportResult())
    [fix] = [f for f in fixes_from_db() if f.affected.op == "<="]
    assert ("mitigation", HOOK, "") in fix.remedies
    client = Client()
    client.force_login(personas["platform_engineer"])
    page = client.get(f"/bulletins/{Bulletin.objects.get().pk}/").content.decode()
    assert 'data-remedy="mitigation"' in page and "features.disable-cuda-compat-lib-hook" in page
    assert f'href="{ERRATA}"' in page
    from tests.conftest import api_client

    answer = api_client(personas["platform_engineer"]).get(
        f"/api/v1/bulletins/{Bulletin.objects.get().pk}/"
    )
    remedies = [r for f in answer.json()["fixes"] for r in f["remedies"]]
    assert {"category": "mitigation", "details": HOOK, "url": ""} in remedies


@pytest.mark.django_db
@pytest.mark.parametrize(("tlp", "viewer_reads"), [("WHITE", True), ("AMBER", False)])
def test_the_node_page_shows_the_remediations_to_whom_may_read_them(
    small_world, personas, tlp, viewer_reads
):
    from inventory.bulletins.patch_refresh import nodes_patch_refresh
    from inventory.models import Node

    data = remedied()
    data["document"]["distribution"] = {"tlp": {"label": tlp}}
    bulletin_import(data=data, source="test", result=ImportResult())
    node = Node.objects.get(name="gpu-ts-1")
    node.data["container_toolkit_version"] = "1.17.4"
    node.save(update_fields=["data"])
    nodes_patch_refresh()
    pages = {}
    for persona in ("platform_engineer", "viewer_alpha"):
        client = Client()
        client.force_login(personas[persona])
        pages[persona] = client.get(f"/nodes/lab/{node.name}/").content.decode()
    assert 'data-remedy="mitigation"' in pages["platform_engineer"]
    assert "features.disable-cuda-compat-lib-hook" in pages["platform_engineer"]
    assert ("features.disable-cuda-compat-lib-hook" in pages["viewer_alpha"]) is viewer_reads
    assert (ERRATA in pages["viewer_alpha"]) is viewer_reads
