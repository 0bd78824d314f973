"""classify / bound / fixes on the real NVIDIA bulletins, against the SOURCES.md table (pure)."""

from __future__ import annotations

import json
from functools import cache

import pytest

from inventory.bulletins.csaf.document import Advisory, Product, parse_advisory
from inventory.bulletins.csaf.fixes import Fix, Unmatched, fixes
from inventory.bulletins.csaf.products import Bound, Component, bound, classify
from tests.realworld import realworld


@cache
def advisory(key: str) -> Advisory:
    path = realworld("csaf") / f"nvidia-{key}.json"
    return parse_advisory(json.loads(path.read_text(encoding="utf-8")))


@cache
def result(key: str) -> tuple[list[Fix], list[Unmatched]]:
    return fixes(advisory(key))


def linux_driver(key: str, line: str = "tesla") -> dict[str, str | None]:
    found = result(key)[0]
    return {
        f.component.branch or "": f.fixed_version
        for f in found
        if f.component.kind == "driver"
        and f.component.platform == "linux"
        and f.component.line == line
    }


def only(key: str, kind: str) -> list[Fix]:
    return [f for f in result(key)[0] if f.component.kind == kind]


TESLA = {
    "5312": {"R510": "510.47.03", "R470": "470.103.01"},
    "5353": {"R510": "510.73.08", "R470": "470.129.06", "R450": "450.191.01"},
    "5383": {"R515": "515.65.01", "R510": "510.85.02", "R470": "470.141.03", "R450": "450.203.03"},
    "5415": {"R515": "515.86.01", "R510": "510.108.03", "R470": "470.161.03", "R450": "450.216.04"},
    "5452": {
        "R525": "525.105.17",
        "R515": "515.105.01",
        "R470": "470.182.03",
        "R450": "450.236.01",
    },
    "5468": {"R535": "535.54.03", "R525": "525.125.06", "R470": "470.199.02", "R450": "450.248.02"},
    "5491": {"R535": "535.129.03", "R525": "525.147.05", "R470": "470.223.02"},
    "5520": {"R550": "550.54.14", "R535": "535.161.07", "R470": "470.239.06"},
    "5551": {"R550": "550.90.07", "R535": "535.183.01", "R470": "470.256.02"},
    "5557": {},
    "5586": {"R550": "550.127.05", "R535": "535.216.01"},
    "5614": {"R570": "570.86.15", "R550": "550.144.03", "R535": "535.230.02"},
    "5630": {"R575": "575.51.02", "R570": "570.133.07", "R550": "550.163.01", "R535": "535.247.01"},
    "5670": {"R570": "570.172.08", "R535": "535.261.03"},
    "5703": {"R580": "580.95.05", "R570": "570.195.03", "R535": "535.274.02"},
    "5747": {"R590": "590.48.01", "R580": "580.126.09", "R570": "570.211.01", "R535": "535.288.01"},
    "5821": {"R595": "595.71.05", "R580": "580.159.03", "R535": "535.309.01"},
}


@pytest.mark.parametrize(("key", "expected"), sorted(TESLA.items()))
def test_linux_tesla_fixed_version_per_branch(key, expected):
    assert linux_driver(key) == expected


def test_linux_tesla_affected_bound_is_exclusive():
    fix = next(
        f
        for f in only("5614", "driver")
        if f.component == Component("driver", "linux", "R535", "tesla")
    )
    assert fix.affected == Bound("<", "535.230.02")


def test_geforce_fix_differs_from_tesla_in_one_branch():
    assert linux_driver("5614", "geforce")["R570"] == "570.86.16"
    assert linux_driver("5614", "rtx")["R570"] == "570.86.16"
    assert linux_driver("5614")["R570"] == "570.86.15"
    # 5353 names one combined "GeForce, NVIDIA RTX/Quadro, NVS" product for R510.
    assert linux_driver("5353", "geforce+rtx")["R510"] == "510.73.05"
    assert linux_driver("5353")["R510"] == "510.73.08"


def test_5614_per_cve_scoping():
    tesla = [
        f
        for f in only("5614", "driver")
        if f.component.platform == "linux" and f.component.line == "tesla"
    ]
    per_branch = {f.component.branch: set(f.cves) for f in tesla}
    assert "CVE-2024-53869" in per_branch["R570"]
    assert "CVE-2024-53869" in per_branch["R550"]
    assert "CVE-2024-53869" not in per_branch["R535"]
    all_tesla = set().union(*per_branch.values())
    assert not {"CVE-2024-0146", "CVE-2024-53881"} & all_tesla
    managers = {c for f in only("5614", "vgpu_manager") for c in f.cves}
    assert {"CVE-2024-0146", "CVE-2024-53881"} <= managers


