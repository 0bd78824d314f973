"""An exposure the vendor says has no fix (remediation `none_available` / `no_fix_planned`,
by product or by group): the node is below no baseline it could reach, so it stays exposed
(STACK-002) and says why, with nothing to upgrade to; no patch SLA runs (STACK-005), and the
VEX action says an upgrade does not remove it."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import time_machine

from inventory.bulletins.csaf.document import parse_advisory
from inventory.bulletins.csaf.fixes import fixes
from inventory.bulletins.patch_refresh import exposure_dicts
from inventory.bulletins.vex.statements import NodeJudgement, cluster_statements
from inventory.patching.status import BELOW_BASELINE, node_patch_status
from tests.inventory.test_csaf_shapes import document, version
from tests.posture.builders import gpu_node, inputs, pod, run, tenant


def no_fix_document(category: str, by_group: bool) -> dict:
    data = document(
        [version("A", "vers:generic/<=1.17.7", "product_version_range")],
        {"known_affected": ["A"]},
        remediations=[
            {"category": category, "details": "No fix is planned for this branch."}
            | ({"group_ids": ["G"]} if by_group else {"product_ids": ["A"]})
        ],
    )
    data["product_tree"]["product_groups"] = [{"group_id": "G", "product_ids": ["A"]}]
    return data


def judged(data: dict):
    return node_patch_status(
        {"driver_version": "570.172.08", "container_toolkit_version": "1.17.4"},
        fixes(parse_advisory(data))[0],
    )


def test_the_exposure_says_the_vendor_names_no_fix():
    for category in ("none_available", "no_fix_planned"):
        for by_group in (False, True):
            status = judged(no_fix_document(category, by_group))
            assert status.status == BELOW_BASELINE
            (exposure,) = status.exposures
            assert exposure.fixed_version is None
            assert exposure.no_fix == f"{category}: No fix is planned for this branch."


def test_no_patch_sla_runs_where_no_fix_exists_but_the_exposure_stays():
    status = judged(no_fix_document("no_fix_planned", False))
    world = inputs(
        nodes=(gpu_node("gpu-1"),),
        pods=(pod("alpha-ns", "train", gpu={"nvidia.com/gpu": 1}),),
        tenants=(tenant("alpha", namespaces=("alpha-ns",)),),
    )
    patch = {"gpu-1": {"status": status.status, "exposures": exposure_dicts(status.exposures)}}
    world = dataclasses.replace(world, patch=patch, patch_sla_days={"high": 30})
    with time_machine.travel(datetime(2026, 12, 1, tzinfo=UTC), tick=False):
        assert run("STACK-005", world) == []
        (draft,) = run("STACK-002", world)
    assert draft.evidence["move_to"] is None
    (said,) = draft.evidence["no_fix"]
    assert said["no_fix"] == "no_fix_planned: No fix is planned for this branch."
    assert said["advisory_id"]


def test_the_vex_action_does_not_promise_an_upgrade():
    status = judged(no_fix_document("none_available", True))
    (statement,) = cluster_statements([NodeJudgement("gpu-1", None, status)])
    assert statement.status == "affected"
    assert "none_available" in statement.action and "does not remove" in statement.action


def test_a_vendor_fix_by_group_names_the_fixed_version():
    for details in ("Update to 1.17.8 or later.", "Fixed in NVIDIA Container Toolkit 1.17.8."):
        data = document(
            [version("A", "vers:generic/<=1.17.7", "product_version_range")],
            {"known_affected": ["A"]},
            remediations=[{"category": "vendor_fix", "details": details, "group_ids": ["G"]}],
        )
        data["product_tree"]["product_groups"] = [{"group_id": "G", "product_ids": ["A"]}]
        (exposure,) = judged(data).exposures
        assert exposure.fixed_version == "1.17.8", details


def test_the_csaf_vex_does_not_call_a_missing_fix_a_vendor_fix():
    from inventory.bulletins.vex.csaf import csaf_document

    for category in ("none_available", "no_fix_planned"):
        status = judged(no_fix_document(category, False))
        statements = cluster_statements([NodeJudgement("gpu-1", None, status)])
        document = csaf_document("lab", statements, now=datetime(2026, 12, 1, tzinfo=UTC))
        [vulnerability] = document["vulnerabilities"]
        categories = {r["category"] for r in vulnerability["remediations"]}
        assert categories == {category}, categories
