"""Patch status of a node against the real NVIDIA bulletins (read in place)."""

from __future__ import annotations

import json

import pytest

from inventory.csaf.document import parse_advisory
from inventory.csaf.fixes import fixes
from inventory.patching import node_patch_status, worst_severity
from tests.realworld import realworld


def bulletin_fixes(*ids: str):
    found = []
    for tracking in ids:
        data = json.loads(realworld("csaf", f"nvidia-{tracking}.json").read_text())
        found += fixes(parse_advisory(data))[0]
    return found


DRIVERS = ("5551", "5586", "5614", "5630")
TOOLKIT = ("5582", "5585", "5599", "5616")


@pytest.mark.parametrize(
    "driver, status, baseline, cves_in",
    [
        # 550.144.03 is the R550 fix of Jan 2025 but below the Apr 2025 one (SOURCES.md).
        ("550.144.03", "below_baseline", "550.163.01", "CVE-2025-23244"),
        ("550.163.01", "current", "550.163.01", None),
        ("535.216.01", "below_baseline", "535.247.01", None),
        ("470.182.03", "below_baseline", "470.256.02", None),  # R470's last fix: Jun 2024
        ("460.106.00", "unknown", None, None),  # R460 is in none of these bulletins
    ],
)
def test_driver_against_its_branch(driver, status, baseline, cves_in):
    result = node_patch_status({"driver_version": driver}, bulletin_fixes(*DRIVERS))
    assert result.status == status
    branch = f"driver R{driver.split('.')[0]}"
    assert result.baselines.get(branch) == baseline
    if cves_in:
        assert any(cves_in in e.cves for e in result.exposures)
    if status == "below_baseline":
        assert worst_severity(result.exposures) in ("critical", "high", "medium", "low")


def test_container_toolkit_inclusive_bound():
    # 5582: "up to and including v1.16.1" is affected; 1.16.2 is the fix.
    at_bound = node_patch_status(
        {"driver_version": None, "container_toolkit_version": "1.16.1"}, bulletin_fixes("5582")
    )
    toolkit = [e for e in at_bound.exposures if e.component == "container_toolkit"]
    assert toolkit and toolkit[0].fixed_version.lstrip("v") == "1.16.2"
    fixed = node_patch_status({"container_toolkit_version": "1.17.4"}, bulletin_fixes(*TOOLKIT))
    assert not [e for e in fixed.exposures if e.component == "container_toolkit"]


def test_unknown_driver_is_unknown_not_current():
    result = node_patch_status({"driver_version": None}, bulletin_fixes(*DRIVERS))
    assert result.status == "unknown" and "driver: version unknown" in result.unknown


def test_no_bulletins_means_nothing_is_claimed():
    result = node_patch_status({"driver_version": "550.90.07"}, [])
    assert result.status == "unknown" and not result.exposures
    assert result.unknown == ("no bulletins imported",)