def rows(key: str) -> dict[str, tuple[Bound, str | None, tuple[str, ...], str | None]]:
    return {
        f.component.kind: (f.affected, f.fixed_version, f.cves, f.condition) for f in result(key)[0]
    }


def test_5582_container_toolkit_inclusive_bound():
    found = rows("5582")
    both = ("CVE-2024-0132", "CVE-2024-0133")
    # Both CVEs' summaries say "This does not impact use cases where CDI is used.": kept as
    # the fix's condition for inventory.conditions to judge per node.
    noted = "This does not impact use cases where CDI is used."
    assert found["container_toolkit"] == (Bound("<=", "1.16.1"), "1.16.2", both, noted)
    assert found["gpu_operator"] == (Bound("<=", "24.6.1"), "24.6.2", both, noted)
    fix = only("5582", "container_toolkit")[0]
    assert (fix.max_cvss, fix.severity, fix.advisory_id) == (9.0, "critical", "5582")
    assert result("5582")[1] == []


@pytest.mark.parametrize(
    ("key", "toolkit", "operator"),
    [
        ("5585", (Bound("<=", "1.16.2"), "1.17"), (Bound("<=", "24.6.2"), "24.9.0")),
        ("5599", (Bound("<=", "1.17.0"), "1.17.1"), (Bound("<=", "24.9.0"), "24.9.1")),
        ("5616", (Bound("<=", "1.17.3"), "1.17.4"), (Bound("<=", "24.9.1"), "24.9.2")),
        ("5850", (Bound("<=", "1.19.0"), "1.19.1"), (Bound("<=", "26.3.1"), "26.3.2")),
    ],
)
def test_toolkit_and_operator_rows(key, toolkit, operator):
    found = rows(key)
    assert found["container_toolkit"][:2] == toolkit
    assert found["gpu_operator"][:2] == operator


def test_5659_conditions_are_recorded():
    found = rows("5659")
    assert found["container_toolkit"][:2] == (
        Bound("<=", "1.17.7", "CDI mode only for versions prior to 1.17.5"),
        "1.17.8",
    )
    assert found["gpu_operator"][3] == "CDI mode only for versions prior to 25.3.1"
    plugin = found["device_plugin"]
    assert plugin[0].op == "<=" and plugin[0].version == "0.17.2" and plugin[1] == "0.17.3"
    assert plugin[3] == "only when device-list-strategy is cdi-annotations and/or cdi-cri"
    assert found["mig_manager"][:2] == (Bound("<=", "0.12.1", "only when CDI is enabled"), "0.12.2")
    # A document note limits CVE-2025-23266 alone (crun): one fix per set of conditions.
    plugin_fixes = {f.cves: f.condition for f in only("5659", "device_plugin")}
    crun = "CVE-2025-23266 does not affect systems where crun is used as the low-level runtime."
    assert plugin_fixes == {
        ("CVE-2025-23266",): f"{plugin[3]}\n{crun}",
        ("CVE-2025-23267",): plugin[3],
    }


def test_5857_contradictory_range_is_recorded_and_flagged():
    exporter = only("5857", "dcgm_exporter")[0]
    assert (exporter.affected, exporter.fixed_version) == (Bound("<=", "4.8.2"), "4.8.2")
    assert exporter.warning and "includes fixed 4.8.2" in exporter.warning
    dcgm = only("5857", "dcgm")[0]
    assert (dcgm.affected, dcgm.fixed_version, dcgm.warning) == (
        Bound("<=", "4.5.2"),
        "4.5.3",
        None,
    )


@pytest.mark.parametrize(
    ("key", "kind", "affected", "fixed"),
    [
        ("5328", "dcgm", Bound("<", "2.3.4"), "2.3.4"),
        ("5453", "dcgm", Bound("<", "3.1.7"), "3.1.7"),
        ("5818", "kai_scheduler", Bound("<", "0.13.0"), "0.13.0"),
    ],
)
def test_other_data_center_rows(key, kind, affected, fixed):
    (fix,) = only(key, kind)
    assert (fix.affected, fix.fixed_version) == (affected, fixed)


def test_5703_typo_is_unmatched_not_misassigned():
    unmatched = result("5703")[1]
    typo = [u for u in unmatched if u.product_id.startswith("linuxr535_vgpu_16_guest_driver_575")]
    assert typo and "does not belong to branch R535" in typo[0].reason
    guests = [
        f
        for f in only("5703", "vgpu_guest")
        if f.component.branch == "R535" and f.component.platform == "linux"
    ]
    # The affected bound stands on its own (its versions are exposed); the typo is not its fix.
    assert [(g.affected, g.fixed_version) for g in guests] == [(Bound("<=", "535.261.03"), None)]
    assert all(f.fixed_version != "575.274.02" for f in result("5703")[0])


