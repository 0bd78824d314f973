"""Products a bulletin names without a version bound it states: `under_investigation`, and
`known_affected` given as a bare product name or an unreadable range. A node running one is
never read as current: it is unknown (with the advisory and CVEs as the reason), or exposed
where a fixed version bounds it. Documents are our own, small (tests.inventory.test_csaf_shapes)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from inventory.bulletins.csaf.document import parse_advisory
from inventory.bulletins.csaf.fixes import fixes
from inventory.bulletins.vex.csaf import csaf_document
from inventory.bulletins.vex.openvex import openvex_document
from inventory.bulletins.vex.statements import NodeJudgement, cluster_statements, counts
from inventory.patching.status import BELOW_BASELINE, CURRENT, UNKNOWN, node_patch_status
from tests.inventory.test_csaf_shapes import TOOLKIT, document, version
from tests.inventory.test_vex import check_openvex, csaf_failures


def bare(pid: str) -> dict[str, Any]:
    """The product itself, no version: vendor > product_name carries the product."""
    return {
        "category": "product_version",
        "name": "All",
        "product": {"product_id": pid, "name": TOOLKIT},
    }


def judged(data: dict, toolkit: str):
    return node_patch_status(
        {"driver_version": "570.172.08", "container_toolkit_version": toolkit},
        fixes(parse_advisory(data))[0],
    )


def test_a_toolkit_under_investigation_is_unknown_not_current():
    data = document([bare("T")], {"under_investigation": ["T"]})
    status = judged(data, "1.17.8")
    assert status.status == UNKNOWN
    assert status.unknown_components == ("container_toolkit",)
    assert "EX-1 (CVE-2099-0001)" in status.unknown[0]
    assert "under investigation" in status.unknown[0]
    assert [e.component for e in status.investigating] == ["container_toolkit"]


def test_under_investigation_with_a_fixed_version_spares_nodes_past_it():
    data = document(
        [bare("T"), version("F", "1.17.8")], {"under_investigation": ["T"], "fixed": ["F"]}
    )
    assert judged(data, "1.17.8").status == CURRENT
    assert judged(data, "1.17.7").status == UNKNOWN


def test_under_investigation_up_to_a_version_does_not_concern_later_ones():
    data = document([version("T", "<= 1.17.7", "product_version_range")], {})
    data["vulnerabilities"][0]["product_status"] = {"under_investigation": ["T"]}
    assert judged(data, "1.17.8").status == CURRENT
    assert judged(data, "1.17.3").status == UNKNOWN


def test_affected_with_no_bound_and_no_fix_is_unknown_not_current():
    data = document([bare("T")], {"known_affected": ["T"]})
    status = judged(data, "1.19.0")
    assert status.status == UNKNOWN
    assert "states no version bound" in status.unknown[0]


def test_an_unreadable_range_is_unknown_not_dropped():
    data = document([version("T", "vers:npm/~1.17", "product_version_range")], {})
    data["vulnerabilities"][0]["product_status"] = {"known_affected": ["T"]}
    status = judged(data, "1.19.0")
    assert status.status == UNKNOWN
    assert "states no version bound" in status.unknown[0]


def test_affected_with_no_bound_is_bounded_by_its_fixed_version():
    data = document([bare("T"), version("F", "1.17.8")], {"known_affected": ["T"], "fixed": ["F"]})
    below = judged(data, "1.17.4")
    assert below.status == BELOW_BASELINE
    assert [(e.affected, e.fixed_version) for e in below.exposures] == [("< 1.17.8", "1.17.8")]
    assert judged(data, "1.17.8").status == CURRENT


def test_affected_with_no_bound_is_bounded_by_a_vendor_fix_version():
    data = document(
        [bare("T")],
        {"known_affected": ["T"]},
        remediations=[
            {
                "category": "vendor_fix",
                "details": "Update to 1.17.8 or later.",
                "product_ids": ["T"],
            }
        ],
    )
    assert judged(data, "1.17.4").status == BELOW_BASELINE
    assert judged(data, "1.17.9").status == CURRENT


def test_the_vex_says_under_investigation_in_both_formats():
    data = document(
        [bare("T"), version("F", "1.17.8")], {"under_investigation": ["T"], "fixed": ["F"]}
    )
    nodes = [
        NodeJudgement("gpu-old", None, judged(data, "1.17.4")),
        NodeJudgement("gpu-new", None, judged(data, "1.17.8")),
    ]
    statements = cluster_statements(nodes)
    assert {(s.product.node, s.status) for s in statements} == {
        ("gpu-old", "under_investigation"),
        ("gpu-new", "fixed"),
    }
    assert counts(statements)["under_investigation"] == 1
    now = datetime(2026, 12, 5, tzinfo=UTC)
    openvex = openvex_document("rt", statements, now=now)
    check_openvex(openvex)
    old = next(s for s in openvex["statements"] if s["status"] == "under_investigation")
    assert "EX-1" in old["status_notes"] and "under investigation" in old["status_notes"]
    csaf = csaf_document("rt", statements, now=now, namespace="https://gp.example/")
    assert csaf_failures(csaf) == []
    (vuln,) = csaf["vulnerabilities"]
    assert vuln["product_status"]["under_investigation"] == ["gpu-old:container_toolkit"]


def test_first_affected_reaches_every_version_up_to_the_first_fix():
    data = document(
        [version("A", "1.16.0"), version("F", "1.17.8")],
        {"first_affected": ["A"], "first_fixed": ["F"]},
    )
    assert judged(data, "1.17.4").status == BELOW_BASELINE  # past 1.16.0, below the fix
    assert judged(data, "1.16.0").status == BELOW_BASELINE
    assert judged(data, "1.17.8").status == CURRENT
    below = judged(data, "1.15.2")
    assert below.status == CURRENT and below.not_affected  # before the first affected one


def test_first_affected_with_no_fix_above_it_is_unknown():
    data = document([version("A", "1.16.0")], {"first_affected": ["A"]})
    assert judged(data, "1.17.4").status == UNKNOWN


def test_every_version_of_a_range_with_no_upper_end_is_exposed():
    for text in ("vers:generic/*", "vers:generic/>=1.16.0"):
        data = document([version("T", text, "product_version_range")], {})
        data["vulnerabilities"][0]["product_status"] = {"known_affected": ["T"]}
        status = judged(data, "1.19.0")
        assert status.status == BELOW_BASELINE, text
        assert status.exposures[0].fixed_version is None
    lower = document([version("T", "vers:generic/>=1.16.0", "product_version_range")], {})
    lower["vulnerabilities"][0]["product_status"] = {"known_affected": ["T"]}
    assert judged(lower, "1.15.0").status == CURRENT  # below its lower end


def test_a_range_with_no_upper_end_stops_at_its_fix():
    data = document(
        [version("T", "vers:generic/>=1.16.0", "product_version_range"), version("F", "1.17.8")],
        {"known_affected": ["T"], "fixed": ["F"]},
    )
    assert judged(data, "1.17.4").status == BELOW_BASELINE
    assert judged(data, "1.17.8").status == CURRENT
    assert judged(data, "1.15.0").status == CURRENT


def test_a_version_known_not_affected_inside_an_affected_range_is_spared():
    data = document(
        [
            version("A", "vers:generic/<1.17.8", "product_version_range"),
            version("N", "1.17.3"),
            version("F", "1.17.8"),
        ],
        {"known_affected": ["A"], "known_not_affected": ["N"], "fixed": ["F"]},
    )
    spared = judged(data, "1.17.3")
    assert spared.status == CURRENT
    assert spared.not_affected[0].reason["justification"] == "vulnerable_code_not_present"
    assert judged(data, "1.17.4").status == BELOW_BASELINE
