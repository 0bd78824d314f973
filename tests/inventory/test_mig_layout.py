"""MIG profile table, placement search and its refusals, mig-parted round trip; no database."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from inventory.mig_layout import (
    InstanceRequest,
    Placement,
    tenant_warnings,
    to_mig_parted,
    validate_layout,
)
from inventory.mig_profiles import MODELS, model_key, profile_of
from tests.realworld import realworld

R = InstanceRequest

EVERY_PROFILE = [(model, name) for model, gpu in MODELS.items() for name in gpu.profiles]


def starts(result: Any) -> list[tuple[str, int]]:
    return [(p.profile, p.start) for p in result.placements]


# --- the table -------------------------------------------------------------------------------


def test_table_models() -> None:
    assert set(MODELS) == {
        "A100-40GB", "A100-80GB", "H100-80GB", "H100-94GB", "H200-141GB", "B200",
    }  # fmt: skip
    for gpu in MODELS.values():
        assert (gpu.memory_slots, gpu.compute_slices, len(gpu.profiles)) == (8, 7, 7)
        for prof in gpu.profiles.values():
            assert prof.compute == int(prof.name.split("g.")[0])
            assert all(s + prof.size <= gpu.memory_slots for s in prof.placements)


def test_table_spot_facts() -> None:
    assert profile_of("A100-40GB", "1g.10gb").placements == (0, 2, 4, 6)
    assert profile_of("A100-40GB", "1g.10gb").max_instances == 4
    assert profile_of("H100-80GB", "3g.40gb").placements == (0, 4)
    assert profile_of("H100-80GB", "7g.80gb").size == 8
    assert profile_of("B200", "7g.180gb").compute == 7
    assert profile_of("H200-141GB", "1g.18gb+me").max_instances == 1
    assert profile_of("H100-80GB", "1g.5gb") is None
    assert profile_of("A30", "1g.6gb") is None


@pytest.mark.parametrize(("model", "name"), EVERY_PROFILE)
def test_single_instance_fits_at_first_placement(model: str, name: str) -> None:
    result = validate_layout(model, [R(name)])
    prof = profile_of(model, name)
    assert result.valid, result.errors
    assert result.placements == [Placement(name, prof.placements[0], prof.size, None)]
    assert (result.compute_slices_used, result.memory_slices_used) == (prof.compute, prof.size)


@pytest.mark.parametrize(("model", "name"), EVERY_PROFILE)
def test_max_instances_fit_and_one_more_is_refused(model: str, name: str) -> None:
    most = profile_of(model, name).max_instances
    assert validate_layout(model, [R(name)] * most).valid
    refused = validate_layout(model, [R(name)] * (most + 1))
    assert not refused.valid
    assert f"{name}: {most + 1} requested, at most {most} fit on one {model}" in refused.errors


# --- model names ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("NVIDIA-H100-80GB-HBM3", "H100-80GB"),
        ("NVIDIA-A100-SXM4-40GB", "A100-40GB"),
        ("NVIDIA-A100-SXM4-80GB", "A100-80GB"),
        ("NVIDIA-A100-PCIE-40GB", "A100-40GB"),
        ("NVIDIA-A100-80GB-PCIe", "A100-80GB"),
        ("NVIDIA-H100-PCIe", "H100-80GB"),
        ("NVIDIA-H100-NVL", "H100-94GB"),
        ("NVIDIA-H200", "H200-141GB"),
        ("NVIDIA-H200-NVL", "H200-141GB"),
        ("NVIDIA-B200", "B200"),
        ("H100-80GB", "H100-80GB"),
        ("h100-80gb", "H100-80GB"),
        ("A100-40GB", "A100-40GB"),
        ("H100-94GB", "H100-94GB"),
        ("H200-141GB", "H200-141GB"),
        ("NVIDIA-GB200", None),  # not a B200
        ("NVIDIA-GH200-480GB", None),  # not an H200
        ("NVIDIA-A100", None),  # 40 or 80 GB: ambiguous
        ("NVIDIA-H100-64GB", None),
        ("NVIDIA-A30", None),
        ("Tesla-T4", None),
        ("", None),
    ],
)
def test_model_key(name: str, key: str | None) -> None:
    assert model_key(name) == key


# --- refusals --------------------------------------------------------------------------------


def test_unknown_model_and_profile_are_errors_not_exceptions() -> None:
    result = validate_layout("NVIDIA-T4", [R("1g.10gb")])
    assert not result.valid and result.model is None
    assert result.errors == ["unknown GPU model 'NVIDIA-T4' for MIG"]
    result = validate_layout("A100-40GB", [R("1g.10gb"), R("3g.40gb")])
    assert not result.valid and result.model == "A100-40GB"
    assert result.errors[0].startswith("'3g.40gb' is not a MIG profile of A100-40GB; known: ")


@pytest.mark.parametrize(
    ("profile", "start", "allowed"),
    [("3g.40gb", 2, "0 or 4"), ("2g.20gb", 1, "0, 2 or 4"), ("1g.10gb", 7, "0, 1, 2, 3, 4, 5 or 6"),
     ("7g.80gb", 4, "0"), ("1g.20gb", 3, "0, 2, 4 or 6")],
)  # fmt: skip
def test_bad_explicit_start_refused(profile: str, start: int, allowed: str) -> None:
    result = validate_layout("H100-80GB", [R(profile, start=start)])
    assert result.errors == [f"{profile} cannot start at {start}; allowed starts: {allowed}"]


def test_explicit_overlap_refused() -> None:
    result = validate_layout("H100-80GB", [R("3g.40gb", start=4), R("2g.20gb", start=4)])
    assert result.errors == ["2g.20gb at 4 needs slots 4-5, taken by 3g.40gb at 4"]
    result = validate_layout("H100-80GB", [R("1g.10gb", start=5), R("1g.10gb", start=5)])
    assert result.errors == ["1g.10gb at 5 needs slot 5, taken by 1g.10gb at 5"]


def test_compute_budget_refused() -> None:
    result = validate_layout("H100-80GB", [R("4g.40gb"), R("3g.40gb"), R("1g.10gb")])
    assert "compute slices: 8 requested, the GPU has 7" in result.errors
    result = validate_layout("H100-80GB", [R("7g.80gb"), R("1g.10gb+me")])
    assert "compute slices: 8 requested, the GPU has 7" in result.errors


def test_memory_budget_refused() -> None:
    result = validate_layout("A100-80GB", [R("3g.40gb"), R("1g.20gb"), R("1g.20gb"), R("1g.20gb")])
    assert result.errors == ["memory slices: 10 requested, the GPU has 8"]


def test_only_one_media_engine_instance() -> None:
    result = validate_layout("H100-80GB", [R("1g.10gb+me"), R("1g.10gb+me")])
    assert result.errors == ["1g.10gb+me: 2 requested, at most 1 fit on one H100-80GB"]
    ok = validate_layout("H100-80GB", [R("1g.10gb+me")] + [R("1g.10gb")] * 6)
    assert ok.valid and ok.compute_slices_used == 7


# --- fragmentation on H100-80GB --------------------------------------------------------------


def test_search_places_large_first_so_the_balanced_mix_fits() -> None:
    result = validate_layout("H100-80GB", [R("1g.10gb"), R("1g.10gb"), R("2g.20gb"), R("3g.40gb")])
    assert result.valid
    # 3g.40gb at 0 leaves 2g at 4 and the 1g instances only slot 6 (none may start at 7),
    # so the search backtracks to 3g.40gb at 4.
    assert starts(result) == [("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3), ("3g.40gb", 4)]
    assert (result.compute_slices_used, result.memory_slices_used) == (7, 8)


def test_pinned_small_instance_moves_3g_to_the_other_half() -> None:
    result = validate_layout("H100-80GB", [R("1g.10gb", start=0), R("3g.40gb")])
    assert result.valid and starts(result) == [("1g.10gb", 0), ("3g.40gb", 4)]
    result = validate_layout("H100-80GB", [R("1g.10gb", start=6), R("3g.40gb"), R("2g.20gb")])
    assert result.valid
    assert starts(result) == [("3g.40gb", 0), ("2g.20gb", 4), ("1g.10gb", 6)]


def test_fragmented_grid_refuses_3g_with_reason() -> None:
    result = validate_layout(
        "H100-80GB",
        [R("1g.10gb", start=1), R("2g.20gb", start=4), R("1g.10gb", start=6), R("3g.40gb")],
    )
    assert not result.valid
    assert result.errors == [
        "no arrangement fits: 3g.40gb needs 4 memory slices starting at 0 or 4; "
        "slots 0-3 are taken by 1g.10gb at 1; slots 4-7 are taken by 2g.20gb at 4 and "
        "1g.10gb at 6"
    ]
    # what could be placed is still shown
    assert starts(result) == [("1g.10gb", 1), ("2g.20gb", 4), ("1g.10gb", 6)]


def test_1g_at_slot_7_is_never_used_so_seven_1g_and_nothing_else() -> None:
    # 7 x 1g.10gb fill slots 0-6; slot 7 stays free but no profile may start there.
    result = validate_layout("H100-80GB", [R("1g.10gb")] * 7)
    assert [p.start for p in result.placements] == list(range(7))
    assert result.memory_slices_used == 7


def test_1g20gb_grid_of_two_blocks_fragmentation() -> None:
    # 1g.20gb at 2 and 6 leave 0-1 and 4-5: room for two 2g but not a 3g.
    pins = [R("1g.20gb", start=2), R("1g.20gb", start=6)]
    assert validate_layout("H100-80GB", pins + [R("2g.20gb"), R("2g.20gb")]).valid
    refused = validate_layout("H100-80GB", pins + [R("3g.40gb")])
    assert not refused.valid
    assert "slots 0-3 are taken by 1g.20gb at 2" in refused.errors[0]


def test_output_is_deterministic() -> None:
    wanted = [R("1g.10gb", tenant="b"), R("2g.20gb", tenant="a"), R("1g.10gb", tenant="a")]
    first = validate_layout("A100-80GB", wanted)
    assert first == validate_layout("A100-80GB", list(reversed(wanted)))
    assert [p.start for p in first.placements] == sorted(p.start for p in first.placements)


# --- the real mig-parted default config ------------------------------------------------------

# PCI device ids named in the config's device filters, for the models our table knows.
DEVICE_MODELS = {
    "0x20B210DE": "A100-80GB", "0x20B510DE": "A100-80GB",
    "0x233010DE": "H100-80GB", "0x233110DE": "H100-80GB",
    "0x20B010DE": "A100-40GB", "0x20B110DE": "A100-40GB",
    "0x232110DE": "H100-94GB",
    "0x233510DE": "H200-141GB", "0x233B10DE": "H200-141GB",
    "0x290110DE": "B200",
}  # fmt: skip


@pytest.fixture(scope="module")
def default_configs() -> dict[str, list[dict[str, Any]]]:
    path = realworld("mig", "mig-parted-config-default.yaml")
    return yaml.safe_load(path.read_text(encoding="utf-8"))["mig-configs"]


def entry_models(entry: dict[str, Any]) -> set[str]:
    """Table models an entry applies to: its device filter's, or all that know its profiles."""
    wanted = entry["mig-devices"]
    devices = entry.get("device-filter")
    if devices is None:
        return {m for m, gpu in MODELS.items() if set(wanted) <= set(gpu.profiles)}
    devices = [devices] if isinstance(devices, str) else devices
    return {DEVICE_MODELS[d] for d in devices if d.upper().replace("X", "x") in DEVICE_MODELS}


