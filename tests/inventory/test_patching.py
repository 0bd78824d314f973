"""Patch status of a node against the real NVIDIA bulletins (read in place)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from inventory.bulletins.csaf.document import parse_advisory
from inventory.bulletins.csaf.fixes import fixes
from inventory.bulletins.patch_refresh import exposure_dicts
from inventory.bulletins.vex.statements import NodeJudgement, cluster_statements
from inventory.conditions import NodeFacts
from inventory.patching.driver_family import host_driver_fix
from inventory.patching.status import NodeStack, node_patch_status, worst_severity
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


# --- components not installed, conditions, firmware (issue 17 items 7-9) -----------------------

CURRENT_STACK = {
    "driver_version": "550.163.01",
    "container_toolkit_version": "1.17.4",
    "device_plugin_version": "0.17.3",
    "gpu_operator_version": "24.9.2",
    "dcgm_exporter_version": None,
}


def test_a_component_not_installed_is_not_judged_and_the_node_reads_current():
    fixes = bulletin_fixes(*DRIVERS, *TOOLKIT, "5857")  # 5857: a DCGM Exporter bulletin
    # Before: a node without a DCGM exporter was unknown for ever once 5857 was imported.
    assert node_patch_status(CURRENT_STACK, fixes).status == "unknown"
    result = node_patch_status(
        CURRENT_STACK, fixes, NodeStack(not_installed=frozenset({"dcgm_exporter"}))
    )
    assert (result.status, result.unknown, result.exposures) == ("current", (), ())
    (absent,) = result.not_affected
    assert (absent.component, absent.installed, absent.advisory_id) == (
        "dcgm_exporter",
        None,
        "5857",
    )
    assert absent.reason["code"] == "component_not_present"
    assert absent.reason["justification"] == "component_not_present"


def test_the_driver_is_never_not_installed():
    stack = NodeStack(not_installed=frozenset({"driver"}))
    result = node_patch_status({"driver_version": None}, bulletin_fixes(*DRIVERS), stack)
    assert result.status == "unknown" and "driver: version unknown" in result.unknown


# A KubeVirt sandbox node (vm-vgpu / vm-passthrough): the GPU Operator runs its sandbox
# operands there, never the container toolkit, the device plugin or the MIG manager.
SANDBOX_ABSENT = frozenset({"container_toolkit", "device_plugin", "mig_manager", "dcgm_exporter"})


def test_an_operator_flaw_in_an_operand_the_node_does_not_run_is_not_affected():
    # 5659 (CVE-2025-23266, critical) and 5850 name the GPU Operator for the toolkit it deploys.
    fixes = bulletin_fixes("5659", "5850")
    versions = {"gpu_operator_version": "24.9.2"}
    # Before: STACK-003 critical on VM nodes through `gpu_operator 24.9.2`.
    result = node_patch_status(versions, fixes, NodeStack(not_installed=SANDBOX_ABSENT))
    assert [e for e in result.exposures if e.component == "gpu_operator"] == []
    spared = [e for e in result.not_affected if e.component == "gpu_operator"]
    assert {e.advisory_id for e in spared} == {"5659", "5850"}
    assert {e.reason["justification"] for e in spared} == {"component_not_present"}
    assert all(e.installed == "24.9.2" for e in spared)
    assert any("container toolkit" in e.reason["text"] for e in spared)
    # Where the toolkit runs, or may run (not known absent), the exposure stays.
    for stack in (NodeStack(not_installed=frozenset({"dcgm_exporter"})), NodeStack()):
        kept = node_patch_status(versions, fixes, stack).exposures
        assert {e.advisory_id for e in kept if e.component == "gpu_operator"} == {"5659", "5850"}
    # 5659 names the device plugin too: a node running it stays exposed to 5659 alone.
    plugin = node_patch_status(
        versions, fixes, NodeStack(not_installed=SANDBOX_ABSENT - {"device_plugin"})
    )
    assert {e.advisory_id for e in plugin.exposures if e.component == "gpu_operator"} == {"5659"}


def test_a_vgpu_hosts_driver_is_judged_by_the_linux_kvm_vgpu_manager_rows():
    fixes = bulletin_fixes(*DRIVERS)
    versions = {"driver_version": "550.127.06"}
    # vGPU 17.4's manager: 5614 (<= 550.127.06, fixed 550.144.02) and 5630 (<= 550.144.02,
    # fixed 550.163.02), its Linux KVM rows; never the Azure Local rows (<= 553.20).
    result = node_patch_status(versions, fixes, NodeStack(vgpu_host=True))
    assert result.status == "below_baseline"
    # One exposure per fix, though 5614 and 5630 repeat each row per hypervisor.
    assert sorted((e.advisory_id, e.fixed_version) for e in result.exposures) == [
        ("5614", "550.144.02"),
        ("5630", "550.163.02"),
    ]
    assert result.baselines == {"driver R550": "550.163.02"}
    # The same number as a data-center driver is judged by the Tesla rows.
    tesla = node_patch_status(versions, fixes, NodeStack())
    assert tesla.baselines == {"driver R550": "550.163.01"}
    assert {e.fixed_version for e in tesla.exposures} == {"550.144.03", "550.163.01"}
    # A manager past every Linux KVM fix reads current.
    current = node_patch_status({"driver_version": "550.163.02"}, fixes, NodeStack(vgpu_host=True))
    assert (current.status, current.exposures) == ("current", ())


CDI_OFF = NodeFacts(cdi=False, sources={"cdi": "ClusterPolicy cluster-policy spec.cdi.enabled"})


def test_a_cdi_only_flaw_on_a_node_not_in_cdi_mode_is_not_affected_with_the_reason():
    versions = {**CURRENT_STACK, "device_plugin_version": "0.17.0"}
    fixes = bulletin_fixes("5659")
    stack = NodeStack(not_installed=frozenset({"dcgm_exporter", "mig_manager"}), facts=CDI_OFF)
    result = node_patch_status(versions, fixes, stack)
    # toolkit 1.17.4 < 1.17.5 (CDI mode only), operator 24.9.2 < 25.3.1 (CDI mode only), plugin
    # with an envvar strategy (CDI off): the node is in every bound and affected by none.
    assert result.status == "current" and result.exposures == ()
    reasons = {(e.component, e.reason["code"]) for e in result.not_affected}
    assert ("container_toolkit", "condition_not_met") in reasons
    assert ("gpu_operator", "condition_not_met") in reasons
    assert ("device_plugin", "condition_not_met") in reasons
    toolkit = next(e for e in result.not_affected if e.component == "container_toolkit")
    assert (
        toolkit.condition_status == "not_met"
        and "CDI device injection is off" in toolkit.reason["text"]
    )


def test_a_condition_that_cannot_be_judged_keeps_the_node_affected_unverified():
    result = node_patch_status({"container_toolkit_version": "1.17.4"}, bulletin_fixes("5659"))
    toolkit = [e for e in result.exposures if e.component == "container_toolkit"]
    assert result.status == "below_baseline" and toolkit
    assert {e.condition_status for e in toolkit} == {"unverified"}
    assert all(e.reason["code"] == "condition_unverified" for e in toolkit)
    # 1.17.6 is past the condition's scope: affected in every mode, the condition holds.
    later = node_patch_status(
        {"container_toolkit_version": "1.17.6"}, bulletin_fixes("5659"), NodeStack(facts=CDI_OFF)
    )
    assert {e.condition_status for e in later.exposures if e.component == "container_toolkit"} >= {
        "holds"
    }


def test_the_cdi_note_of_5582_spares_cdi_nodes():
    cdi_on = NodeStack(facts=NodeFacts(cdi=True))
    result = node_patch_status(
        {"container_toolkit_version": "1.16.1"}, bulletin_fixes("5582"), cdi_on
    )
    assert [e.component for e in result.exposures] == []
    assert {e.component for e in result.not_affected} == {"container_toolkit"}
    legacy = node_patch_status(
        {"container_toolkit_version": "1.16.1"}, bulletin_fixes("5582"), NodeStack(facts=CDI_OFF)
    )
    assert {e.condition_status for e in legacy.exposures} == {"holds"}


def firmware_bulletin() -> dict:
    """A CSAF advisory in NVIDIA's tree shape naming VBIOS for one GPU model (our own)."""
    products = [
        ("all_h100_vbios", "All versions prior to 96.00.99.00.01"),
        ("h100_vbios_fixed", "96.00.99.00.01"),
    ]
    branches = [
        {
            "category": "product_version",
            "name": "NVIDIA H100 VBIOS",
            "product": {"name": name, "product_id": pid},
        }
        for pid, name in products
    ]
    return {
        "document": {
            "category": "csaf_security_advisory",
            "csaf_version": "2.0",
            "title": "NVIDIA GPU firmware (test)",
            "publisher": {
                "category": "vendor",
                "name": "NVIDIA",
                "namespace": "https://www.nvidia.com",
            },
            "tracking": {
                "id": "fw-test",
                "status": "final",
                "version": "1.0.0",
                "initial_release_date": "2026-01-10T00:00:00Z",
                "current_release_date": "2026-01-10T00:00:00Z",
                "revision_history": [
                    {"date": "2026-01-10T00:00:00Z", "number": "1.0.0", "summary": "Initial"}
                ],
            },
        },
        "product_tree": {
            "branches": [
                {
                    "category": "vendor",
                    "name": "NVIDIA",
                    "branches": [{"category": "architecture", "name": "All", "branches": branches}],
                }
            ]
        },
        "vulnerabilities": [
            {
                "cve": "CVE-2026-0001",
                "product_status": {
                    "known_affected": ["all_h100_vbios"],
                    "fixed": ["h100_vbios_fixed"],
                },
                "scores": [
                    {
                        "cvss_v3": {"baseScore": 7.8, "baseSeverity": "HIGH", "version": "3.1"},
                        "products": ["all_h100_vbios"],
                    }
                ],
            }
        ],
    }


