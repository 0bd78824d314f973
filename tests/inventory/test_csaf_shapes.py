"""CSAF shapes other vendors (and the CSAF standard's own examples) use, judged end to end on
pure functions: parse -> fixes -> a node's patch status. Documents are our own, small."""

from __future__ import annotations

from typing import Any

from inventory.bulletins.csaf.document import parse_advisory
from inventory.bulletins.csaf.fixes import fixes
from inventory.bulletins.csaf.versions import vers_contains
from inventory.patching.status import BELOW_BASELINE, node_patch_status

TOOLKIT = "NVIDIA Container Toolkit"


def document(products: list[dict[str, Any]], status: dict, **vulnerability: Any) -> dict:
    """One vulnerability over products under vendor > product_name "NVIDIA Container Toolkit"."""
    return {
        "document": {
            "category": "csaf_security_advisory",
            "csaf_version": "2.0",
            "title": "Toolkit advisory",
            "publisher": {"category": "vendor", "name": "Example", "namespace": "https://e.x"},
            "tracking": {
                "id": "EX-1",
                "status": "final",
                "version": "1",
                "initial_release_date": "2025-07-15T00:00:00Z",
                "current_release_date": "2025-07-15T00:00:00Z",
                "revision_history": [],
            },
        },
        "product_tree": {
            "branches": [
                {
                    "category": "vendor",
                    "name": "Example",
                    "branches": [
                        {"category": "product_name", "name": TOOLKIT, "branches": products}
                    ],
                }
            ]
        },
        "vulnerabilities": [{"cve": "CVE-2099-0001", "product_status": status, **vulnerability}],
    }


def version(pid: str, name: str, category: str = "product_version") -> dict[str, Any]:
    return {
        "category": category,
        "name": name,
        "product": {"product_id": pid, "name": f"{TOOLKIT} {name}"},
    }


def judged(data: dict, toolkit: str):
    return node_patch_status(
        {"driver_version": "570.172.08", "container_toolkit_version": toolkit},
        fixes(parse_advisory(data))[0],
    )


def exposed(data: dict, toolkit: str) -> list[str]:
    return [e.affected for e in judged(data, toolkit).exposures]


def test_the_version_in_a_product_version_branch_is_the_bound():
    # The CSAF standard's tree: product_version "1.17.7", product name "<product> 1.17.7".
    data = document(
        [version("A", "1.17.7"), version("F", "1.17.8")],
        {"known_affected": ["A"], "fixed": ["F"]},
    )
    assert exposed(data, "1.17.7") == ["== 1.17.7"]
    assert judged(data, "1.17.7").status == BELOW_BASELINE
    assert exposed(data, "1.17.8") == []
    assert [e.affected for e in judged(data, "1.17.8").fixed] == ["== 1.17.7"]  # for the VEX
    assert judged(data, "1.17.6").fixed == ()  # not listed, not fixed either: nothing said


def test_an_affected_range_with_only_a_vendor_fix_remediation_still_exposes_nodes():
    # As the OASIS VEX example: a range known_affected, no fixed product, a vendor_fix in words.
    data = document(
        [version("A", "vers:generic/<1.17.8", "product_version_range")],
        {"known_affected": ["A"]},
        remediations=[
            {
                "category": "vendor_fix",
                "details": "Update to version 1.17.8 or later.",
                "product_ids": ["A"],
            }
        ],
    )
    status = judged(data, "1.17.4")
    assert status.status == BELOW_BASELINE
    assert [(e.affected, e.fixed_version) for e in status.exposures] == [("< 1.17.8", "1.17.8")]
    assert exposed(data, "1.17.8") == []


def test_an_affected_range_with_no_fix_at_all_is_kept_with_no_fixed_version():
    data = document(
        [version("A", "vers:generic/<=1.17.7", "product_version_range")],
        {"known_affected": ["A"]},
        remediations=[{"category": "none_available", "details": "None yet.", "product_ids": ["A"]}],
    )
    assert [(e.affected, e.fixed_version) for e in judged(data, "1.17.4").exposures] == [
        ("<= 1.17.7", None)
    ]


