"""Renamed time-slicing resources, KAI Scheduler fractions and HAMi as sharing modes on the GPUs
they cover (issue 17 item 3): the co-tenancy, approval and pool checks judge them."""

from __future__ import annotations

import pytest

from tests.posture.builders import tenant
from tests.posture.gpu_access_world import (
    KAI_RESERVATION_NS,
    OPERATOR_NS,
    UUIDS,
    cluster_policy,
    configmap,
    container,
    hami_pod,
    kai_fraction_pod,
    kai_reservation_pod,
    node,
    pod,
    run,
    world,
)

ALPHA, BETA = tenant("alpha", "internal_trusted"), tenant("beta", "internal_trusted")
EXT = tenant("ext", "external")

# Devices 0 and 1 time-sliced four ways as nvidia.com/gpu-ts; GPUs 2-7 left whole.
TS_SUBSET = """\
version: v1
flags:
  migStrategy: none
sharing:
  timeSlicing:
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      rename: nvidia.com/gpu-ts
      devices: [0, 1]
      replicas: 4
"""


def _ts_cluster(*pods: dict, capacity: dict | None = None) -> list[dict]:
    labels = {
        "nvidia.com/device-plugin.config": "h100-ts-subset",
        # GFD labels the whole node as time-sliced, whatever devices the config covers.
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-SHARED",
    }
    capacity = capacity or {"nvidia.com/gpu": "6", "nvidia.com/gpu-ts": "8"}
    return [
        cluster_policy(devicePlugin={"config": {"name": "plugin-config", "default": "any"}}),
        configmap(OPERATOR_NS, "plugin-config", {"h100-ts-subset": TS_SUBSET}),
        node("gpu-a", capacity=capacity, labels=labels),
        *pods,
    ]


def _gpu_pod(ns: str, name: str, resource: str, count: int = 1) -> dict:
    return pod(ns, name, container(gpu={resource: str(count)}))


def test_renamed_subset_is_time_slicing_only_on_its_devices():
    inputs = world(
        _ts_cluster(
            _gpu_pod("alpha", "ts-a", "nvidia.com/gpu-ts"),
            _gpu_pod("beta", "ts-b", "nvidia.com/gpu-ts"),
            _gpu_pod("alpha", "whole-a", "nvidia.com/gpu", 2),
            _gpu_pod("beta", "whole-b", "nvidia.com/gpu", 2),
        ),
        (ALPHA, BETA),
    )
    (gpu_node,) = inputs.snapshot.nodes
    (shared,) = gpu_node.resource_sharing
    assert (shared.name, shared.source, shared.mode) == (
        "nvidia.com/gpu-ts",
        "nvidia.com/gpu",
        "time_slicing",
    )
    assert (shared.devices, shared.units, shared.replicas) == (("0", "1"), 2, 4)
    (draft,) = run("SHARE-001", inputs)
    assert draft.tenants == ("alpha", "beta")
    assert draft.evidence["resource"] == "nvidia.com/gpu-ts"
    # The whole GPUs 2-7 stay exclusive for their holders: approval only for the slices.
    approvals = run("SHARE-004", inputs)
    assert sorted((d.tenants, d.evidence["observed_mode"]) for d in approvals) == [
        (("alpha",), "time_slicing"),
        (("beta",), "time_slicing"),
    ]
    assert {p for d in approvals for p in d.evidence["pods"]} == {"alpha/ts-a", "beta/ts-b"}


def test_whole_gpus_beside_a_renamed_subset_are_not_co_tenancy():
    inputs = world(
        _ts_cluster(
            _gpu_pod("alpha", "whole-a", "nvidia.com/gpu"),
            _gpu_pod("beta", "whole-b", "nvidia.com/gpu"),
        ),
        (ALPHA, BETA),
    )
    assert run("SHARE-001", inputs) == []
    assert run("SHARE-004", inputs) == []


