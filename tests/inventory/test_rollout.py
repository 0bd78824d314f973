"""Patch rollout suggestion: canary pool, waves by urgency, targets per branch, rollback."""

from __future__ import annotations

import random

import pytest

from inventory.patching.rollout import RolloutNode, rollout_plan


def exposure(
    installed="550.90.07",
    fixed="550.163.01",
    cvss=7.8,
    released="2025-04-22",
    advisory="nvidia-5630",
    component="driver",
    cves=("CVE-2025-23244",),
):
    return {
        "component": component,
        "installed": installed,
        "fixed_version": fixed,
        "affected": f"< {fixed}",
        "cves": list(cves),
        "max_cvss": cvss,
        "severity": "high",
        "advisory_id": advisory,
        "released": f"{released}T00:00:00+00:00",
        "condition": None,
    }


def below(name, pool, cluster="c1", driver="550.90.07", **kwargs):
    return RolloutNode(
        cluster,
        pool,
        name,
        "below_baseline",
        (exposure(installed=driver, **kwargs),),
        {"driver": driver},
    )


def pool_of(prefix, size, **kwargs):
    return [below(f"{prefix}-{i}", prefix, **kwargs) for i in range(size)]


def only(plans):
    assert len(plans) == 1
    return plans[0]


def test_canary_is_the_smallest_least_sensitive_pool():
    nodes = pool_of("internal-big", 3) + pool_of("internal-small", 2) + pool_of("bank", 1)
    ranks = {("c1", "internal-big"): 0, ("c1", "internal-small"): 0, ("c1", "bank"): 2}
    canary = only(rollout_plan(nodes, ranks)).waves[0]
    assert (canary.number, canary.label) == (1, "canary")
    assert canary.pools == ["internal-small"]  # bank is smaller but hosts sensitive tenants
    assert canary.nodes == ["internal-small-0", "internal-small-1"]
    assert canary.reason == "smallest pool with only internal tenants: canary"


def test_canary_ties_by_name_and_prefers_ranked_pools():
    nodes = pool_of("b", 1) + pool_of("a", 1) + pool_of("unranked", 1)
    plan = only(rollout_plan(nodes, {("c1", "a"): 1, ("c1", "b"): 1}))
    assert plan.waves[0].pools == ["a"]
    assert "sensitivity 1" in plan.waves[0].reason
    # No ranks at all: every pool is rank 0, so size and then name decide.
    plan = only(rollout_plan(pool_of("b", 2) + pool_of("c", 1) + pool_of("a", 1)))
    assert plan.waves[0].pools == ["a"]
    assert plan.waves[0].reason == "smallest pool (no tenant sensitivity given): canary"
    # An unranked pool may host anyone: a larger known-internal pool is the safer canary.
    plan = only(rollout_plan(pool_of("x", 2) + pool_of("y", 1), {("c1", "x"): 0}))
    assert [w.pools for w in plan.waves] == [["x"], ["y"]]


def test_unranked_pool_counts_as_the_most_sensitive_rank_among_equals():
    nodes = pool_of("canary", 1) + pool_of("ranked", 1) + pool_of("unranked", 1)
    plan = only(rollout_plan(nodes, {("c1", "canary"): 0, ("c1", "ranked"): 1}))
    assert [w.pools for w in plan.waves] == [["canary"], ["ranked"], ["unranked"]]  # 1 = 1: name
    plan = only(rollout_plan(nodes, {("c1", "canary"): 0, ("c1", "ranked"): 0, ("c1", "x"): 2}))
    assert [w.pools for w in plan.waves] == [["canary"], ["unranked"], ["ranked"]]  # 2 > 0


def test_a_pool_is_never_split_and_waves_respect_the_share():
    # 12 below-baseline nodes: a wave after the canary holds at most 0.34 * 12 = 4.08 nodes.
    nodes = (
        pool_of("canary", 1)
        + pool_of("big", 6, cvss=9.8)
        + pool_of("p2", 2, cvss=8.0)
        + pool_of("p3", 2, cvss=7.0)
        + pool_of("p1", 1, cvss=5.0)
    )
    plan = only(rollout_plan(nodes, {("c1", "canary"): 0}))
    assert [w.pools for w in plan.waves] == [["canary"], ["big"], ["p2", "p3"], ["p1"]]
    assert [w.label for w in plan.waves] == ["canary", "wave 2", "wave 3", "wave 4"]
    assert len(plan.waves[1].nodes) == 6  # larger than the share, but whole
    assert all(len(w.nodes) <= 4.08 for w in plan.waves[2:])
    assert plan.waves[2].reason.endswith("with 1 more pool(s) up to the wave share")
    assert sorted(n for w in plan.waves for n in w.nodes) == sorted(n.name for n in nodes)


def test_each_driver_branch_gets_its_own_target():
    nodes = [
        below("old-1", "mixed", driver="535.216.01", fixed="535.247.01"),
        below("new-1", "mixed", driver="550.90.07", fixed="550.163.01"),
        RolloutNode(
            "c1",
            "mixed",
            "new-2",
            "below_baseline",
            (exposure(fixed="550.144.03", advisory="nvidia-5614"), exposure()),
            {"driver": "550.90.07"},
        ),
    ]
    wave = only(rollout_plan(nodes)).waves[0]
    assert wave.targets == {"driver R535": "535.247.01", "driver R550": "550.163.01"}
    assert wave.advisories == ["nvidia-5614", "nvidia-5630"]


