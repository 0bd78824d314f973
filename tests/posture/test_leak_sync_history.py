"""LEAK-001 from sync history, pure: the holder record a sync keeps per exclusive GPU node, the
handovers its counts make certain, and how the check judges them beside telemetry's."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import posture.rules  # noqa: F401  (registers the checks)
from inventory.holding_sets import exclusive_holders
from inventory.holdings import Held, HoldingHandover, holders_step
from telemetry.evidence import TelemetryFacts
from telemetry.leak import Handover
from tests.posture.builders import gpu_node, inputs, pod, run, sliced_node, tenant

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


def h(n: int) -> datetime:
    return T0 + timedelta(hours=n)


def test_the_holders_of_exclusive_nodes_only_running_whole_gpu_pods():
    nodes = (gpu_node("x", gpu_count=2), sliced_node("ts"), gpu_node("unknown", gpu_count=None))
    pods = (
        pod("team-a", "a", node="x", gpu={"nvidia.com/gpu": 1}),
        pod("team-a", "a2", node="x", gpu={"nvidia.com/gpu": 1}, phase="Pending"),
        pod("other", "o", node="x", gpu={"nvidia.com/gpu": 1}),
        pod("team-a", "t", node="ts", gpu={"nvidia.com/gpu": 1}),
    )
    found = exclusive_holders(nodes, pods)
    assert {k: (v.count, v.holders) for k, v in found.items()} == {
        ("x", ""): (2, {"team-a": 1, "other": 1})
    }


def test_a_gpu_left_idle_keeps_its_last_holders_and_a_shrink_keeps_the_set_seen_whole():
    start, _ = holders_step("x", None, 2, {"alpha": 2}, h(0))
    assert start == Held({"alpha": 2}, 2, h(0), h(0))
    # alpha drops to one GPU, then none: the set alpha held whole stays, as last seen whole,
    # with alpha's last sighting on the node (h(1)).
    shrunk, found = holders_step("x", start, 2, {"alpha": 1}, h(1))
    assert found == [] and shrunk == Held({"alpha": 2}, 2, h(0), h(0), False, {"alpha": h(1)})
    idle, found = holders_step("x", shrunk, 2, {}, h(2))
    assert found == [] and idle == shrunk
    # beta takes one GPU: alpha held 2 of 2, so beta's is surely one of alpha's, after alpha
    # was last seen using one (h(1)).
    after, found = holders_step("x", idle, 2, {"beta": 1}, h(3))
    assert found == [HoldingHandover("x", "alpha", "beta", 2, 1, 2, h(1), h(3))]
    assert after == Held({"beta": 1}, 2, h(3), h(3))
    # The same set again: its last sight moves, nothing new.
    again, found = holders_step("x", after, 2, {"beta": 1}, h(4))
    assert found == [] and again == Held({"beta": 1}, 2, h(3), h(4))


def test_counts_that_do_not_add_up_or_a_changed_gpu_count_make_nothing_certain():
    before = Held({"alpha": 1}, 1, h(0), h(0))
    assert holders_step("x", before, 1, {"beta": 1, "gamma": 1}, h(1))[1] == []  # 2 pods, 1 GPU
    assert holders_step("x", before, 2, {"beta": 2}, h(1)) == (Held({"beta": 2}, 2, h(1), h(1)), [])


OWNERS = {"a": "alpha", "b1": "beta", "b2": "beta", "c1": "gamma", "c2": "gamma"}


def _step(before: dict[str, int], after: dict[str, int]) -> set[tuple[str, str, int]]:
    """The handovers between two syncs on an 8-GPU node: (previous, next, GPUs surely passed)."""
    held = Held(before, 8, h(0), h(0))
    _, found = holders_step("x", held, 8, after, h(1), OWNERS)
    return {(f.previous, f.next, f.passed) for f in found}


def test_each_previous_holder_the_next_surely_received_from_is_its_own_handover():
    # alpha 4 + beta 4 of 8, then gamma holds all 8: it received all of each one's GPUs.
    assert _step({"a": 4, "b1": 4}, {"c1": 8}) == {("alpha", "gamma", 4), ("beta", "gamma", 4)}
    # The same when gamma's 8 are in two namespaces, or beta's 4 were: a party's GPUs add up.
    assert _step({"a": 4, "b1": 4}, {"c1": 4, "c2": 4}) == {
        ("alpha", "gamma", 4),
        ("beta", "gamma", 4),
    }
    assert _step({"a": 4, "b1": 2, "b2": 2}, {"c1": 6}) == {
        ("alpha", "gamma", 2),
        ("beta", "gamma", 2),
    }


def test_a_handover_the_counts_leave_only_possible_is_not_one():
    # alpha 4 + beta 2 (2 idle), then gamma 4: gamma may hold beta's 2 and the idle 2, or
    # alpha's: some GPU of alpha's or beta's surely passed, but neither pair is certain.
    assert _step({"a": 4, "b1": 2}, {"c1": 4}) == set()
    # gamma 5: 4 + 5 > 8 makes alpha's certain; beta's (2 + 5 = 7) stays only possible.
    assert _step({"a": 4, "b1": 2}, {"c1": 5}) == {("alpha", "gamma", 1)}


def test_each_previous_holder_is_bounded_by_its_own_last_sighting():
    """alpha and beta hold 4 + 4; beta leaves, alpha still holds its 4 at the next sync; then
    gamma holds 8: alpha's handover starts after alpha was last seen, not when beta was."""
    start, _ = holders_step("x", None, 8, {"a": 4, "b1": 4}, h(0), OWNERS)
    shrunk, _ = holders_step("x", start, 8, {"a": 4}, h(1), OWNERS)
    _, found = holders_step("x", shrunk, 8, {"c1": 8}, h(2), OWNERS)
    assert {(f.previous, f.previous_end, f.next_start) for f in found} == {
        ("alpha", h(1), h(2)),
        ("beta", h(0), h(2)),
    }