def test_firmware_is_judged_only_for_the_gpu_model_a_bulletin_names():
    found, unmatched = fixes(parse_advisory(firmware_bulletin()))
    assert unmatched == [] and [(f.component.kind, f.component.line) for f in found] == [
        ("firmware", "H100")
    ]
    h100 = NodeStack(gpu_model="NVIDIA-H100-80GB-HBM3")
    unknown = node_patch_status({"driver_version": "550.163.01"}, found, h100)
    assert unknown.status == "unknown" and unknown.unknown_components == ("firmware",)
    assert "VBIOS version unknown" in unknown.unknown[0]
    below = node_patch_status({"firmware_version": "96.00.89.00.01"}, found, h100)
    assert [e.component for e in below.exposures] == ["firmware"]
    fixed = node_patch_status({"firmware_version": "96.00.99.00.01"}, found, h100)
    assert fixed.exposures == () and "firmware" not in fixed.unknown_components
    # An A100 node: the bulletin does not concern its firmware at all.
    a100 = node_patch_status({}, found, NodeStack(gpu_model="NVIDIA-A100-SXM4-80GB"))
    assert "firmware" not in a100.unknown_components
    # An unknown GPU model cannot be ruled out.
    assert "firmware" in node_patch_status({}, found, NodeStack()).unknown_components