def test_backport_lines_judge_each_node_by_its_own_line():
    data = document(
        [
            version("A16", "vers:generic/>=1.16.0|<1.16.3", "product_version_range"),
            version("A17", "vers:generic/>=1.17.0|<1.17.8", "product_version_range"),
            version("F16", "1.16.3"),
            version("F17", "1.17.8"),
        ],
        {"known_affected": ["A16", "A17"], "fixed": ["F16", "F17"]},
    )
    moves = {f.affected.version: f.fixed_version for f in fixes(parse_advisory(data))[0]}
    assert moves == {"1.16.3": "1.16.3", "1.17.8": "1.17.8"}
    assert exposed(data, "1.16.2") == ["< 1.16.3"]
    assert exposed(data, "1.17.4") == ["< 1.17.8"]
    # 1.16.5 carries the 1.16 line's fix: below 1.17.8, but not in the 1.17 line's range.
    fixed_line = judged(data, "1.16.5")
    assert fixed_line.exposures == ()
    (spared,) = fixed_line.not_affected
    assert spared.reason and "outside the affected range" in str(spared.reason["text"])


def test_a_cvss_v4_score_gives_the_severity():
    data = document(
        [version("A", "1.17.7"), version("F", "1.17.8")],
        {"known_affected": ["A"], "fixed": ["F"]},
        scores=[{"products": ["A"], "cvss_v4": {"baseScore": 9.3, "baseSeverity": "CRITICAL"}}],
    )
    (exposure,) = judged(data, "1.17.7").exposures
    assert (exposure.severity, exposure.max_cvss) == ("critical", 9.3)


def test_vers_ranges():
    assert vers_contains("vers:generic/>=1.16.0|<1.16.3|>=1.17.0|<1.17.8", "1.17.2") is True
    assert vers_contains("vers:generic/>=1.16.0|<1.16.3|>=1.17.0|<1.17.8", "1.16.5") is False
    assert vers_contains("vers:generic/<570.133.07|>=570.0", "570.124.06") is True
    assert vers_contains("vers:generic/<=4.1|>=2.9", "4.1") is True
    assert vers_contains("vers:generic/>=2.9|<=4.1", "2.8") is False
    assert vers_contains("vers:generic/!=1.0|>=0.9", "1.0") is False
    assert vers_contains("vers:generic/*", "3") is True
    assert vers_contains("not a range", "3") is None


def test_first_and_last_affected_are_affected():
    data = document(
        [version("A0", "1.16.0"), version("A1", "1.17.7"), version("F", "1.17.8")],
        {"first_affected": ["A0"], "last_affected": ["A1"], "first_fixed": ["F"]},
    )
    # first_affected 1.16.0 reaches up to the first fix (a vers range from 1.16.0 on).
    assert sorted(exposed(data, "1.17.7")) == ["< 1.17.8", "<= 1.17.7"]
    assert sorted(exposed(data, "1.17.2")) == ["< 1.17.8", "<= 1.17.7"]
    assert sorted(exposed(data, "1.16.0")) == ["< 1.17.8", "<= 1.17.7"]
    assert exposed(data, "1.17.8") == []


def test_a_score_without_its_rating_and_an_unscored_cve_still_get_a_severity():
    products = [version("A", "1.17.7"), version("F", "1.17.8")]
    status = {"known_affected": ["A"], "fixed": ["F"]}
    scored = document(products, status, scores=[{"cvss_v3": {"baseScore": 9.8}}])
    assert judged(scored, "1.17.7").exposures[0].severity == "critical"
    unscored = document(products, status)
    unscored["document"]["aggregate_severity"] = {"text": "Critical"}
    assert judged(unscored, "1.17.7").exposures[0].severity == "critical"
    unscored["document"]["aggregate_severity"] = {"text": "Important"}
    assert judged(unscored, "1.17.7").exposures[0].severity == "high"


def test_a_withdrawn_advisory_states_no_fix():
    products = [version("A", "1.17.7"), version("F", "1.17.8")]
    status = {"known_affected": ["A"], "fixed": ["F"]}
    for where, value in (
        ("title", "WITHDRAWN: Toolkit advisory"),
        ("notes", [{"category": "general", "text": "This advisory has been withdrawn."}]),
        ("category", "csaf_withdrawn"),
    ):
        data = document(products, status)
        data["document"][where] = value
        found, unmatched = fixes(parse_advisory(data))
        assert found == [] and unmatched[0].reason.startswith("withdrawn: "), where
    assert fixes(parse_advisory(document(products, status)))[0]  # as published, it counts


def test_csaf_2_1_metrics_are_read():
    data = document(
        [version("A", "1.17.7"), version("F", "1.17.8")],
        {"known_affected": ["A"], "fixed": ["F"]},
        metrics=[{"products": ["A"], "content": {"cvss_v4": {"baseScore": 9.3}}}],
    )
    data["document"]["csaf_version"] = "2.1"
    (exposure,) = judged(data, "1.17.7").exposures
    assert (exposure.severity, exposure.max_cvss) == ("critical", 9.3)


