"""MIG profile table, placement search and its refusals, mig-parted round trip; no database."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.mig_profiles import MODELS, model_key, profile_of
from partitioner.layout import (
    InstanceRequest,
    Placement,
    to_mig_parted,
    validate_layout,
)
from partitioner.tenancy import ClassRules

R = InstanceRequest

EVERY_PROFILE = [(model, name) for model, gpu in MODELS.items() for name in gpu.profiles]


def starts(result: Any) -> list[tuple[str, int]]:
    return [(p.profile, p.start) for p in result.placements]


# --- the table -------------------------------------------------------------------------------


def test_table_models() -> None:
    assert set(MODELS) == {
        "A100-40GB",
        "A100-80GB",
        "H100-80GB",
        "H100-94GB",
        "H200-141GB",
        "B200",
        "GB200",
        "B300",
        "GB300",
        "H20-96GB",
    }
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
    # Blackwell and H20 names as mig-parted's config-default.yaml gives them per PCI id.
    assert [p for p in MODELS["GB200"].profiles if not p.endswith("+me")] == [
        "1g.23gb", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb"
    ]  # fmt: skip
    assert profile_of("B300", "3g.135gb").placements == (0, 4)
    assert profile_of("H20-96GB", "3g.48gb").max_instances == 2
    # One name, two profiles: GB300's base 1g (7 a GPU), H200's double-memory 1g (4 a GPU).
    assert profile_of("GB300", "1g.35gb").max_instances == 7
    assert profile_of("H200-141GB", "1g.35gb").max_instances == 4


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


@pytest.mark.parametrize(("model", "name"), EVERY_PROFILE)
def test_each_allowed_start_alone_is_valid(model: str, name: str) -> None:
    prof = profile_of(model, name)
    for start in prof.placements:
        result = validate_layout(model, [R(name, start=start)])
        assert result.valid, (start, result.errors)
        assert result.placements == [Placement(name, start, prof.size, None)]


@pytest.mark.parametrize(("model", "name"), EVERY_PROFILE)
def test_each_disallowed_start_is_refused_naming_the_allowed_ones(model: str, name: str) -> None:
    prof = profile_of(model, name)
    allowed = [str(s) for s in prof.placements]
    words = allowed[0] if len(allowed) == 1 else ", ".join(allowed[:-1]) + " or " + allowed[-1]
    refused = [s for s in range(MODELS[model].memory_slots) if s not in prof.placements]
    assert refused  # every profile has a slot it may not start at (at least slot 7)
    for start in refused:
        result = validate_layout(model, [R(name, start=start)])
        assert not result.valid and result.placements == []
        assert result.errors == [f"{name} cannot start at {start}; allowed starts: {words}"]


@pytest.mark.parametrize(("model", "name"), EVERY_PROFILE)
def test_max_instances_pinned_at_each_allowed_start_fit(model: str, name: str) -> None:
    prof = profile_of(model, name)
    starts = [s for s in prof.placements if s % prof.size == 0][: prof.max_instances]
    pinned = validate_layout(model, [R(name, start=s) for s in starts])
    assert pinned.valid and [p.start for p in pinned.placements] == starts


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
        ("NVIDIA-GB200", "GB200"),  # not a B200
        ("NVIDIA-B300-SXM6-AC", "B300"),
        ("NVIDIA-GB300", "GB300"),
        ("NVIDIA-H20", "H20-96GB"),
        ("NVIDIA-H20-141GB", None),  # another memory size: not the 96GB part's profiles
        ("NVIDIA-H800", "H100-80GB"),
        ("NVIDIA-H800-NVL", "H100-94GB"),
        ("NVIDIA-A800-SXM4-80GB", "A100-80GB"),
        ("NVIDIA-A800-40GB-Active", "A100-40GB"),
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
    [
        ("3g.40gb", 2, "0 or 4"),
        ("2g.20gb", 1, "0, 2 or 4"),
        ("1g.10gb", 7, "0, 1, 2, 3, 4, 5 or 6"),
        ("7g.80gb", 4, "0"),
        ("1g.20gb", 3, "0, 2, 4 or 6"),
    ],
)
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


# --- tenants ----------------------------------------------------------------------------------

CLASSES = {
    "alpha": ClassRules("internal", ("exclusive", "mig_gi")),
    "beta": ClassRules("whole-gpu", ("exclusive",)),
    "gamma": ClassRules("external", ("mig_gi",)),
}


def test_share_003_when_a_class_forbids_separate_gpu_instances() -> None:
    wanted = [R("3g.40gb", tenant="alpha"), R("3g.40gb", tenant="beta")]
    result = validate_layout("H100-80GB", wanted, CLASSES)
    assert result.valid
    assert result.warnings == [
        "SHARE-003: tenants alpha and beta share this GPU as separate MIG GPU instances "
        "(mig_gi); trust class 'whole-gpu' allows only exclusive (not mig_gi)"
    ]
    (detail,) = result.warning_details
    assert (detail.check, detail.tenants, detail.mode) == ("SHARE-003", ("alpha", "beta"), "mig_gi")
    both_allow = [R("3g.40gb", tenant="alpha"), R("3g.40gb", tenant="gamma")]
    assert validate_layout("H100-80GB", both_allow, CLASSES).warnings == []
    one_tenant = [R("3g.40gb", tenant="beta"), R("3g.40gb", tenant="beta"), R("1g.10gb")]
    assert validate_layout("H100-80GB", one_tenant, CLASSES).warnings == []
    # without trust classes there is nothing to judge SHARE-003 by
    assert validate_layout("H100-80GB", wanted).warnings == []


def test_unknown_tenant_has_no_class_that_allows_sharing() -> None:
    wanted = [R("1g.10gb", tenant="alpha"), R("1g.10gb", tenant="zeta")]
    assert validate_layout("H100-80GB", wanted, CLASSES).warnings == [
        "SHARE-003: tenants alpha and zeta share this GPU as separate MIG GPU instances "
        "(mig_gi); zeta has no trust class here"
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
    wanted = [R(name) for name, count in entry["mig-devices"].items() for _ in range(count)]
    assert validate_layout("H100-80GB", wanted).valid