def test_renamed_subset_beyond_its_devices_is_certain_co_residence():
    inputs = world(
        _ts_cluster(
            _gpu_pod("alpha", "ts-a", "nvidia.com/gpu-ts", 5),
            _gpu_pod("beta", "ts-b", "nvidia.com/gpu-ts"),
        ),
        (ALPHA, BETA),
    )
    (draft,) = run("SHARE-001", inputs)
    # 5 + 1 replicas at 4 per GPU need 3 GPUs to stay apart; the subset has 2.
    assert draft.evidence["co_residence"] == "certain"


def test_a_rename_the_plugin_ignored_time_slices_every_device():
    """The upstream plugin ignores a custom rename and device subset: the node advertises 32
    nvidia.com/gpu and no gpu-ts, so every nvidia.com/gpu holder is time-sliced."""
    inputs = world(
        _ts_cluster(
            _gpu_pod("alpha", "a", "nvidia.com/gpu"),
            _gpu_pod("beta", "b", "nvidia.com/gpu"),
            capacity={"nvidia.com/gpu": "32"},
        ),
        (ALPHA, BETA),
    )
    (shared,) = inputs.snapshot.nodes[0].resource_sharing
    assert (shared.name, shared.devices, shared.units) == ("nvidia.com/gpu", (), 8)
    assert "ignored the rename" in shared.note
    (draft,) = run("SHARE-001", inputs)
    assert draft.evidence["resource"] == "nvidia.com/gpu"


def test_renamed_mps_resource_is_mps():
    config = TS_SUBSET.replace("timeSlicing:", "mps:").replace("gpu-ts", "gpu-mps")
    objects = _ts_cluster(
        _gpu_pod("alpha", "a", "nvidia.com/gpu-mps"),
        _gpu_pod("beta", "b", "nvidia.com/gpu-mps"),
        capacity={"nvidia.com/gpu": "6", "nvidia.com/gpu-mps": "8"},
    )
    objects[1] = configmap(OPERATOR_NS, "plugin-config", {"h100-ts-subset": config})
    inputs = world(objects, (ALPHA, BETA))
    assert run("SHARE-001", inputs) == []
    (draft,) = run("SHARE-006", inputs)
    assert draft.evidence["resource"] == "nvidia.com/gpu-mps"


# --- KAI Scheduler / Run:ai fractions ---------------------------------------------------------


def _kai(*pods: dict) -> list[dict]:
    return [node("gpu-a", capacity={"nvidia.com/gpu": "8"}), *pods]


def test_kai_fractions_of_two_tenants_on_one_gpu_are_certain_co_tenancy():
    inputs = world(
        _kai(
            kai_reservation_pod("f3b1c2d4-group", UUIDS[3]),
            kai_fraction_pod("alpha", "notebook-a", "f3b1c2d4-group"),
            kai_fraction_pod("beta", "notebook-b", "f3b1c2d4-group", fraction="0.25"),
        ),
        (ALPHA, BETA),
    )
    (draft,) = run("SHARE-001", inputs)
    assert draft.tenants == ("alpha", "beta")
    assert draft.evidence["co_residence"] == "certain"
    pods = [p for party in draft.evidence["parties"] for p in party["pods"]]
    assert {p["resource"] for p in pods} == {"gpu-fraction"}
    assert all(p["devices"] == [UUIDS[3]] for p in pods)
    # The reservation pod holds the GPU for them: it is not a party.
    assert [party["party"] for party in draft.evidence["parties"]] == ["alpha", "beta"]


def test_kai_fractions_on_different_gpus_do_not_meet():
    inputs = world(
        _kai(
            kai_reservation_pod("group-one", UUIDS[0]),
            kai_reservation_pod("group-two", UUIDS[1]),
            kai_fraction_pod("alpha", "notebook-a", "group-one"),
            kai_fraction_pod("beta", "notebook-b", "group-two"),
        ),
        (ALPHA, BETA),
    )
    assert run("SHARE-001", inputs) == []
    # Each still uses time-slicing on its GPU: an approval is due.
    assert {d.tenants for d in run("SHARE-004", inputs)} == {("alpha",), ("beta",)}


