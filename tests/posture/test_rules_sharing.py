"""SHARE-001, SHARE-003, SHARE-005 over hand-built read models."""

from __future__ import annotations

import pytest

from inventory.snapshot import ConfigMap, SharingConfig
from posture.rules.share.parties import co_residence
from tests.posture.builders import by_pair, gpu_node, inputs, pod, run, sliced_node, tenant

ALPHA, BETA = tenant("alpha"), tenant("beta")
EXT = tenant("ext", "external")
TRUSTED, TRUSTED2 = tenant("tr1", "internal_trusted"), tenant("tr2", "internal_trusted")
GPU, SHARED = "nvidia.com/gpu", "nvidia.com/gpu.shared"


# --- SHARE-001 --------------------------------------------------------------------------------


def test_share001_two_tenants_on_one_sliced_gpu_is_certain_one_finding_for_the_pair():
    world = inputs(
        nodes=(sliced_node(gpus=1, replicas=4),),
        pods=(pod("alpha", "a", gpu={GPU: 1}), pod("beta", "b", gpu={GPU: 1})),
        tenants=(ALPHA, BETA),
    )
    (pair,) = run("SHARE-001", world)
    assert pair.tenants == ("alpha", "beta")
    # A node with no pool label is its own subject; the key names the resource and the pair.
    assert (pair.subject_kind, pair.subject_name, pair.key) == (
        "Node",
        "gpu-1",
        f"{GPU}:alpha:beta",
    )
    assert pair.evidence["co_residence"] == "certain"
    alpha, beta = pair.evidence["parties"]
    assert alpha["party"] == "alpha" and alpha["trust_class"] == "internal"
    assert alpha["pods"] == [{"pod": "alpha/a", "resource": GPU, "count": 1}]
    assert beta["pods"][0]["pod"] == "beta/b" and beta["replicas"] == 1
    (node,) = pair.evidence["nodes"]
    assert (node["node"], node["co_residence"]) == ("gpu-1", "certain")
    assert pair.evidence["node_count"] == pair.exposure == 1
    assert (
        pair.title
        == f"Tenants alpha and beta time-slice {GPU} in node gpu-1 (certain co-residence)"
    )


@pytest.mark.parametrize(
    ("gpus", "replicas", "alpha", "beta", "expected"),
    [
        (1, 4, 1, 1, "certain"),
        (2, 4, 1, 1, "possible"),
        (2, 4, 4, 4, "possible"),
        (2, 4, 5, 4, "certain"),
        (2, 4, 4, 5, "certain"),
        (3, 2, 3, 2, "possible"),
        (3, 2, 3, 3, "certain"),
    ],
)
def test_share001_pigeonhole(gpus, replicas, alpha, beta, expected):
    world = inputs(
        nodes=(sliced_node(gpus=gpus, replicas=replicas),),
        pods=(pod("alpha", "a", gpu={GPU: alpha}), pod("beta", "b", gpu={GPU: beta})),
        tenants=(ALPHA, BETA),
    )
    (pair,) = run("SHARE-001", world)
    assert pair.evidence["co_residence"] == expected


@pytest.mark.parametrize(
    ("node", "pods"),
    [
        # one tenant alone on a time-sliced GPU
        (sliced_node(), (pod("alpha", "a", gpu={GPU: 1}), pod("alpha", "b", gpu={GPU: 1}))),
        # exclusive GPUs
        (gpu_node(), (pod("alpha", "a", gpu={GPU: 1}), pod("beta", "b", gpu={GPU: 1}))),
        # a tenant and a platform pod: not two tenants
        (sliced_node(), (pod("alpha", "a", gpu={GPU: 1}), pod("kube-system", "x", gpu={GPU: 1}))),
        # the other tenant's pod has finished
        (
            sliced_node(),
            (pod("alpha", "a", gpu={GPU: 1}), pod("beta", "b", gpu={GPU: 1}, phase="Succeeded")),
        ),
        # the other tenant's pod is on another node
        (sliced_node(), (pod("alpha", "a", gpu={GPU: 1}), pod("beta", "b", "gpu-2", {GPU: 1}))),
        # the other tenant's pod holds no GPU
        (sliced_node(), (pod("alpha", "a", gpu={GPU: 1}), pod("beta", "b"))),
    ],
)
def test_share001_negative(node, pods):
    assert run("SHARE-001", inputs(nodes=(node,), pods=pods, tenants=(ALPHA, BETA))) == []


