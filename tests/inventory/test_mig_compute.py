"""Compute instances inside a MIG GPU instance: NVIDIA's sizes and counts per GI, refusals in
plain words, and the SHARE-002 / SHARE-003 warnings for tenants sharing one GI; no database."""

from __future__ import annotations

import pytest

from inventory.mig_profiles import CI_SLICES, MODELS, ci_profile_name, ci_profiles
from partitioner.compute import ComputeRequest, ci_size
from partitioner.layout import ComputeInstance, InstanceRequest, validate_layout
from partitioner.tenancy import ClassRules

R, C = InstanceRequest, ComputeRequest
EVERY_PROFILE = [(model, name) for model, gpu in MODELS.items() for name in gpu.profiles]
# (model, GI profile, CI slices, most of them) for every CI size of every profile of every model
EVERY_CI = [
    (model, name, k, most)
    for model, gpu in MODELS.items()
    for name, prof in gpu.profiles.items()
    for k, most in ci_profiles(prof).items()
]


def test_ci_table() -> None:
    # nvidia-smi mig -lcip on an A100 (go-nvml's dgxa100 mock): no 3c in a 4g, one 2c in a 3g.
    assert CI_SLICES[7] == {1: 7, 2: 3, 3: 2, 4: 1, 7: 1}
    assert CI_SLICES[4] == {1: 4, 2: 2, 4: 1}
    assert CI_SLICES[3] == {1: 3, 2: 1, 3: 1}
    for gi, sizes in CI_SLICES.items():
        assert max(sizes) == gi and sizes[gi] == 1  # the whole GI is one of its CIs
        assert all(k * most <= gi for k, most in sizes.items())


@pytest.mark.parametrize(("model", "name", "k", "most"), EVERY_CI)
def test_each_ci_size_fits_up_to_its_count(model: str, name: str, k: int, most: int) -> None:
    prof = MODELS[model].profiles[name]
    full = ci_profile_name(prof, k)
    assert full == (name if k == prof.compute else f"{k}c.{name}")
    for spelling in {f"{k}c", full}:
        result = validate_layout(model, [R(name, compute_instances=(C(spelling),) * most)])
        assert result.valid, result.errors
        (placed,) = result.placements
        assert placed.compute_instances == (ComputeInstance(full, k, None),) * most
    refused = validate_layout(model, [R(name, compute_instances=(C(f"{k}c"),) * (most + 1))])
    assert not refused.valid
    assert any(f"{most + 1} x {full} requested, at most {most} fit" in e for e in refused.errors)


@pytest.mark.parametrize(("model", "name"), EVERY_PROFILE)
def test_sizes_a_gi_does_not_offer_are_refused(model: str, name: str) -> None:
    prof = MODELS[model].profiles[name]
    for k in range(1, 9):
        if k in ci_profiles(prof):
            continue
        result = validate_layout(model, [R(name, compute_instances=(C(f"{k}c"),))])
        assert result.errors[0].startswith(
            f"GPU instance 1 ({name}): '{k}c' is not a compute-instance profile of {name}; "
            "allowed: "
        )


@pytest.mark.parametrize(
    ("gi", "cis", "error"),
    [
        ("3g.40gb", ["1c", "2c"], None),
        ("3g.40gb", ["1c", "1c", "1c"], None),
        ("3g.40gb", ["3g.40gb"], None),
        ("7g.80gb", ["4c", "3c"], None),
        ("7g.80gb", ["3c", "3c", "1c"], None),
        ("7g.80gb", ["2c", "2c", "2c", "1c"], None),
        ("4g.40gb", ["2c", "2c"], None),
        ("4g.40gb", ["2c", "1c", "1c"], None),
        (
            "3g.40gb",
            ["2c", "2c"],
            "GPU instance 1 (3g.40gb): its compute instances need 4 compute slices "
            "(2c.3g.40gb + 2c.3g.40gb), a 3g.40gb GPU instance has 3",
        ),
        (
            "7g.80gb",
            ["4c", "4c"],
            "GPU instance 1 (7g.80gb): its compute instances need 8 compute slices "
            "(4c.7g.80gb + 4c.7g.80gb), a 7g.80gb GPU instance has 7",
        ),
        (
            "4g.40gb",
            ["3c"],
            "GPU instance 1 (4g.40gb): '3c' is not a compute-instance profile of 4g.40gb; "
            "allowed: 1c.4g.40gb, 2c.4g.40gb or 4g.40gb",
        ),
        (
            "3g.40gb",
            ["1c.4g.40gb"],
            "GPU instance 1 (3g.40gb): '1c.4g.40gb' is not a compute-instance profile of "
            "3g.40gb; allowed: 1c.3g.40gb, 2c.3g.40gb or 3g.40gb",
        ),
        (
            "1g.10gb",
            ["1c", "1c"],
            "GPU instance 1 (1g.10gb): its compute instances need 2 compute slices "
            "(1g.10gb + 1g.10gb), a 1g.10gb GPU instance has 1",
        ),
    ],
)
def test_ci_splits(gi: str, cis: list[str], error: str | None) -> None:
    result = validate_layout("H100-80GB", [R(gi, compute_instances=tuple(C(c) for c in cis))])
    assert result.valid is (error is None)
    if error:
        assert result.errors[0] == error
        assert result.placements == []  # nothing is placed while a request is wrong


def test_ci_size_names() -> None:
    prof = MODELS["A100-40GB"].profiles["3g.20gb"]
    names = ("1c", "2c.3g.20gb", "3g.20gb", "3c", "4c", "1c.3g.40gb")
    assert [ci_size(prof, n) for n in names] == [1, 2, 3, 3, None, None]
    assert ci_size(prof, "c") is None and ci_size(prof, "1g.5gb") is None


