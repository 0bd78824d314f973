"""parse_advisory on every real CSAF file, and refusals of malformed documents (pure)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from inventory.bulletins.csaf.document import CsafError, parse_advisory
from tests.realworld import realworld

NVIDIA_CVE_COUNTS = {
    "5312": 4,
    "5328": 1,
    "5353": 12,
    "5383": 14,
    "5415": 30,
    "5452": 18,
    "5453": 1,
    "5468": 4,
    "5491": 10,
    "5520": 8,
    "5551": 10,
    "5557": 1,
    "5582": 2,
    "5585": 1,
    "5586": 8,
    "5599": 3,
    "5614": 7,
    "5616": 1,
    "5630": 3,
    "5659": 2,
    "5670": 12,
    "5703": 9,
    "5747": 5,
    "5818": 2,
    "5821": 15,
    "5850": 1,
    "5857": 1,
}
# Expected outcome per file: the category it parses as (the OASIS samples included).
OUTCOMES = {f"nvidia-{key}.json": "csaf_security_advisory" for key in NVIDIA_CVE_COUNTS} | {
    "oasis-2022-evd-uc-04-001.json": "csaf_vex",
    "oasis-rhsa-2022_0011.json": "csaf_security_advisory",
}


def load(name: str) -> Any:
    return json.loads((realworld("csaf") / name).read_text(encoding="utf-8"))


def test_every_real_file_has_an_expected_outcome():
    names = {path.name for path in realworld("csaf").glob("*.json")}
    assert names == set(OUTCOMES)


@pytest.mark.parametrize("name", sorted(OUTCOMES))
def test_every_real_file_parses_as_expected(name):
    expected = OUTCOMES[name]
    try:
        advisory = parse_advisory(load(name))
    except CsafError as error:  # pragma: no cover - would mean a real file is refused
        pytest.fail(f"{name} refused: {error.reason}")
    assert advisory.category == expected
    assert advisory.current_release_date
    assert advisory.vulnerabilities


@pytest.mark.parametrize(("key", "count"), sorted(NVIDIA_CVE_COUNTS.items()))
def test_nvidia_cve_counts(key, count):
    advisory = parse_advisory(load(f"nvidia-{key}.json"))
    assert advisory.tracking_id == key
    assert len({v.cve for v in advisory.vulnerabilities}) == count


@pytest.mark.parametrize(
    ("key", "cves"),
    [
        ("5312", {f"CVE-2022-{n}" for n in range(21813, 21817)}),
        ("5353", {f"CVE-2022-{n}" for n in range(28181, 28193)}),
        ("5468", {"CVE-2022-34671", "CVE-2023-25515", "CVE-2023-25516", "CVE-2023-25517"}),
        ("5630", {"CVE-2025-23244", "CVE-2025-23245", "CVE-2025-23246"}),
        ("5747", {f"CVE-2025-{n}" for n in (33217, 33218, 33219, 33220, 33237)}),
        ("5582", {"CVE-2024-0132", "CVE-2024-0133"}),
        ("5659", {"CVE-2025-23266", "CVE-2025-23267"}),
        ("5818", {"CVE-2026-24177", "CVE-2026-24176"}),
    ],
)
def test_nvidia_cve_ids(key, cves):
    advisory = parse_advisory(load(f"nvidia-{key}.json"))
    assert {v.cve for v in advisory.vulnerabilities} == cves


def test_nvidia_header_and_scores():
    advisory = parse_advisory(load("nvidia-5582.json"))
    assert advisory.aggregate_severity == "CRITICAL"
    assert advisory.version == "1.0.0"
    first = advisory.vulnerabilities[0]
    assert (first.cve, first.cvss_base_score, first.cvss_severity) == (
        "CVE-2024-0132",
        9.0,
        "CRITICAL",
    )
    product = advisory.products[first.known_affected[0]]
    assert product.branch_path[0] == ("vendor", "NVIDIA")
    assert product.cpe and product.cpe.startswith("cpe:2.3:a:nvidia:")
    assert first.vendor_fix == ()


def test_oasis_vex_range_and_vendor_fix():
    advisory = parse_advisory(load("oasis-2022-evd-uc-04-001.json"))
    assert advisory.products["CSAFPID-0004"].version_range == "vers:generic/>=2.9|<=4.1"
    (vulnerability,) = advisory.vulnerabilities
    assert vulnerability.known_affected == ("CSAFPID-0002", "CSAFPID-0003", "CSAFPID-0004")
    assert vulnerability.vendor_fix == (
        (("CSAFPID-0002", "CSAFPID-0003", "CSAFPID-0004"), "Update to version 4.2 or later."),
    )


def test_oasis_rhsa_relationships():
    advisory = parse_advisory(load("oasis-rhsa-2022_0011.json"))
    (vulnerability,) = advisory.vulnerabilities
    assert len(vulnerability.fixed) == 15
    assert "7Server-7.6.AUS:telnet-1:0.17-65.el7_6.x86_64" in vulnerability.fixed
    product = advisory.products["7Server-7.6.AUS:telnet-1:0.17-65.el7_6.x86_64"]
    assert product.branch_path[-1] == ("default_component_of", "7Server-7.6.AUS")
    ((ids, details),) = vulnerability.vendor_fix
    assert len(ids) == 15 and "access.redhat.com" in details


# --- malformed documents ------------------------------------------------------------------------

MINIMAL: dict[str, Any] = {
    "document": {
        "csaf_version": "2.0",
        "category": "csaf_security_advisory",
        "title": "t",
        "tracking": {
            "id": "X-1",
            "status": "final",
            "version": "1",
            "current_release_date": "2025-01-01T00:00:00Z",
        },
    },
    "product_tree": {
        "branches": [
            {
                "category": "vendor",
                "name": "NVIDIA",
                "branches": [
                    {
                        "category": "product_version",
                        "name": "Tesla",
                        "product": {"product_id": "p1", "name": "All versions prior to 1.2"},
                    }
                ],
            }
        ]
    },
    "vulnerabilities": [{"cve": "CVE-2025-1", "product_status": {"known_affected": ["p1"]}}],
}


def changed(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(MINIMAL)
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is None:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


def test_minimal_document_parses():
    advisory = parse_advisory(MINIMAL)
    assert advisory.products["p1"].branch_path == (
        ("vendor", "NVIDIA"),
        ("product_version", "Tesla"),
    )
    assert advisory.vulnerabilities[0].known_affected == ("p1",)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ([1, 2], "not a JSON object"),
        ("text", "not a JSON object"),
        ({}, "document is missing"),
        (changed(("document", "csaf_version"), "1.2"), "'1.2', not '2.0'"),
        (changed(("document", "csaf_version"), None), "None, not '2.0'"),
        (changed(("document", "tracking"), None), "document.tracking is missing"),
        (changed(("document", "tracking", "id"), None), "document.tracking.id"),
        (changed(("document", "tracking", "version"), ""), "document.tracking.version"),
        (changed(("document", "tracking", "current_release_date"), None), "current_release_date"),
        (changed(("document", "category"), None), "document.category"),
        # CSAF requires the status: a document that does not say it is published is not final.
        (changed(("document", "tracking", "status"), None), "tracking.status is missing"),
        (changed(("document", "tracking", "status"), "published"), "'published', not one of"),
        (changed(("product_tree",), []), "product_tree is missing or not an object"),
        (changed(("vulnerabilities",), {}), "vulnerabilities is not a list"),
        (
            changed(("vulnerabilities",), [{"product_status": {"fixed": ["nope"]}}]),
            "product id 'nope', not in the product tree",
        ),
        (
            changed(
                ("vulnerabilities",),
                [
                    {
                        "remediations": [
                            {"category": "vendor_fix", "details": "x", "product_ids": ["ghost"]}
                        ]
                    }
                ],
            ),
            "'ghost', not in the product tree",
        ),
    ],
)
def test_malformed_documents_are_refused_with_a_reason(data, reason):
    with pytest.raises(CsafError) as caught:
        parse_advisory(data)
    assert reason in caught.value.reason
    assert isinstance(caught.value, ValueError)