def test_share001_renamed_resource_and_unlabelled_node():
    # A ".shared" resource only exists under a sharing config, even if the node label is missing.
    node = gpu_node(gpu_count=1, gpu_capacity={SHARED: 10})
    world = inputs(
        nodes=(node,),
        pods=(pod("alpha", "a", gpu={SHARED: 1}), pod("beta", "b", gpu={SHARED: 2})),
        tenants=(ALPHA, BETA),
    )
    (pair,) = run("SHARE-001", world)
    assert pair.tenants == ("alpha", "beta")
    assert pair.key == f"{GPU}:alpha:beta" and pair.evidence["co_residence"] == "certain"


def test_share001_time_sliced_mig_devices_are_a_pool_per_profile():
    node = sliced_node(
        gpus=1, replicas=4, gpu_capacity={"nvidia.com/mig-1g.10gb": 8, "nvidia.com/mig-3g.40gb": 4}
    )
    same = (
        pod("alpha", "a", gpu={"nvidia.com/mig-1g.10gb": 1}),
        pod("beta", "b", gpu={"nvidia.com/mig-1g.10gb": 1}),
    )
    (pair,) = run("SHARE-001", inputs(nodes=(node,), pods=same, tenants=(ALPHA, BETA)))
    assert pair.evidence["resource"] == "nvidia.com/mig-1g.10gb"
    assert pair.evidence["co_residence"] == "possible"  # 8 replicas / 4 = 2 MIG devices
    different = (
        pod("alpha", "a", gpu={"nvidia.com/mig-1g.10gb": 1}),
        pod("beta", "b", gpu={"nvidia.com/mig-3g.40gb": 1}),
    )
    assert run("SHARE-001", inputs(nodes=(node,), pods=different, tenants=(ALPHA, BETA))) == []


def test_share001_three_tenants_make_three_pairs():
    gamma = tenant("gamma")
    world = inputs(
        nodes=(sliced_node(),),
        pods=tuple(pod(t.slug, "p", gpu={GPU: 1}) for t in (ALPHA, BETA, gamma)),
        tenants=(ALPHA, BETA, gamma),
    )
    found = by_pair(run("SHARE-001", world))
    assert set(found) == {("alpha", "beta"), ("alpha", "gamma"), ("beta", "gamma")}


def test_share001_a_pair_in_a_pool_is_one_finding_listing_the_nodes_where_they_meet():
    pool = {"gpuposture.io/pool": "h100-a"}
    nodes = tuple(sliced_node(f"gpu-{i}", gpus=2, labels=pool) for i in range(3))
    pods = tuple(
        pod(t.slug, f"p{i}", f"gpu-{i}", {GPU: 1}) for i in range(3) for t in (ALPHA, BETA)
    )
    # and on a node of another pool, a second finding for the same pair
    other = sliced_node("gpu-9", gpus=1, labels={"gpuposture.io/pool": "l40s"})
    pods += (pod("alpha", "q", "gpu-9", {GPU: 1}), pod("beta", "q", "gpu-9", {GPU: 1}))
    world = inputs(nodes=(*nodes, other), pods=pods, tenants=(ALPHA, BETA))
    found = {d.subject_name: d for d in run("SHARE-001", world)}
    assert set(found) == {"h100-a", "l40s"}
    h100 = found["h100-a"]
    assert (h100.subject_kind, h100.tenants, h100.exposure) == ("NodePool", ("alpha", "beta"), 3)
    assert [n["node"] for n in h100.evidence["nodes"]] == ["gpu-0", "gpu-1", "gpu-2"]
    assert h100.evidence["node_pool"] == "h100-a"
    assert [len(p["pods"]) for p in h100.evidence["parties"]] == [3, 3]
    assert h100.evidence["co_residence"] == "possible"  # 2 GPUs per node: they may stay apart
    # The worst verdict over the pool's nodes: the single-GPU node makes l40s certain.
    assert found["l40s"].evidence["co_residence"] == "certain"
    assert h100.subject_labels == pool
    assert "Tenants alpha and beta time-slice nvidia.com/gpu in pool h100-a" in h100.title


@pytest.mark.parametrize(
    ("node", "pool", "own", "others", "expected"),
    [
        (sliced_node(gpus=1), GPU, 1, 1, "certain"),
        (sliced_node(gpus=4, replicas=2), GPU, 2, 6, "possible"),
        (sliced_node(gpus=4, replicas=2), GPU, 3, 6, "certain"),
        (sliced_node(gpus=2, time_slicing_replicas=None), GPU, 1, 1, "possible"),
        (sliced_node(gpu_count=None, gpu_capacity={}), GPU, 1, 1, "possible"),
        (sliced_node(gpu_count=None, gpu_capacity={GPU: 4}, replicas=4), GPU, 1, 1, "certain"),
    ],
)
def test_co_residence(node, pool, own, others, expected):
    verdict, why = co_residence(node, pool, own, others)
    assert verdict == expected
    assert node.name in why or pool in why or "replicas" in why


# --- SHARE-003 --------------------------------------------------------------------------------