@pytest.mark.parametrize(
    "driver, status",
    [
        # R550's last fix is 550.163.01 (Apr 2025); the Jul and Oct 2025 bulletins fix R570 and
        # R535 only. Before, a node on 550.163.01 read "current" while its branch got no fixes.
        ("550.163.01", "unknown"),
        ("575.51.02", "unknown"),  # R575: in Apr 2025 only
        ("535.274.02", "current"),  # R535 (LTSB) is in every bulletin
        ("580.95.05", "current"),  # R580 first appears in Oct 2025: Jul 2025 does not concern it
    ],
)
def test_a_branch_a_later_bulletin_leaves_out_never_reads_current(driver, status):
    result = node_patch_status({"driver_version": driver}, bulletin_fixes("5630", "5670", "5703"))
    assert result.status == status
    if status == "unknown":
        (note,) = result.unknown
        assert "is not in bulletin 5703" in note and "out of support" in note
        assert result.unknown_components == ("driver",)


def test_a_dropped_branch_below_its_last_fix_stays_below_baseline():
    result = node_patch_status({"driver_version": "550.144.03"}, bulletin_fixes("5630", "5670"))
    assert result.status == "below_baseline"
    assert "is not in bulletin 5670" in result.unknown[0]


def test_a_dcgm_bulletin_judges_the_dcgm_an_exporter_image_bundles():
    """The exporter tag 3.1.6-3.1.3 carries DCGM 3.1.6, which the DCGM bulletin of Mar 2023
    fixes in 3.1.7. Before, DCGM fixes were never judged: the node read "current"."""
    found = bulletin_fixes("5453")
    versions = {"driver_version": "535.309.01", "dcgm_exporter_version": "3.1.6-3.1.3"}
    result = node_patch_status(versions, found)
    assert result.status == "below_baseline"
    (exposure,) = result.exposures
    assert (exposure.component, exposure.installed, exposure.fixed_version) == (
        "dcgm",
        "3.1.6",
        "3.1.7",
    )
    versions["dcgm_exporter_version"] = "3.1.7-3.1.4"
    assert node_patch_status(versions, found).exposures == ()
    # No exporter on the node: nothing shows a DCGM, so nothing is claimed about one.
    absent = NodeStack(not_installed=frozenset({"dcgm_exporter"}))
    assert node_patch_status({"driver_version": "535.309.01"}, found, absent).exposures == ()