def requests(mig_devices: dict[str, int]) -> list[InstanceRequest]:
    return [R(name) for name, count in mig_devices.items() for _ in range(count)]


def test_all_balanced_fits(default_configs: dict[str, list[dict[str, Any]]]) -> None:
    checked = {}
    for entry in default_configs["all-balanced"]:
        for model in entry_models(entry):
            result = validate_layout(model, requests(entry["mig-devices"]))
            assert result.valid, (model, result.errors)
            assert result.compute_slices_used == 7
            checked[model] = sorted(entry["mig-devices"].items())
    assert set(checked) == set(MODELS)
    assert checked["A100-40GB"] == [("1g.5gb", 2), ("2g.10gb", 1), ("3g.20gb", 1)]
    assert checked["H100-94GB"] == [("1g.12gb", 2), ("2g.24gb", 1), ("3g.47gb", 1)]
    assert checked["B200"] == [("1g.23gb", 2), ("2g.45gb", 1), ("3g.90gb", 1)]


def test_every_all_profile_config_fits(default_configs: dict[str, list[dict[str, Any]]]) -> None:
    checked = set()
    for name, entries in default_configs.items():
        if name in {"all-disabled", "all-enabled", "all-balanced"} or not name.startswith("all-"):
            continue
        for entry in entries:
            if not entry.get("mig-enabled") or not entry.get("mig-devices"):
                continue
            for model in entry_models(entry):
                result = validate_layout(model, requests(entry["mig-devices"]))
                assert result.valid, (name, model, result.errors)
                checked.add((name, model))
    assert ("all-1g.10gb", "A100-40GB") in checked  # the 4-instance 1g.10gb of a 40GB card
    assert ("all-1g.10gb", "H100-80GB") in checked
    assert ("all-1g.35gb", "H200-141GB") in checked
    assert ("all-7g.180gb", "B200") in checked
    assert len(checked) >= 35