def _handover(previous: str, next_: str) -> HoldingHandover:
    return HoldingHandover("x", previous, next_, 1, 1, 1, h(1), h(3))


def _world(*handovers: HoldingHandover, dcgm: tuple[Handover, ...] = ()):
    world = inputs(
        nodes=(gpu_node("x", gpu_count=1),),
        tenants=(tenant("alpha", namespaces=("team-a",)), tenant("beta", namespaces=("team-b",))),
        namespaces=("team-a", "team-b", "stray", "gpu-operator"),
    )
    return replace(
        world,
        sync_handovers=handovers,
        telemetry=TelemetryFacts(sampled=bool(dcgm), handovers=dcgm),
    )


def test_the_platforms_gpus_and_unclaimed_namespaces_are_judged_as_pods_are():
    drafts = run(
        "LEAK-001",
        _world(
            _handover("alpha", "ns:gpu-operator"),  # the platform's: no tenant to judge
            _handover("ns:gpu-operator", "beta"),
            _handover("ns:team-b", "beta"),  # claimed since the sync: beta's own reuse
            _handover("alpha", "ns:stray"),  # nobody claims it: the unclassified party
        ),
    )
    (leak,) = drafts
    assert sorted(leak.tenants) == ["alpha", "unclassified"]
    assert leak.evidence["next_tenant"] == "unclassified"
    assert leak.evidence["source"] == "sync_history"


def test_two_previous_holders_are_two_findings_each_naming_both_of_its_tenants():
    world = _world(
        HoldingHandover("x", "alpha", "ns:stray", 1, 1, 1, h(1), h(3)),
        HoldingHandover("x", "beta", "ns:stray", 1, 1, 1, h(1), h(3)),
    )
    drafts = sorted(run("LEAK-001", world), key=lambda d: d.evidence["previous_tenant"])
    assert [sorted(d.tenants) for d in drafts] == [
        ["alpha", "unclassified"],
        ["beta", "unclassified"],
    ]
    assert drafts[0].evidence["gpus_passed_at_least"] == 1
    assert "at least 1 of alpha's GPUs passed to unclassified" in drafts[0].evidence["why"]


def test_a_handover_telemetry_shows_is_reported_once_from_telemetry():
    dcgm = Handover("GPU-1", "x", "alpha", "beta", h(2), h(2) + timedelta(minutes=5))
    drafts = run("LEAK-001", _world(_handover("alpha", "beta"), dcgm=(dcgm,)))
    assert [d.evidence["gpu_uuid"] for d in drafts] == ["GPU-1"]
    # Another time (no overlap) is another handover: both are shown.
    later = replace(dcgm, previous_end=h(5), next_start=h(6))
    drafts = run("LEAK-001", _world(_handover("alpha", "beta"), dcgm=(later,)))
    assert sorted(d.evidence.get("source", "dcgm") for d in drafts) == ["dcgm", "sync_history"]


