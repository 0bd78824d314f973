"""tenants.policy: the default trust classes, may_share and node_sharing_mode (DESIGN §2, §3)."""

from __future__ import annotations

import itertools

import pytest

from tenants.policy import (
    DEFAULT_TRUST_CLASSES,
    SHARING_MODES,
    may_share,
    node_sharing_mode,
)
from tests.posture.builders import trust_class

SLUGS = [d["slug"] for d in DEFAULT_TRUST_CLASSES]


def test_default_classes_are_the_five_of_design_section_3():
    assert SLUGS == ["platform", "internal_trusted", "internal", "external", "sensitive"]
    for data in DEFAULT_TRUST_CLASSES:
        assert set(data["allowed_modes"]) <= set(SHARING_MODES), data["slug"]
        assert set(data["same_class_only_modes"]) <= set(data["allowed_modes"]), data["slug"]


def test_default_class_details():
    by_slug = {d["slug"]: d for d in DEFAULT_TRUST_CLASSES}
    assert by_slug["platform"]["allowed_modes"] == SHARING_MODES
    assert by_slug["internal_trusted"]["same_class_only_modes"] == ("time_slicing",)
    assert "mig_ci" not in by_slug["internal_trusted"]["allowed_modes"]
    assert by_slug["internal"]["allowed_modes"] == (
        "exclusive",
        "mig_gi",
        "vgpu_fixed",
        "vgpu_equal",
    )
    assert by_slug["external"]["allowed_modes"] == ("exclusive", "mig_gi")
    assert by_slug["external"]["requires_dedicated_pool"] is True
    assert by_slug["sensitive"]["requires_reset_attestation"] is True
    assert by_slug["sensitive"]["approval_expiry_days"] == 90
    assert by_slug["internal"]["approval_expiry_days"] is None


def test_rank_makes_sensitive_strictly_highest_and_is_a_total_order():
    ranks = {d["slug"]: d["rank"] for d in DEFAULT_TRUST_CLASSES}
    assert len(set(ranks.values())) == len(ranks)
    assert all(ranks["sensitive"] > r for slug, r in ranks.items() if slug != "sensitive")
    # Same order and values as the seed migration 0002_default_trust_classes.
    assert ranks == {
        "platform": 0,
        "internal_trusted": 1,
        "internal": 2,
        "external": 3,
        "sensitive": 4,
    }


@pytest.mark.parametrize(
    ("a", "b", "mode", "allowed", "forbidden_by"),
    [
        ("internal", "internal", "vgpu_fixed", True, ()),
        ("internal", "internal_trusted", "vgpu_equal", True, ()),
        ("internal", "internal", "vgpu_best_effort", False, ("internal",)),
        ("internal_trusted", "internal_trusted", "time_slicing", True, ()),
        ("internal_trusted", "internal", "time_slicing", False, ("internal_trusted", "internal")),
        ("internal_trusted", "platform", "time_slicing", False, ("internal_trusted",)),
        ("internal_trusted", "internal", "mps", False, ("internal",)),
        ("internal_trusted", "internal_trusted", "mps", True, ()),
        ("external", "internal", "time_slicing", False, ("external", "internal")),
        ("external", "platform", "mps", False, ("external",)),
        ("sensitive", "external", "mig_gi", True, ()),
        ("sensitive", "platform", "time_slicing", False, ("sensitive",)),
        ("platform", "platform", "mig_ci", True, ()),
        ("platform", "internal_trusted", "mig_ci", False, ("internal_trusted",)),
    ],
)
def test_may_share(a, b, mode, allowed, forbidden_by):
    decision = may_share(trust_class(a), trust_class(b), mode)
    assert decision.allowed is allowed
    assert decision.forbidden_by == forbidden_by
    assert decision.rule