def test_a_score_naming_its_products_rates_only_those():
    # The Linux toolkit row is scored medium; another product's score is critical.
    products = [version("A", "1.17.7"), version("F", "1.17.8"), version("W", "9.9")]
    data = document(
        products,
        {"known_affected": ["A", "W"], "fixed": ["F"]},
        scores=[
            {"products": ["A"], "cvss_v3": {"baseScore": 5.5, "baseSeverity": "MEDIUM"}},
            {"products": ["W"], "cvss_v3": {"baseScore": 9.8, "baseSeverity": "CRITICAL"}},
        ],
    )
    (exposure,) = judged(data, "1.17.7").exposures
    assert (exposure.severity, exposure.max_cvss) == ("medium", 5.5)


def test_a_date_only_release_date_starts_the_clock_at_utc_midnight():
    data = document(
        [version("A", "1.17.7"), version("F", "1.17.8")],
        {"known_affected": ["A"], "fixed": ["F"]},
        release_date="2025-07-01",
    )
    (fix,) = fixes(parse_advisory(data))[0]
    assert fix.released == "2025-07-01T00:00:00+00:00"


def test_a_vendor_fix_naming_several_versions_is_not_guessed():
    data = document(
        [version("A", "vers:generic/<1.17.8", "product_version_range")],
        {"known_affected": ["A"]},
        remediations=[
            {
                "category": "vendor_fix",
                "details": "Upgrade the GPU Operator to 25.3.2, which ships the toolkit 1.17.8.",
                "product_ids": ["A"],
            }
        ],
    )
    assert [(e.affected, e.fixed_version) for e in judged(data, "1.17.4").exposures] == [
        ("< 1.17.8", None)
    ]


def test_a_range_of_several_intervals_is_bounded_by_its_highest_upper_bound():
    data = document(
        [
            version("A", "vers:generic/>=1.16.0|<1.16.3|>=1.17.0|<1.17.8", "product_version_range"),
            version("F", "1.17.8"),
        ],
        {"known_affected": ["A"], "fixed": ["F"]},
    )
    assert exposed(data, "1.17.4") == ["< 1.17.8"]
    assert exposed(data, "1.16.2") == ["< 1.17.8"]
    assert exposed(data, "1.16.5") == []  # between the intervals: outside the range


def _rated(data: dict) -> tuple[str | None, float | None]:
    (exposure,) = judged(data, "1.17.7").exposures
    return exposure.severity, exposure.max_cvss


AFFECTED_AND_FIXED = (
    [version("A", "1.17.7"), version("F", "1.17.8")],
    {"known_affected": ["A"], "fixed": ["F"]},
)


def test_a_csaf_2_1_qualitative_rating_alone_rates_the_fix():
    # CSAF 2.1 metrics may carry a qualitative_severity_rating instead of a CVSS score.
    data = document(
        *AFFECTED_AND_FIXED,
        metrics=[{"products": ["A"], "content": {"qualitative_severity_rating": "critical"}}],
    )
    data["document"]["csaf_version"] = "2.1"
    assert _rated(data) == ("critical", None)


def test_a_cvss_v2_score_alone_rates_the_fix_by_its_own_bands():
    data = document(
        *AFFECTED_AND_FIXED, scores=[{"products": ["A"], "cvss_v2": {"baseScore": 9.3}}]
    )
    assert _rated(data) == ("high", 9.3)


def test_a_threat_impact_text_alone_rates_the_fix():
    # Red Hat writes its severity as a threats entry of category impact: "Important".
    data = document(*AFFECTED_AND_FIXED, threats=[{"category": "impact", "details": "Important"}])
    assert _rated(data) == ("high", None)
    data["vulnerabilities"][0]["threats"] = [{"category": "impact", "details": "Critical"}]
    data["document"]["aggregate_severity"] = {"text": "Low"}
    assert _rated(data) == ("critical", None)  # the CVE's own word before the document's


def test_a_rated_cve_is_not_outranked_by_a_lower_scored_one():
    data = document(*AFFECTED_AND_FIXED, threats=[{"category": "impact", "details": "Critical"}])
    second = {
        "cve": "CVE-2099-0002",
        "product_status": {"known_affected": ["A"], "fixed": ["F"]},
        "scores": [{"products": ["A"], "cvss_v3": {"baseScore": 5.0, "baseSeverity": "MEDIUM"}}],
    }
    data["vulnerabilities"].append(second)
    assert _rated(data) == ("critical", 5.0)