def _share003(node, *placed):
    """placed: (tenant or None for platform, resource). The pairs that fire, by their
    parties (a platform pod's party is "platform")."""
    pods = tuple(
        pod(t.slug if t else "kube-system", f"p{i}", gpu={res: 1})
        for i, (t, res) in enumerate(placed)
    )
    tenants = tuple({t.slug: t for t, _ in placed if t}.values())
    drafts = run("SHARE-003", inputs(nodes=(node,), pods=pods, tenants=tenants))
    found = {tuple(p["party"] for p in d.evidence["parties"]): d for d in drafts}
    assert len(found) == len(drafts)
    return found


MPS_NODE = gpu_node(gpu_count=1, sharing_strategy="mps", time_slicing_replicas=4)
VGPU_NODE = gpu_node(gpu_count=2, sharing_strategy="vgpu")
MIG_NODE = gpu_node(sharing_strategy="mig", mig_strategy="mixed")
CI = "nvidia.com/mig-1c.3g.40gb"


@pytest.mark.parametrize(
    ("node", "placed", "expected"),
    [
        (sliced_node(), [(EXT, GPU), (ALPHA, GPU)], {("alpha", "ext")}),
        (sliced_node(), [(TRUSTED, GPU), (TRUSTED2, GPU)], set()),
        (sliced_node(), [(TRUSTED, GPU), (None, GPU)], {("platform", "tr1")}),
        (sliced_node(), [(TRUSTED, GPU), (ALPHA, GPU)], {("alpha", "tr1")}),
        (MPS_NODE, [(TRUSTED, GPU), (TRUSTED2, GPU)], set()),
        (MPS_NODE, [(TRUSTED, GPU), (ALPHA, GPU)], {("alpha", "tr1")}),
        (MPS_NODE, [(EXT, GPU), (None, GPU)], {("platform", "ext")}),
        (VGPU_NODE, [(ALPHA, GPU), (BETA, GPU)], {("alpha", "beta")}),
        (VGPU_NODE, [(TRUSTED, GPU), (TRUSTED2, GPU)], set()),
        (MIG_NODE, [(ALPHA, CI), (TRUSTED, CI)], {("alpha", "tr1")}),
        (MIG_NODE, [(EXT, "nvidia.com/mig-3g.40gb"), (ALPHA, "nvidia.com/mig-3g.40gb")], set()),
        (gpu_node(), [(EXT, GPU), (ALPHA, GPU)], set()),
        (sliced_node(), [(EXT, GPU), (ALPHA, "nvidia.com/mig-1g.10gb")], set()),
        (sliced_node(), [(EXT, GPU)], set()),
    ],
)
def test_share003(node, placed, expected):
    assert set(_share003(node, *placed)) == expected


def test_share003_one_finding_per_forbidden_pair_naming_classes_mode_and_rule():
    found = _share003(sliced_node(), (EXT, GPU), (ALPHA, GPU), (TRUSTED, GPU))
    # ext may share with neither; alpha (internal) and tr1 (internal_trusted) may not either.
    assert set(found) == {("alpha", "ext"), ("ext", "tr1"), ("alpha", "tr1")}
    pair = found[("alpha", "ext")]
    assert pair.tenants == ("alpha", "ext")
    assert pair.key == f"{GPU}:time_slicing:alpha:ext"
    assert pair.evidence["sharing_mode"] == "time_slicing"
    assert [p["trust_class"] for p in pair.evidence["parties"]] == ["internal", "external"]
    assert "trust class 'external' allows only exclusive, mig_gi" in pair.evidence["rule"]
    assert pair.evidence["co_residence"] == "certain"
    assert pair.evidence["forbidden_by"] == ["internal", "external"]
    assert pair.title.endswith("which trust classes internal and external forbid")


def test_share003_platform_party_is_named_as_platform():
    found = _share003(sliced_node(), (TRUSTED, GPU), (None, GPU))
    pair = found[("platform", "tr1")]
    assert pair.tenants == ("tr1",)  # the platform is no tenant
    assert pair.key == f"{GPU}:time_slicing:(platform):tr1"
    platform = pair.evidence["parties"][0]
    assert platform["is_platform"] is True
    assert platform["pods"] == [{"pod": "kube-system/p1", "resource": GPU, "count": 1}]
    assert "only with other 'internal_trusted' tenants" in pair.evidence["rule"]
    assert pair.title.startswith("Tenant tr1 and platform pods")
    assert pair.title.endswith("which trust class internal_trusted forbids")


# --- SHARE-005 --------------------------------------------------------------------------------


def _config(key="default", fail=False, mode="time_slicing", cm="plugin-config"):
    return SharingConfig("gpu-operator", cm, key, mode, 4, fail, False, (GPU,))