def test_rule_names_the_forbidding_class_and_its_modes():
    decision = may_share(trust_class("external"), trust_class("platform"), "time_slicing")
    assert (
        decision.rule == "trust class 'external' allows only exclusive, mig_gi (not time_slicing)"
    )
    same_class = may_share(trust_class("internal_trusted"), trust_class("platform"), "time_slicing")
    assert "only with other 'internal_trusted' tenants, not with 'platform'" in same_class.rule


@pytest.mark.parametrize(("a", "b"), list(itertools.product(SLUGS, repeat=2)))
def test_symmetric_and_isolated_modes_always_allowed(a, b):
    for mode in SHARING_MODES:
        forward = may_share(trust_class(a), trust_class(b), mode)
        backward = may_share(trust_class(b), trust_class(a), mode)
        assert forward.allowed == backward.allowed, (a, b, mode)
        assert set(forward.forbidden_by) == set(backward.forbidden_by)
    for mode in ("exclusive", "mig_gi"):
        assert may_share(trust_class(a), trust_class(b), mode).allowed


def test_within_one_tenant_any_mode_is_allowed():
    external = trust_class("external")
    for mode in SHARING_MODES:
        assert may_share(external, external, mode, same_tenant=True).allowed


def test_unknown_mode_is_refused_not_guessed():
    decision = may_share(trust_class("platform"), trust_class("platform"), "magic")
    assert not decision.allowed
    assert "not a known sharing mode" in decision.rule


@pytest.mark.parametrize(
    ("strategy", "resource", "kwargs", "expected"),
    [
        ("none", "nvidia.com/gpu", {}, "exclusive"),
        ("none", "nvidia.com/mig-1g.10gb", {}, "mig_gi"),
        ("none", "nvidia.com/gpu.shared", {}, "time_slicing"),
        ("time_slicing", "nvidia.com/gpu", {}, "time_slicing"),
        ("time_slicing", "nvidia.com/gpu.shared", {}, "time_slicing"),
        ("time_slicing", "nvidia.com/mig-1g.10gb", {}, "time_slicing"),
        ("time_slicing", "nvidia.com/mig-1g.10gb.shared", {}, "time_slicing"),
        ("mps", "nvidia.com/gpu", {}, "mps"),
        ("mps", "nvidia.com/gpu.shared", {}, "mps"),
        ("mps", "nvidia.com/mig-3g.40gb", {}, "mig_gi"),
        ("mig", "nvidia.com/mig-3g.40gb", {}, "mig_gi"),
        ("mig", "nvidia.com/mig-1g.10gb+me", {}, "mig_gi"),
        ("mig", "nvidia.com/mig-1c.3g.40gb", {}, "mig_ci"),
        ("mig", "nvidia.com/gpu", {}, "mig_gi"),
        ("mig", "nvidia.com/gpu", {"mig_strategy": "single"}, "mig_gi"),
        ("mig", "nvidia.com/gpu", {"mig_strategy": "mixed"}, "exclusive"),
        ("vgpu", "nvidia.com/gpu", {}, "vgpu_best_effort"),
        ("vgpu", "nvidia.com/gpu", {"vgpu_scheduler": "fixed"}, "vgpu_fixed"),
        ("vgpu", "nvidia.com/gpu", {"vgpu_scheduler": "equal"}, "vgpu_equal"),
        ("none", "nvidia.com/gpumem", {}, "time_slicing"),
        # Its device-plugin config could not be read (STACK-007): the weakest it could be.
        ("unknown", "nvidia.com/gpu", {}, "time_slicing"),
        ("unknown", "nvidia.com/mig-1g.10gb", {}, "time_slicing"),
    ],
)
def test_node_sharing_mode(strategy, resource, kwargs, expected):
    assert node_sharing_mode(strategy, resource, **kwargs) == expected


def test_node_sharing_mode_rejects_an_unknown_strategy():
    with pytest.raises(ValueError, match="unknown node sharing strategy"):
        node_sharing_mode("magic", "nvidia.com/gpu")