def test_rollback_lists_every_version_the_nodes_run_now():
    nodes = [
        below("n1", "p", driver="550.127.05"),
        below("n2", "p", driver="550.90.07"),
        below("n3", "p", driver="550.127.05"),
        RolloutNode(
            "c1",
            "p",
            "n4",
            "below_baseline",
            (
                exposure(
                    component="container_toolkit",
                    installed="1.16.1",
                    fixed="1.17.4",
                    advisory="nvidia-5616",
                ),
            ),
            {"driver": "550.163.01", "container_toolkit": "v1.16.1"},
        ),
    ]
    wave = only(rollout_plan(nodes)).waves[0]
    # Component order, not text order: 550.90.07 is older than 550.127.05.
    assert wave.rollback == {
        "container_toolkit": ["v1.16.1"],  # as the node reports it
        "driver R550": ["550.90.07", "550.127.05"],
    }
    assert wave.targets == {"container_toolkit": "1.17.4", "driver R550": "550.163.01"}


def test_highest_fixed_version_is_component_aware():
    nodes = [
        below("n1", "p", fixed="550.163.01"),
        below("n2", "p", fixed="550.54.15"),  # higher as text, lower as a version
    ]
    assert only(rollout_plan(nodes)).waves[0].targets == {"driver R550": "550.163.01"}


def test_current_nodes_are_excluded_and_unknown_listed():
    nodes = [
        below("b1", "p"),
        RolloutNode("c1", "p", "c-1", "current", (), {"driver": "550.163.01"}),
        RolloutNode("c1", "q", "c-2", "current"),
        RolloutNode("c1", "p", "u-2", "unknown"),
        RolloutNode("c1", "q", "u-1", "unknown"),
    ]
    plan = only(rollout_plan(nodes))
    assert [w.nodes for w in plan.waves] == [["b1"]]  # pool q has nothing below baseline
    assert (plan.current_nodes, plan.unknown_nodes) == (2, ["u-1", "u-2"])


def test_waves_after_the_canary_go_by_cvss_then_age_then_sensitivity():
    nodes = (
        pool_of("canary", 1, cvss=9.9)  # the canary goes first, whatever its exposure
        + pool_of("low", 1, cvss=5.5, released="2024-01-01")
        + pool_of("high", 1, cvss=9.8, released="2025-04-22")
        + pool_of("mid-new", 1, cvss=7.8, released="2025-04-22")
        + pool_of("mid-old-internal", 1, cvss=7.8, released="2025-01-16")
        + pool_of("mid-old-sensitive", 1, cvss=7.8, released="2025-01-16")
        + pool_of("no-cvss", 1, cvss=None)
    )
    ranks = {("c1", "canary"): 0, ("c1", "mid-old-internal"): 1, ("c1", "mid-old-sensitive"): 3}
    plan = only(rollout_plan(nodes, ranks, max_wave_share=0.1))
    assert [w.pools[0] for w in plan.waves] == [
        "canary",
        "high",
        "mid-old-sensitive",
        "mid-old-internal",
        "mid-new",
        "low",
        "no-cvss",
    ]
    assert plan.waves[1].reason == (
        "next most urgent: max CVSS 9.8, oldest advisory released 2025-04-22, "
        "tenants of sensitivity 3"
    )
    assert plan.waves[2].max_cvss == 7.8
    assert plan.waves[-1].max_cvss is None


def test_single_pool_cluster_gives_only_a_canary():
    plan = only(rollout_plan(pool_of("gpu", 5)))
    assert len(plan.waves) == 1
    assert plan.waves[0].nodes == [f"gpu-{i}" for i in range(5)]
    assert plan.waves[0].reason == "only pool below baseline: canary"
    assert plan.waves[0].cves == ["CVE-2025-23244"]


def test_clusters_are_planned_apart_and_sorted():
    nodes = pool_of("a", 1, cluster="zeta") + [RolloutNode("alpha", "a", "ok", "current")]
    plans = rollout_plan(nodes)
    assert [(p.cluster, len(p.waves), p.current_nodes) for p in plans] == [
        ("alpha", 0, 1),
        ("zeta", 1, 0),
    ]


def test_empty_input_and_bad_share():
    assert rollout_plan([]) == []
    with pytest.raises(ValueError, match="max_wave_share"):
        rollout_plan([], max_wave_share=0)


def test_exposure_without_a_fix_is_reported_not_targeted():
    nodes = [below("n1", "p", driver="470.82.01", fixed=None, advisory="nvidia-9999")]
    wave = only(rollout_plan(nodes)).waves[0]
    assert wave.targets == {}
    assert wave.unfixed == ["driver R470 nvidia-9999"]
    assert wave.rollback == {"driver R470": ["470.82.01"]}


def test_output_does_not_depend_on_input_order():
    nodes = (
        pool_of("a", 2, cvss=7.0)
        + pool_of("b", 3, cvss=9.0)
        + pool_of("c", 1, cluster="c2")
        + [below("d-1", "d", driver="535.216.01", fixed="535.247.01", cvss=7.0)]
        + [RolloutNode("c1", "d", "u", "unknown")]
    )
    expected = rollout_plan(nodes, {("c1", "b"): 1})
    for seed in range(5):
        shuffled = nodes[:]
        random.Random(seed).shuffle(shuffled)
        assert rollout_plan(shuffled, {("c1", "b"): 1}) == expected
