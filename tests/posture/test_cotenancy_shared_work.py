"""The co-tenancy checks (SHARE-001, -003, -007) share their work within one evaluation: a
node's groups and their parties are built once, and each pair's co-residence is worked out
once, whichever checks ask. What they report must not depend on which checks ran first."""

from __future__ import annotations

import pytest

from posture.rules import registry
from posture.rules.share import groups, parties
from tests.posture.builders import by_pair, inputs, pod, run, sliced_node, tenant

GPU = "nvidia.com/gpu"
ALPHA, EXT = tenant("alpha"), tenant("ext", "external")
SEN = tenant("sen", "sensitive")


def world():
    """alpha (internal), ext (external) and a platform pod time-slice two GPUs of one node."""
    return inputs(
        nodes=(sliced_node(gpus=2, replicas=4),),
        pods=(
            pod("alpha", "a", gpu={GPU: 3}),
            pod("ext", "e", gpu={GPU: 4}),
            pod("monitoring", "probe", gpu={GPU: 1}),
        ),
        tenants=(ALPHA, EXT),
    )


@pytest.fixture
def asked(monkeypatch) -> list[tuple[str, int, int]]:
    """Each pigeonhole count (parties.co_residence) the co-tenancy checks ask for."""
    calls: list[tuple[str, int, int]] = []
    real = parties.co_residence

    def counting(node, pool, own, others):
        calls.append((node.name, own, others))
        return real(node, pool, own, others)

    for module in (parties, groups):  # wherever the checks read it from
        monkeypatch.setattr(module, "co_residence", counting, raising=False)
    return calls


def test_a_pair_co_residence_is_worked_out_once_for_every_check_that_reports_it(asked):
    evaluation = registry.evaluate(world(), only=("SHARE-001", "SHARE-003"))
    found = {(d.check_id, d.tenants): d for d in evaluation.drafts}
    # Both checks report alpha and ext time-slicing the node's GPUs, with one verdict:
    # 3 + 4 replicas at 4 a GPU fit on 2 GPUs apart.
    share001, share003 = (
        found[("SHARE-001", ("alpha", "ext"))],
        found[("SHARE-003", ("alpha", "ext"))],
    )
    assert share001.evidence["co_residence"] == share003.evidence["co_residence"] == "possible"
    assert share001.evidence["nodes"][0]["co_residence_reason"] == (
        "3 + 4 replicas at 4 per physical GPU fit on 2 physical GPUs without mixing, but the "
        "device plugin does not keep tenants apart"
    )
    # ... worked out once for both, and once for each pair with the platform's pod (SHARE-003
    # judges the platform as a party; SHARE-001 does not).
    assert sorted(asked) == [("gpu-1", 1, 3), ("gpu-1", 1, 4), ("gpu-1", 3, 4)]


@pytest.mark.parametrize("check_id", ["SHARE-001", "SHARE-003", "SHARE-007"])
def test_a_check_reports_the_same_alone_as_after_the_other_co_tenancy_checks(check_id):
    def sensitive_world():
        base = world()
        sen_pod = pod("sen", "s", gpu={GPU: 1})
        snapshot = base.snapshot
        return inputs(
            nodes=snapshot.nodes, pods=(*snapshot.pods, sen_pod), tenants=(ALPHA, EXT, SEN)
        )

    alone = run(check_id, sensitive_world())
    shared = sensitive_world()
    for other in ("SHARE-007", "SHARE-003", "SHARE-001"):  # every other check first
        if other != check_id:
            run(other, shared)
    assert alone and run(check_id, shared) == alone


def test_share001_leaves_the_platform_out_after_share003_judged_it():
    shared = world()
    platform_pairs = [d for d in run("SHARE-003", shared) if "(platform)" in d.key]
    assert platform_pairs  # SHARE-003 judged the platform's pod as a party ...
    assert list(by_pair(run("SHARE-001", shared))) == [("alpha", "ext")]  # SHARE-001 does not


def test_pairs_holding_alike_on_one_pool_share_one_pigeonhole_count(asked):
    """Most pairs on a shared node hold one replica each: the count is done once per node,
    pool and pair of replica counts, and every pair still gets its verdict."""
    names = ("alpha", "beta", "gamma", "delta")
    world = inputs(
        nodes=(sliced_node(gpus=2, replicas=4),),
        pods=tuple(pod(name, "p", gpu={GPU: 1}) for name in names),
        tenants=tuple(tenant(name) for name in names),
    )
    found = by_pair(run("SHARE-001", world))
    assert len(found) == 6 and {d.evidence["co_residence"] for d in found.values()} == {"possible"}
    assert asked == [("gpu-1", 1, 1)]


def test_share003_asks_the_policy_once_per_pair_of_classes(monkeypatch):
    """SHARE-003 judges every pair of parties on every shared GPU; the policy's answer depends
    on the two classes and the mode alone, so it is asked once for each."""
    from posture.rules.share import modes

    asked: list[tuple[str, str, str]] = []
    real = modes.may_share

    def counting(a, b, mode, *rest):
        asked.append((a.slug, b.slug, mode))
        return real(a, b, mode, *rest)

    monkeypatch.setattr(modes, "may_share", counting)
    trusted, external = "internal_trusted", "external"
    tenants = (tenant("i1", trusted), tenant("i2", trusted), *(tenant(x, external) for x in "xy"))
    world = inputs(
        nodes=(sliced_node(gpus=1, replicas=8),),
        pods=tuple(pod(t.slug, "p", gpu={GPU: 1}) for t in tenants),
        tenants=tenants,
    )
    found = {d.tenants: d for d in run("SHARE-003", world)}
    # External forbids time-slicing, internal_trusted allows it only among its own: every
    # pair with an external tenant fires, each naming its classes' rule; i1 and i2 may share.
    assert set(found) == {("i1", "x"), ("i1", "y"), ("i2", "x"), ("i2", "y"), ("x", "y")}
    assert found[("i2", "y")].evidence["forbidden_by"] == [trusted, external]
    assert found[("x", "y")].evidence["forbidden_by"] == [external]
    assert sorted(asked) == [
        (external, external, "time_slicing"),
        (trusted, external, "time_slicing"),
        (trusted, trusted, "time_slicing"),
    ]