def test_ci_errors_name_the_gi_by_its_position() -> None:
    result = validate_layout(
        "A100-80GB", [R("1g.10gb"), R("3g.40gb", compute_instances=(C("2c"), C("2c")))]
    )
    assert result.errors[0].startswith("GPU instance 2 (3g.40gb): ")


# --- SHARE-002 and SHARE-003 -----------------------------------------------------------------

CLASSES = {
    "alpha": ClassRules("internal", ("exclusive", "mig_gi", "vgpu_fixed", "vgpu_equal")),
    "beta": ClassRules("external", ("exclusive", "mig_gi")),
    "ops": ClassRules("platform", ("exclusive", "mig_gi", "mig_ci", "mps", "time_slicing")),
    "ops2": ClassRules("platform", ("exclusive", "mig_gi", "mig_ci", "mps", "time_slicing")),
    "lab": ClassRules("internal_trusted", ("exclusive", "mig_gi", "mig_ci"), ("mig_ci",)),
    "lab2": ClassRules("internal_trusted", ("exclusive", "mig_gi", "mig_ci"), ("mig_ci",)),
}


def split_between(*tenants: str | None, gi_tenant: str | None = None) -> list[InstanceRequest]:
    cis = tuple(C("1c", t) for t in tenants)
    return [R("3g.40gb", tenant=gi_tenant, compute_instances=cis)]


def checks(result) -> list[tuple[str, tuple[str, ...], str]]:
    return [(w.check, w.tenants, w.mode) for w in result.warning_details]


@pytest.mark.parametrize(
    ("wanted", "expected"),
    [
        # one tenant in every CI: nothing shared
        (split_between("alpha", "alpha", gi_tenant="alpha"), []),
        # CIs inherit the GI's tenant
        (split_between(None, None, gi_tenant="beta"), []),
        # two tenants in one GI: SHARE-002 always; SHARE-003 as both classes forbid mig_ci
        (
            split_between("alpha", "beta"),
            [
                ("SHARE-002", ("alpha", "beta"), "mig_ci"),
                ("SHARE-003", ("alpha", "beta"), "mig_ci"),
            ],
        ),
        # a GI of alpha with a CI for beta is shared too
        (
            split_between(None, "beta", gi_tenant="alpha"),
            [
                ("SHARE-002", ("alpha", "beta"), "mig_ci"),
                ("SHARE-003", ("alpha", "beta"), "mig_ci"),
            ],
        ),
        # platform allows mig_ci with anyone: SHARE-002 still, as CIs isolate nothing
        (split_between("ops", "ops2"), [("SHARE-002", ("ops", "ops2"), "mig_ci")]),
        # only one side forbids it: still SHARE-003
        (
            split_between("ops", "alpha"),
            [
                ("SHARE-002", ("alpha", "ops"), "mig_ci"),
                ("SHARE-003", ("alpha", "ops"), "mig_ci"),
            ],
        ),
        # mig_ci only with the same class: allowed within it, not with another class
        (split_between("lab", "lab2"), [("SHARE-002", ("lab", "lab2"), "mig_ci")]),
        (
            split_between("lab", "ops"),
            [
                ("SHARE-002", ("lab", "ops"), "mig_ci"),
                ("SHARE-003", ("lab", "ops"), "mig_ci"),
            ],
        ),
        # separate GIs: mig_gi, which both allow
        ([R("3g.40gb", tenant="alpha"), R("3g.40gb", tenant="beta")], []),
    ],
)
def test_tenant_warnings_table(wanted: list[InstanceRequest], expected: list) -> None:
    result = validate_layout("H100-80GB", wanted, CLASSES)
    assert result.valid
    assert checks(result) == expected
    assert [str(w) for w in result.warning_details] == result.warnings
    assert all(w.startswith(("SHARE-002: ", "SHARE-003: ")) for w in result.warnings)


def test_share_002_needs_no_trust_classes_and_says_why() -> None:
    result = validate_layout("H100-80GB", split_between("alpha", "beta"))
    assert result.warnings == [
        "SHARE-002: 3g.40gb at 0 has compute instances for alpha and beta: compute instances "
        "of one GPU instance share its memory, so they do not isolate tenants; give each "
        "tenant its own GPU instance"
    ]
    assert result.warning_details[0].instance == 0


def test_share_003_for_compute_instances_names_the_rule() -> None:
    result = validate_layout("H100-80GB", split_between("alpha", "beta"), CLASSES)
    assert result.warnings[1] == (
        "SHARE-003: tenants alpha and beta share this GPU as compute instances of 3g.40gb at 0 "
        "(mig_ci); trust class 'internal' allows only exclusive, mig_gi, vgpu_fixed, "
        "vgpu_equal (not mig_ci); trust class 'external' allows only exclusive, mig_gi "
        "(not mig_ci)"
    )


def test_a_tenant_in_two_gis_and_another_in_one_of_them() -> None:
    wanted = [
        R("3g.40gb", tenant="alpha", compute_instances=(C("1c"), C("2c", "ops"))),
        R("3g.40gb", tenant="alpha"),
    ]
    assert checks(validate_layout("H100-80GB", wanted, CLASSES)) == [
        ("SHARE-002", ("alpha", "ops"), "mig_ci"),
        ("SHARE-003", ("alpha", "ops"), "mig_ci"),
        # ops (in GI 1) and alpha (in GI 2) also share the GPU as separate GIs: allowed
    ]