def test_a_branch_a_revision_added_later_does_not_drop_the_branches_listed_first():
    # 5614 v3.0.0 added R570 two weeks after R535's rows: the same bulletin still lists R535.
    found = [
        replace(f, released="2025-01-30T00:00:00+00:00") if f.component.branch == "R570" else f
        for f in bulletin_fixes("5614")
    ]
    result = node_patch_status({"driver_version": "535.230.02"}, found)
    assert (result.status, result.unknown) == ("current", ())


def test_a_version_the_bulletin_names_both_affected_and_fixed_is_unknown():
    # 5857: DCGM Exporter "0.0  to 4.8.2" affected and 4.8.2 fixed (SOURCES.md). A node at
    # 4.8.2 is neither told to move to the version it runs nor read as fixed.
    status = node_patch_status(
        {"driver_version": "580.159.03", "dcgm_exporter_version": "4.5.3-4.8.2"},
        bulletin_fixes("5857"),
    )
    assert status.status == "unknown"
    assert not [e for e in status.exposures if e.component == "dcgm_exporter"]
    assert not [e for e in status.fixed if e.component == "dcgm_exporter"]
    [doubt] = [e for e in status.investigating if e.component == "dcgm_exporter"]
    assert doubt.reason["code"] == "contradictory_bulletin"
    assert "4.8.2 both affected" in " ".join(status.unknown)
    [statement] = [
        s
        for s in cluster_statements([NodeJudgement("gpu-1", None, status)])
        if s.product.component == "dcgm_exporter"
    ]
    assert statement.status == "under_investigation"
    assert "both affected (<= 4.8.2) and fixed" in statement.impact
    assert "without a version bound" not in statement.impact
    below = node_patch_status({"dcgm_exporter_version": "4.5.2-4.8.1"}, bulletin_fixes("5857"))
    assert [e.fixed_version for e in below.exposures if e.component == "dcgm_exporter"] == ["4.8.2"]


def test_a_driver_on_a_branch_no_bulletin_names_is_under_investigation_in_the_vex():
    # R460 is in none of these bulletins: unknown on the patch page, and the VEX says so for
    # every driver CVE (never silent, never fixed by another branch's number).
    status = node_patch_status({"driver_version": "460.106.00"}, bulletin_fixes(*DRIVERS))
    assert status.status == "unknown" and not status.exposures and not status.fixed
    assert {e.reason["code"] for e in status.investigating} == {"branch_unlisted"}
    assert all(e.fixed_version is None for e in status.investigating)
    statements = cluster_statements([NodeJudgement("gpu-1", None, status)])
    # Every CVE of the Linux data-center driver rows (any branch).
    driver_cves = {c for f in bulletin_fixes(*DRIVERS) if host_driver_fix(f, False) for c in f.cves}
    driver = [s for s in statements if s.product.component == "driver"]
    assert driver_cves and {s.vulnerability for s in driver} == driver_cves
    assert {s.status for s in driver} == {"under_investigation"}
    assert all("branch R460 is in no imported bulletin" in s.impact for s in driver)


def test_a_driver_exposure_names_each_branchs_own_fix():
    # 5630 fixes R550 at 550.163.01 and R535 at 535.247.01 (SOURCES.md): a version of one
    # branch is judged by that branch's fix, not by the other's number.
    status = node_patch_status({"driver_version": "550.144.03"}, bulletin_fixes(*DRIVERS))
    [april] = {e.advisory_id: e for e in status.exposures if "5630" in e.advisory_id}.values()
    fixes_by_branch = dict(april.branch_fixes)
    assert fixes_by_branch["R550"] == "550.163.01" and fixes_by_branch["R535"] == "535.247.01"
    [stored] = [d for d in exposure_dicts((april,))]
    assert stored["branch_fixes"]["R535"] == "535.247.01"