def test_all_profile_counts_are_our_max_instances(
    default_configs: dict[str, list[dict[str, Any]]],
) -> None:
    for entry in default_configs["all-1g.10gb"]:
        for model in entry_models(entry):
            count = entry["mig-devices"]["1g.10gb"]
            assert count == profile_of(model, "1g.10gb").max_instances
            assert not validate_layout(model, [R("1g.10gb")] * (count + 1)).valid


# --- tenants and mig-parted output -----------------------------------------------------------

MODES = {"alpha": ("exclusive", "mig_gi"), "beta": ("exclusive",), "gamma": ("mig_gi",)}


def test_tenant_warnings() -> None:
    wanted = [R("3g.40gb", tenant="alpha"), R("3g.40gb", tenant="beta")]
    result = validate_layout("H100-80GB", wanted, allowed_modes=MODES)
    assert result.valid
    assert result.warnings == [
        "tenants beta and alpha share this GPU as separate MIG GPU instances (mig_gi); "
        "trust class of beta allows: exclusive"
    ]
    both_allow = [R("3g.40gb", tenant="alpha"), R("3g.40gb", tenant="gamma")]
    assert validate_layout("H100-80GB", both_allow, allowed_modes=MODES).warnings == []
    one_tenant = [R("3g.40gb", tenant="beta"), R("3g.40gb", tenant="beta"), R("1g.10gb")]
    assert validate_layout("H100-80GB", one_tenant, allowed_modes=MODES).warnings == []
    # without allowed_modes there is nothing to judge by
    assert validate_layout("H100-80GB", wanted).warnings == []


def test_tenant_warnings_unknown_tenant_allows_nothing() -> None:
    placements = [Placement("1g.10gb", 0, 1, "alpha"), Placement("1g.10gb", 1, 1, "zeta")]
    assert tenant_warnings(placements, MODES) == [
        "tenants zeta and alpha share this GPU as separate MIG GPU instances (mig_gi); "
        "trust class of zeta allows: nothing"
    ]


def test_to_mig_parted_shape_round_trips() -> None:
    result = validate_layout("H100-80GB", [R("1g.10gb"), R("3g.40gb"), R("1g.10gb")])
    config = to_mig_parted("tenant-a-b", result.placements)
    assert config == {
        "version": "v1",
        "mig-configs": {
            "tenant-a-b": [
                {
                    "devices": "all",
                    "mig-enabled": True,
                    "mig-devices": {"1g.10gb": 2, "3g.40gb": 1},
                }
            ]
        },
    }
    (entry,) = config["mig-configs"]["tenant-a-b"]
    assert validate_layout("H100-80GB", requests(entry["mig-devices"])).valid