def test_kai_fractions_without_a_group_may_meet():
    inputs = world(
        _kai(
            kai_fraction_pod("alpha", "notebook-a", None),
            kai_fraction_pod("beta", "notebook-b", None),
        ),
        (ALPHA, BETA),
    )
    (draft,) = run("SHARE-001", inputs)
    assert draft.evidence["co_residence"] == "possible"


def test_kai_fraction_is_judged_by_the_class_rules_and_pools():
    inputs = world(
        _kai(
            kai_reservation_pod("g1", UUIDS[2]),
            kai_fraction_pod("ext", "job-e", "g1"),
            kai_fraction_pod("alpha", "job-a", "g1"),
        ),
        (ALPHA, EXT),
    )
    (forbidden,) = run("SHARE-003", inputs)
    assert forbidden.tenants == ("alpha", "ext")
    assert "external" in forbidden.evidence["forbidden_by"]
    # An external tenant's fraction outside its tainted pool.
    (outside,) = run("POD-009", inputs)
    assert outside.tenants == ("ext",)
    assert outside.evidence["gpu_fraction"] == {"gpu-fraction": "0.5"}


def test_reservation_pod_alone_is_no_party():
    sensitive = tenant("vault", "sensitive")
    inputs = world(
        _kai(kai_reservation_pod("g1", UUIDS[2]), kai_fraction_pod("vault", "model", "g1")),
        (sensitive,),
    )
    assert run("SHARE-007", inputs) == []
    assert run("SHARE-003", inputs) == []


def test_kai_fraction_container_is_not_pod011_but_another_container_is():
    fraction = kai_fraction_pod("alpha", "notebook-a", "g1")
    side = container("sidecar", env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}])
    fraction["spec"]["containers"].append(side)
    inputs = world(_kai(kai_reservation_pod("g1", UUIDS[0]), fraction), (ALPHA,))
    (draft,) = run("POD-011", inputs)
    assert [c["container"] for c in draft.evidence["containers"]] == ["sidecar"]


def _fraction_behind_a_sidecar(named: str | None, *, init: bool = False) -> dict:
    """A KAI fraction pod whose first container is a mesh sidecar; the binder put the GPU's
    NVIDIA_VISIBLE_DEVICES in `embedder` (an app container, or an init container)."""
    fraction = kai_fraction_pod("alpha", "embed-0", "g1")
    embedder = {**fraction["spec"]["containers"][0], "name": "embedder"}
    proxy = container("istio-proxy", "docker.io/istio/proxyv2:1.23.2")
    fraction["spec"]["containers"] = [proxy] if init else [proxy, embedder]
    if init:
        fraction["spec"]["initContainers"] = [{**embedder, "restartPolicy": "Always"}]
    if named:
        fraction["metadata"]["annotations"]["gpu-fraction-container-name"] = named
    return fraction


@pytest.mark.parametrize("init", [False, True])
def test_the_container_a_kai_fraction_names_gets_its_gpu_and_is_not_pod011(init):
    """`gpu-fraction-container-name` names the container KAI's binder hands the GPU to, after
    a sidecar or among the init containers: that is the fraction's own GPU, not a bypass."""
    fraction = _fraction_behind_a_sidecar("embedder", init=init)
    inputs = world(_kai(kai_reservation_pod("g1", UUIDS[0]), fraction), (ALPHA,))
    assert run("POD-011", inputs) == []
    assert "gpu_access_outside_quota" not in str(run("K8S-001", inputs))


def test_without_the_annotation_kai_hands_the_gpu_to_the_first_container_only():
    inputs = world(
        _kai(kai_reservation_pod("g1", UUIDS[0]), _fraction_behind_a_sidecar(None)), (ALPHA,)
    )
    (draft,) = run("POD-011", inputs)
    assert [c["container"] for c in draft.evidence["containers"]] == ["embedder"]