@pytest.mark.parametrize(
    ("node", "configs", "expected"),
    [
        # labelled node names the key
        (
            sliced_node(device_plugin_config="a100"),
            [_config("a100"), _config("t4")],
            ["alpha", None],
        ),
        # unlabelled time-sliced node falls back to the only key
        (sliced_node(), [_config("a100")], ["alpha"]),
        # ... or to the "default" key
        (sliced_node(), [_config("default"), _config("t4")], ["alpha", None]),
        # unlabelled, several keys, none "default": not attributable
        (sliced_node(), [_config("a100"), _config("t4")], [None, None]),
        # labelled with another key
        (sliced_node(device_plugin_config="t4"), [_config("a100"), _config("t4")], [None, "alpha"]),
        # unlabelled exclusive node does not use the single key
        (gpu_node(), [_config("a100")], [None]),
        # correctly configured, or not time-slicing: nothing
        (sliced_node(), [_config(fail=True)], []),
        (sliced_node(), [_config(mode="mps")], []),
    ],
)
def test_share005_attribution(node, configs, expected):
    world = inputs(
        nodes=(node,),
        pods=(pod("alpha", "a", gpu={GPU: 1}), pod("beta", "b", gpu=None)),
        tenants=(ALPHA, BETA),
        sharing_configs=tuple(configs),
    )
    found = run("SHARE-005", world)
    # sorted by key, one entry per finding: the tenant it affects, or None
    assert [(d.tenants or (None,))[0] for d in sorted(found, key=lambda d: d.key)] == expected


def test_share005_evidence():
    cm = ConfigMap("gpu-operator", "plugin-config", "device_plugin", ("a100", "t4"))
    world = inputs(
        nodes=(sliced_node(device_plugin_config="a100"),),
        pods=(pod("alpha", "a", gpu={GPU: 1}), pod("beta", "b", gpu={GPU: 2})),
        tenants=(ALPHA, BETA),
        configmaps=(cm,),
        sharing_configs=(_config("a100"),),
    )
    (draft,) = run("SHARE-005", world)
    assert draft.tenants == ("alpha", "beta")
    assert (draft.subject_kind, draft.subject_namespace, draft.subject_name, draft.key) == (
        "ConfigMap",
        "gpu-operator",
        "plugin-config",
        "a100",
    )
    assert draft.evidence["nodes_using_it"] == ["gpu-1"]
    assert draft.evidence["tenants_on_those_nodes"] == ["alpha", "beta"]
    assert draft.exposure == draft.evidence["node_count"] == 1
    assert "failRequestsGreaterThanOne" in draft.evidence["field"]


def test_share005_weighs_each_tenant_by_the_nodes_it_holds_gpus_on():
    """DESIGN §6: each tenant's exposure is its own part of what the finding spans."""
    cm = ConfigMap("gpu-operator", "plugin-config", "device_plugin", ("a100", "t4"))
    nodes = tuple(sliced_node(n, device_plugin_config="a100") for n in ("gpu-1", "gpu-2"))
    pods = (
        pod("alpha", "a1", node="gpu-1", gpu={GPU: 1}),
        pod("alpha", "a2", node="gpu-2", gpu={GPU: 1}),
        pod("beta", "b", node="gpu-2", gpu={GPU: 1}),
    )
    world = inputs(
        nodes=nodes,
        pods=pods,
        tenants=(ALPHA, BETA),
        configmaps=(cm,),
        sharing_configs=(_config("a100"),),
    )
    (draft,) = run("SHARE-005", world)
    assert draft.exposure == 2
    assert draft.tenant_exposures == {"alpha": 2, "beta": 1}


def test_share005_unlabelled_node_with_a_configmap_listing_several_keys():
    # The ConfigMap lists two keys although only one parsed as a sharing config.
    cm = ConfigMap("gpu-operator", "plugin-config", "device_plugin", ("a100", "plain"))
    world = inputs(
        nodes=(sliced_node(),),
        pods=(pod("alpha", "a", gpu={GPU: 1}),),
        tenants=(ALPHA,),
        configmaps=(cm,),
        sharing_configs=(_config("a100"),),
    )
    assert [d.tenants for d in run("SHARE-005", world)] == [()]


def test_share001_fractional_scheduler_counts_as_time_slicing():
    # HAMi-style pods ask for nvidia.com/gpu plus a memory slice: soft limits, no isolation.
    frac = {GPU: 1, "nvidia.com/gpumem": 4000}
    world = inputs(
        nodes=(gpu_node(gpu_count=1),),
        pods=(pod("alpha", "a", gpu=frac), pod("beta", "b", gpu=frac)),
        tenants=(ALPHA, BETA),
    )
    assert [d.tenants for d in run("SHARE-001", world)] == [("alpha", "beta")]