PLATFORM = frozenset({"slurm-system"})
BURN_IN = {"slurm-system": {"burnin"}}


def _platform_step(before: Held | None, holders: dict[str, int], at: datetime):
    return holders_step("x", before, 8, holders, at, OWNERS, platform=PLATFORM, workloads=BURN_IN)


def test_a_platform_job_between_two_tenants_is_no_reset_and_hands_alpha_to_gamma():
    """alpha 8 of 8, the platform's burn-in 8, gamma 8: the platform is no party and resets
    nothing, so alpha's GPUs surely passed to gamma, bounded by alpha's last sighting; the
    handover names the burn-in held in between."""
    start, _ = _platform_step(None, {"a": 8}, h(0))
    burn, found = _platform_step(start, {"slurm-system": 8}, h(1))
    assert found == [] and burn is not None and burn.holders == {"a": 8}
    assert burn.between == ("slurm-system/burnin",)
    _, found = _platform_step(burn, {"c1": 8}, h(2))
    assert [(f.previous, f.next, f.passed, f.previous_end) for f in found] == [
        ("alpha", "gamma", 8, h(0))
    ]
    assert found[0].between == ("slurm-system/burnin",)
    # The platform on 4 of the 8 in between, gamma on 4: alpha held all 8, so gamma's 4 were
    # alpha's whichever the platform used.
    burn, _ = _platform_step(start, {"slurm-system": 4}, h(1))
    _, found = _platform_step(burn, {"c1": 4}, h(2))
    assert [(f.previous, f.next, f.passed) for f in found] == [("alpha", "gamma", 4)]


def test_platform_before_the_first_tenant_or_between_one_tenants_own_holds_is_nothing():
    # The platform's burn-in before any tenant: no record, then gamma's first is no handover.
    burn, found = _platform_step(None, {"slurm-system": 8}, h(0))
    assert (burn, found) == (None, [])
    assert _platform_step(burn, {"c1": 8}, h(1))[1] == []
    # alpha, the platform, alpha again: alpha's own reuse, and the set is alpha's seen whole.
    start, _ = _platform_step(None, {"a": 8}, h(0))
    burn, _ = _platform_step(start, {"slurm-system": 8}, h(1))
    again, found = _platform_step(burn, {"a": 8}, h(2))
    assert found == [] and again == Held({"a": 8}, 8, h(0), h(2))
    # A record kept from before the platform's holdings were left out is judged without them.
    legacy = Held({"slurm-system": 8}, 8, h(0), h(0))
    assert _platform_step(legacy, {"c1": 8}, h(1)) == (Held({"c1": 8}, 8, h(1), h(1)), [])


def test_a_sync_history_leak_names_the_platform_held_in_between():
    world = _world(
        HoldingHandover("x", "alpha", "beta", 1, 1, 1, h(1), h(3), between=("slurm-system/b",))
    )
    (leak,) = run("LEAK-001", world)
    assert leak.evidence["platform_between"] == ["slurm-system/b"]
    assert leak.evidence["why"].endswith(
        "held by the platform's slurm-system/b in between: not a reset"
    )


def test_a_sync_history_leak_weighs_the_gpus_that_surely_passed():
    # alpha held all 8 GPUs, beta holds all 8: 8 passed, and the finding weighs 8 GPUs.
    eight = inputs(
        nodes=(gpu_node("x", gpu_count=8),),
        tenants=(tenant("alpha", namespaces=("team-a",)), tenant("beta", namespaces=("team-b",))),
        namespaces=("team-a", "team-b"),
    )
    handover = HoldingHandover("x", "alpha", "beta", 8, 8, 8, h(1), h(3))
    (leak,) = run("LEAK-001", replace(eight, sync_handovers=(handover,)))
    assert leak.evidence["gpus_passed_at_least"] == 8 and leak.exposure == 8
    # The title counts what surely passed (it said "A GPU" for eight: rtinference).
    assert leak.title.startswith("8 GPUs on x went from alpha to beta")
    assert "platform_between" not in leak.evidence
    # alpha 4 and beta 5 of 8: one surely passed, so it weighs one, not the node's 8.
    handover = HoldingHandover("x", "alpha", "beta", 4, 5, 8, h(1), h(3))
    (leak,) = run("LEAK-001", replace(eight, sync_handovers=(handover,)))
    assert leak.evidence["gpus_passed_at_least"] == 1 and leak.exposure == 1
    assert leak.title.startswith("A GPU on x went from alpha to beta")