def test_a_pod_outside_the_reservation_namespace_with_the_annotation_in_a_tenant_namespace():
    """A tenant cannot hide a whole GPU as a "reservation": in its namespace it is a holder."""
    fake = kai_reservation_pod("g1", UUIDS[0])
    fake["metadata"]["namespace"] = "beta"
    inputs = world(_kai(fake, kai_fraction_pod("alpha", "n", "g1")), (ALPHA, BETA))
    assert fake["metadata"]["namespace"] != KAI_RESERVATION_NS
    holdings = [d.tenants for d in run("SHARE-004", inputs)]
    assert holdings == [("alpha",)]  # beta's whole GPU is exclusive: no approval needed
    assert run("SHARE-001", inputs) == []  # different pools: a whole GPU and a fraction


# --- HAMi -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uuids", "verdict"),
    [
        ((UUIDS[4], UUIDS[4]), "certain"),
        ((UUIDS[4], UUIDS[5]), None),
        ((None, None), "possible"),  # scheduled before HAMi annotated them: any GPU
    ],
)
def test_hami_shares_by_time_slicing_on_the_gpu_it_allocated(uuids, verdict):
    inputs = world(
        [
            node("gpu-a", capacity={"nvidia.com/gpu": "80"}),
            hami_pod("alpha", "infer-a", uuids[0], **{"nvidia.com/gpumem": "3000"}),
            hami_pod("beta", "infer-b", uuids[1], **{"nvidia.com/gpucores": "30"}),
        ],
        (ALPHA, BETA),
    )
    found = run("SHARE-001", inputs)
    assert [d.evidence["co_residence"] for d in found] == ([verdict] if verdict else [])


def test_hami_allocation_alone_makes_a_whole_gpu_request_shared():
    """HAMi shares a GPU between pods asking only for nvidia.com/gpu: its annotation says so."""
    inputs = world(
        [
            node("gpu-a", capacity={"nvidia.com/gpu": "80"}),
            hami_pod("alpha", "infer-a", UUIDS[6]),
            hami_pod("beta", "infer-b", UUIDS[6]),
        ],
        (ALPHA, BETA),
    )
    (draft,) = run("SHARE-001", inputs)
    assert draft.evidence["co_residence"] == "certain"


@pytest.mark.parametrize(("indices", "verdict"), [(("0", "0"), "certain"), (("0", "1"), None)])
def test_runai_fractions_by_gpu_index(indices, verdict):
    """Run:ai before KAI named a fraction's GPU by index (`runai-gpu`), with no group label."""
    pods = []
    for ns, index in zip(("alpha", "beta"), indices, strict=True):
        fraction = kai_fraction_pod(ns, f"job-{ns}", None)
        fraction["metadata"]["annotations"]["runai-gpu"] = index
        pods.append(fraction)
    found = run("SHARE-001", world(_kai(*pods), (ALPHA, BETA)))
    assert [d.evidence["co_residence"] for d in found] == ([verdict] if verdict else [])


# Volcano's vGPU device plugin and Aliyun's gpushare advertise shares of NVIDIA GPUs under their
# own names: pods of two tenants holding them on a one-GPU node time-slice it.
@pytest.mark.parametrize(
    ("capacity", "asked"),
    [
        (
            {"volcano.sh/vgpu-number": "10", "volcano.sh/vgpu-memory": "81920"},
            {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "3000"},
        ),
        ({"aliyun.com/gpu-mem": "80", "aliyun.com/gpu-count": "1"}, {"aliyun.com/gpu-mem": "4"}),
    ],
)
def test_volcano_and_aliyun_shares_are_time_slicing(capacity, asked):
    inputs = world(
        [
            node("gpu-a", gpus=1, capacity=capacity),
            pod("alpha", "a", container(gpu=asked)),
            pod("beta", "b", container(gpu=asked)),
        ],
        (ALPHA, BETA),
    )
    (draft,) = run("SHARE-001", inputs)
    assert draft.evidence["co_residence"] == "certain"
    assert draft.tenants == ("alpha", "beta")