def test_unclassifiable_products_stay_visible():
    path = realworld("csaf") / "oasis-2022-evd-uc-04-001.json"
    vex = parse_advisory(json.loads(path.read_text(encoding="utf-8")))
    found, unmatched = fixes(vex)
    assert found == []
    assert {u.product_id for u in unmatched} == {"CSAFPID-0002", "CSAFPID-0003", "CSAFPID-0004"}
    assert all(u.reason == "not a component gpuposture inventories" for u in unmatched)


def test_several_fixes_pair_each_bound_with_the_lowest_fix_past_it_and_say_so():
    # 5614 lists two Windows Tesla R570 bounds and fixes (572.13 and 572.16): each bound keeps
    # its exposure, paired with the lowest fix it does not cover, with a warning naming both.
    rows = {
        (f.affected.version, f.fixed_version, f.warning)
        for f in result("5614")[0]
        if f.component == Component("driver", "windows", "R570", "tesla")
    }
    several = "several fixed versions for one component: 572.13, 572.16"
    assert rows >= {
        ("572.13", "572.13", f"{several} (572.13)"),
        ("572.16", "572.16", f"{several} (572.16)"),
    }


# --- bound() and classify() on hand-made products -----------------------------------------------


def product(name: str, arch: str = "Linux", label: str = "Tesla") -> Product:
    path = (("vendor", "NVIDIA"), ("architecture", arch), ("product_version", label))
    return Product("p", name, path, None, None)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("All driver versions prior to 535.230.02", Bound("<", "535.230.02")),
        ("All versions up to and including v1.16.1", Bound("<=", "1.16.1")),
        ("0.0  to 4.8.2", Bound("<=", "4.8.2")),
        ("v1.16.2", Bound("==", "1.16.2")),
        ("535.216.01(All versions up to and including vGPU 16.8)", Bound("<=", "535.216.01")),
        ("535.230.02(vGPU 16.9)", Bound("==", "535.230.02")),
        ("2.3.4 and 2.3.5 (latest)", Bound("==", "2.3.4")),
        ("All driver version prior to 570.172.08", Bound("<", "570.172.08")),
        (
            "All versions up to and including 1.17.7 (CDI mode only for versions prior to 1.17.5)",
            Bound("<=", "1.17.7", "CDI mode only for versions prior to 1.17.5"),
        ),
        ("versions prior to 1.17.8", Bound("<", "1.17.8")),
        ("Prior to 1.17.8", Bound("<", "1.17.8")),
        ("before v1.17.8", Bound("<", "1.17.8")),
        ("< 1.17.8", Bound("<", "1.17.8")),
        ("<=1.17.7", Bound("<=", "1.17.7")),
        ("up to and including 25.3.1", Bound("<=", "25.3.1")),
        ("All driver versions", None),
        ("Available the week of June 29, 2023", None),
    ],
)
def test_bound(name, expected):
    assert bound(product(name)) == expected


@pytest.mark.parametrize(
    ("arch", "label", "expected"),
    [
        ("Linux(R535)", "Tesla", Component("driver", "linux", "R535", "tesla")),
        ("Windows(R570)", "GeForce", Component("driver", "windows", "R570", "geforce")),
        ("Linux(R570)", "NVIDIA RTX, Quadro, NVS", Component("driver", "linux", "R570", "rtx")),
        ("Linux(R580)", "Data Center", Component("driver", "linux", "R580", "tesla")),
        ("Linux(R580)", "Tesla, Data Center", Component("driver", "linux", "R580", "tesla")),
        ("Linux", "NVIDIA Data Center GPU Manager", Component("dcgm", "linux", None, None)),
        (
            "Linux(R550 vGPU 17)",
            "Guest driver",
            Component("vgpu_guest", "linux", "R550", "vGPU 17"),
        ),
        (
            "Ubuntu(R535 vGPU 16)",
            "Virtual GPU Manager",
            Component("vgpu_manager", None, "R535", "vGPU 16", "Ubuntu"),
        ),
        ("Linux", "NVIDIA Container Toolkit", Component("container_toolkit", "linux", None, None)),
        ("All(4.8)", "DCGM Exporter", Component("dcgm_exporter", None, "4.8", None)),
        ("Linux", "Some Other Product", None),
    ],
)
def test_classify(arch, label, expected):
    assert classify(product("1.0", arch, label)) == expected


def test_the_sla_clock_of_a_fix_starts_when_it_was_published_not_at_the_last_revision():
    # 5659 v2.0.0 (2025-08-12) revised an advisory first out on 2025-07-15 with its fixes.
    assert advisory("5659").current_release_date.startswith("2025-08-12")
    assert {f.released[:10] for f in result("5659")[0]} == {"2025-07-15"}
