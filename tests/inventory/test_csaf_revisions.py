"""What a bulletin revision changes and when it weakens a fix (issue 16 item 5). PURE."""

from __future__ import annotations

import pytest

from inventory.bulletins.csaf.revisions import FixFacts, revision_changes, revision_state

R550, R535, TOOLKIT = "driver linux R550 tesla", "driver linux R535 tesla", "container_toolkit"


def fix(product: str, op: str, bound: str, fixed: str | None, *cves: str) -> FixFacts:
    return FixFacts(product, op, bound, fixed, cves)


BASE = [
    fix(R550, "<", "550.163.01", "550.163.01", "CVE-1", "CVE-2"),
    fix(R535, "<", "535.247.01", "535.247.01", "CVE-1"),
    fix(TOOLKIT, "<=", "1.17.3", "1.17.4", "CVE-3"),
]
CVES = ("CVE-1", "CVE-2", "CVE-3")


def changed(fixes: list[FixFacts], cves: tuple[str, ...] = CVES):
    before = revision_state("1.0.0", CVES, BASE)
    return revision_changes(before, revision_state("1.1.0", cves, fixes))


@pytest.mark.parametrize(
    "fixes, cves, reasons",
    [
        (BASE, CVES, []),
        # Higher fixed version, wider bound, a new product, a new CVE: more exposure, not less.
        ([fix(R550, "<", "550.172.02", "550.172.02", "CVE-1", "CVE-2"), *BASE[1:]], CVES, []),
        ([*BASE[:2], fix(TOOLKIT, "<=", "1.17.7", "1.17.8", "CVE-3")], CVES, []),
        ([*BASE, fix("driver linux R570 tesla", "<", "570.133.07", "570.133.07")], CVES, []),
        (
            [*BASE[:2], fix(TOOLKIT, "<=", "1.17.3", "1.17.4", "CVE-3", "CVE-4")],
            (*CVES, "CVE-4"),
            [],
        ),
        # A lower fixed version (and the bound with it).
        (
            [fix(R550, "<", "550.54.14", "550.54.14", "CVE-1", "CVE-2"), *BASE[1:]],
            CVES,
            [
                f"{R550}: fixed version lowered from 550.163.01 to 550.54.14",
                f"{R550}: affected versions narrowed from < 550.163.01 to < 550.54.14",
            ],
        ),
        # "<= 1.17.3" reaches 1.17.3, "< 1.17.3" does not.
        (
            [*BASE[:2], fix(TOOLKIT, "<", "1.17.3", "1.17.4", "CVE-3")],
            CVES,
            [f"{TOOLKIT}: affected versions narrowed from <= 1.17.3 to < 1.17.3"],
        ),
        # A branch dropped.
        ([BASE[0], BASE[2]], CVES, [f"{R535}: no longer in the bulletin"]),
        # A CVE dropped for a product, and from the bulletin.
        (
            [fix(R550, "<", "550.163.01", "550.163.01", "CVE-1"), *BASE[1:]],
            ("CVE-1", "CVE-3"),
            [f"{R550}: CVE-2 no longer listed", "CVE-2: no longer in the bulletin"],
        ),
    ],
)
def test_weakening(fixes, cves, reasons):
    assert changed(fixes, cves).weakening == reasons


def test_fixed_versions_before_and_after_per_product():
    changes = changed(
        [
            fix(R550, "<", "550.172.02", "550.172.02", "CVE-1", "CVE-2"),
            BASE[2],
            fix("driver linux R570 tesla", "<", "570.133.07", "570.133.07", "CVE-1"),
        ]
    )
    assert changes.fixed_versions == [
        {
            "product": R550,
            "before": "550.163.01",
            "after": "550.172.02",
            "affected_before": "< 550.163.01",
            "affected_after": "< 550.172.02",
        }
    ]
    assert changes.products_added == ["driver linux R570 tesla"]
    assert changes.products_dropped == [R535]


def test_a_new_bulletin_weakens_nothing_and_a_deleted_one_drops_everything():
    state = revision_state("1.0.0", CVES, BASE)
    new = revision_changes(None, state)
    assert new.weakening == [] and new.products_added == sorted({R550, R535, TOOLKIT})
    gone = revision_changes(state, None)
    assert gone.products_dropped == sorted({R550, R535, TOOLKIT})
    assert gone.cves_dropped == list(CVES) and len(gone.weakening) == 6