def test_seed_migrations_carry_the_same_classes():
    """The migrations keep frozen copies on purpose: 0002 seeds the classes, 0003 adds the image
    policy (no registries, no digest), 0008 requires a digest of the seed tenant classes. What
    they leave together is DEFAULT_TRUST_CLASSES (tests/tenants/test_seed_image_policy.py reads
    the migrated rows themselves)."""
    import importlib

    try:
        seed = importlib.import_module("tenants.migrations.0002_default_trust_classes")
        digest = importlib.import_module(
            "tenants.migrations.0008_seed_classes_require_image_digest"
        )
    except ImportError:
        pytest.skip("seed migrations not present")
    defaults = {
        "requires_dedicated_pool": False,
        "requires_reset_attestation": False,
        "approval_expiry_days": None,
        "approved_registries": [],  # 0003's field defaults
        "require_image_digest": False,
    }
    frozen = {d["slug"]: {**defaults, **d} for d in seed.DEFAULTS}
    assert set(frozen) == set(SLUGS)
    for slug in digest.SEED_TENANT_CLASSES:
        frozen[slug]["require_image_digest"] = True
    for data in DEFAULT_TRUST_CLASSES:
        seeded = frozen[data["slug"]]
        lists = ("allowed_modes", "same_class_only_modes", "approved_registries")
        for field in ("name", "rank", *defaults):
            if field not in lists:
                assert seeded[field] == data[field], (data["slug"], field)
        for field in lists:
            assert tuple(seeded[field]) == tuple(data[field]), (data["slug"], field)


# --- mode_permitted: what a sharing request may ask for -------------------------------------


@pytest.mark.parametrize(
    ("cls", "mode", "allowed", "words"),
    [
        ("external", "time_slicing", False, "allows only exclusive, mig_gi (not time_slicing)"),
        ("external", "mig_gi", True, "allows mig_gi"),
        ("sensitive", "mps", False, "allows only exclusive, mig_gi"),
        ("internal", "vgpu_fixed", True, "allows vgpu_fixed"),
        ("internal_trusted", "time_slicing", True, "only with other 'internal_trusted'"),
        ("internal", "exclusive", True, "shares nothing"),
        ("platform", "warp_drive", False, "not a known sharing mode"),
    ],
)
def test_mode_permitted_names_the_rule(cls, mode, allowed, words):
    from tenants.policy import mode_permitted

    decision = mode_permitted(trust_class(cls), mode)
    assert decision.allowed is allowed
    assert words in decision.rule


# --- request_scope: what an approved sharing request covers (DESIGN §3) ----------------------


@pytest.mark.parametrize(
    ("cls", "mode", "allowed", "scope", "words"),
    [
        # Within one tenant any mode is allowed: a mode the class forbids between tenants
        # is approved for the tenant's own pods only.
        (
            "external",
            "time_slicing",
            True,
            "within_tenant",
            "for this tenant's own pods only: trust class 'external' forbids sharing by "
            "time_slicing with other tenants (it allows only exclusive, mig_gi); SHARE-003 "
            "still reports any co-tenancy",
        ),
        ("sensitive", "mps", True, "within_tenant", "forbids sharing by mps with other tenants"),
        ("internal", "mig_ci", True, "within_tenant", "allows only exclusive, mig_gi, vgpu_fixed"),
        ("external", "mig_gi", True, "with_other_tenants", "trust class 'external' allows mig_gi"),
        (
            "internal_trusted",
            "time_slicing",
            True,
            "with_other_tenants",
            "only with other 'internal_trusted' tenants",
        ),
        ("platform", "time_slicing", True, "with_other_tenants", "allows time_slicing"),
        ("internal", "exclusive", True, "with_other_tenants", "shares nothing"),
        ("platform", "warp_drive", False, "", "not a known sharing mode"),
    ],
)
def test_request_scope_names_what_an_approval_covers(cls, mode, allowed, scope, words):
    from tenants.policy import request_scope

    decision = request_scope(trust_class(cls), mode)
    assert (decision.allowed, decision.scope) == (allowed, scope)
    assert words in decision.rule
