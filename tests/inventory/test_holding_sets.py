"""The holder sets sync history keeps per node (inventory.holding_sets): every path that hands a
tenant devices of its own (DESIGN §2) is counted, each set on its own: the node's whole GPUs
(the device plugin's, and every GPU for an honoured NVIDIA_VISIBLE_DEVICES=all), its GPU
instances of one MIG profile, each DRA device. Shared devices are left out on purpose. Pure:
the objects as kubectl prints them, read by normalise() as a sync would."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.holding_sets import exclusive_holders
from inventory.holdings import Devices
from inventory.sources.normalise import normalise
from tests.posture.dra_world import claim, device_class, dra_pod, mig_device, resource_slice
from tests.posture.gpu_access_world import OPERATOR_NS, UUIDS, container, node, pod

NVD = "NVIDIA_VISIBLE_DEVICES"
ACCEPT = "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED"


def _sets(*objects: dict[str, Any]) -> dict[tuple[str, str], tuple[int, dict[str, int], Devices]]:
    snapshot = normalise(list(objects), configured_platform=(OPERATOR_NS,))
    platform = frozenset(snapshot.platform_namespaces)
    found = exclusive_holders(snapshot.nodes, snapshot.pods, snapshot, platform)
    return {key: (s.count, s.holders, s.devices) for key, s in found.items()}


# --- MIG: a GPU instance of its own is a memory partition passed whole ---------------------------

MIG_7G = "nvidia.com/mig-7g.80gb"
MIG_1G = "nvidia.com/mig-1g.10gb"


def mig_node(resource: str, count: int, **labels: str) -> dict[str, Any]:
    return node(
        "gpu-a",
        gpus=1,
        capacity={"nvidia.com/gpu": "0", resource: str(count)},
        labels={
            "nvidia.com/mig.strategy": "mixed",
            "nvidia.com/mig.config": f"all-{resource.removeprefix('nvidia.com/mig-')}",
            "nvidia.com/mig.config.state": "success",
            **labels,
        },
    )


def mig_pod(ns: str, resource: str, count: int = 1, name: str = "train") -> dict[str, Any]:
    return pod(ns, name, container(gpu={resource: str(count)}))


def test_a_gpu_instance_of_its_own_is_a_set_one_per_gpu_for_a_full_gpu_profile():
    found = _sets(mig_node(MIG_7G, 1), mig_pod("alpha", MIG_7G))
    assert found == {("gpu-a", MIG_7G): (1, {"alpha": 1}, Devices(MIG_7G, per_gpu=1))}


def test_small_profiles_are_counted_k_of_n_and_one_gpu_reset_may_clear_seven():
    found = _sets(mig_node(MIG_1G, 7), mig_pod("alpha", MIG_1G, 4), mig_pod("beta", MIG_1G, 2, "b"))
    count, holders, devices = found[("gpu-a", MIG_1G)]
    assert (count, holders, devices.per_gpu) == (7, {"alpha": 4, "beta": 2}, 7)


@pytest.mark.parametrize(
    "resource, labels",
    [
        # compute instances of one GPU instance share its memory (DESIGN §2 mig_ci)
        ("nvidia.com/mig-1c.3g.40gb", {}),
        # GFD says the MIG devices are time-sliced
        (MIG_1G, {f"{MIG_1G}.sharing-strategy": "time-slicing", f"{MIG_1G}.replicas": "4"}),
        # a reconfiguration that failed: the layout is not known
        (MIG_1G, {"nvidia.com/mig.config.state": "failed"}),
    ],
)
def test_mig_devices_that_are_not_an_instance_of_their_own_are_left_out(resource, labels):
    assert _sets(mig_node(resource, 7, **labels), mig_pod("alpha", resource)) == {}


# --- DRA: the allocation names the device ------------------------------------------------------


def _dra(*objects: dict[str, Any]):
    return _sets(node("gpu-a", gpus=4), device_class(), resource_slice("gpu-a"), *objects)


def test_each_dra_gpu_is_a_set_of_one_held_by_the_claim_that_has_it_alone():
    found = _dra(
        claim("alpha", "train-gpu", ["gpu-0"], reserved_for=["train"]),
        dra_pod("alpha", "train", "train-gpu"),
    )
    assert found[("gpu-a", UUIDS[0])] == (1, {"alpha": 1}, Devices(UUIDS[0], UUIDS[0]))
    # The node's other GPUs are sets too (idle now), and its whole GPUs as GFD counts them.
    assert found[("gpu-a", UUIDS[1])][:2] == (1, {})
    assert found[("gpu-a", "")][:2] == (4, {})


def test_a_dra_device_time_sliced_by_its_config_or_not_in_use_is_no_tenants_alone():
    found = _dra(
        claim("alpha", "ts", ["gpu-0"], sharing="TimeSlicing", reserved_for=["a"]),
        claim("beta", "ts", ["gpu-0"], sharing="TimeSlicing", reserved_for=["b"]),
        dra_pod("alpha", "a", "ts"),
        dra_pod("beta", "b", "ts"),
        # allocated, but its pod is not running: it holds nothing yet
        claim("gamma", "later", ["gpu-1"], reserved_for=["g"]),
        {**dra_pod("gamma", "g", "later"), "status": {"phase": "Pending"}},
        # adminAccess reaches a device, it does not hold it
        claim("delta", "watch", ["gpu-2"], admin=True, reserved_for=["d"]),
        dra_pod("delta", "d", "watch"),
    )
    assert ("gpu-a", UUIDS[0]) not in found
    assert found[("gpu-a", UUIDS[1])][1] == {} and found[("gpu-a", UUIDS[2])][1] == {}


def test_a_dra_mig_device_is_cleared_by_a_reset_of_its_parent():
    mig_uuid = "MIG-0f6a1b2c-aaaa-bbbb-cccc-ddddeeeeffff"
    found = _sets(
        node("gpu-a", gpus=1),
        device_class("mig.nvidia.com", kind="mig"),
        resource_slice("gpu-a", [mig_device(0, "3g.40gb", mig_uuid)]),
        claim(
            "alpha",
            "mig",
            ["gpu-0-mig-3g.40gb-0"],
            device_class_name="mig.nvidia.com",
            reserved_for=["t"],
        ),
        dra_pod("alpha", "t", "mig"),
    )
    assert found[("gpu-a", mig_uuid)] == (1, {"alpha": 1}, Devices(mig_uuid, UUIDS[0]))


# --- NVIDIA_VISIBLE_DEVICES=all: every GPU of the node --------------------------------------------


def toolkit(accept: str | None = None) -> dict[str, Any]:
    env = [{"name": "RUNTIME", "value": "containerd"}]
    if accept is not None:
        env.append({"name": ACCEPT, "value": accept})
    ctr = container(
        "nvidia-container-toolkit-ctr",
        "nvcr.io/nvidia/k8s/container-toolkit:v1.17.5-ubuntu20.04",
        env=env,
    )
    return pod(OPERATOR_NS, "nvidia-container-toolkit-daemonset-gpu-a", ctr)


def env_pod(ns: str, value: str = "all", gpu: dict | None = None, **fields: Any) -> dict:
    probe = container("probe", "nvidia/cuda:12.4.1-base-ubuntu22.04", gpu=gpu, **fields)
    probe["env"] = [{"name": NVD, "value": value}]
    return pod(ns, f"probe-{ns}", probe)


def _whole(*objects: dict[str, Any]) -> dict[str, int]:
    found = _sets(node("gpu-a", capacity={"nvidia.com/gpu": "8"}), *objects)
    return found[("gpu-a", "")][1]


def test_an_honoured_all_holds_every_gpu_of_the_node():
    assert _whole(toolkit(), env_pod("alpha")) == {"alpha": 8}
    # privileged: the toolkit honours it whatever its setting
    assert _whole(toolkit("false"), env_pod("alpha", securityContext={"privileged": True})) == {
        "alpha": 8
    }
    # its own device-plugin GPU is among them, counted once
    assert _whole(
        toolkit(), env_pod("alpha"), pod("alpha", "t", container(gpu={"nvidia.com/gpu": "1"}))
    ) == {"alpha": 8}


def test_a_hold_the_node_ignores_or_that_names_some_gpus_or_is_the_platforms_is_not_counted():
    assert _whole(toolkit("false"), env_pod("alpha")) == {}
    assert _whole(toolkit(), env_pod("alpha", value="0,1")) == {}
    assert _whole(toolkit(), env_pod(OPERATOR_NS)) == {}
    # a container that requests a GPU holds it through the plugin, not the variable
    assert _whole(toolkit(), env_pod("alpha", gpu={"nvidia.com/gpu": "1"})) == {"alpha": 1}


def test_a_tenants_toolkit_image_never_makes_the_node_honour_the_variable():
    # The tenant runs the toolkit's image with its default (accept): not the node's toolkit,
    # whose setting then stays unverified, and nothing unverified is counted as held.
    look_alike = toolkit()
    look_alike["metadata"]["namespace"] = "alpha"
    snapshot = normalise(
        [node("gpu-a", capacity={"nvidia.com/gpu": "8"}), look_alike, env_pod("alpha")],
        configured_platform=(OPERATOR_NS,),
        tenant_namespaces=("alpha",),
    )
    platform = frozenset(snapshot.platform_namespaces)
    found = exclusive_holders(
        snapshot.nodes, snapshot.pods, snapshot, platform, frozenset({"alpha"})
    )
    assert found[("gpu-a", "")].holders == {}


def test_an_honoured_all_on_a_dra_node_holds_each_gpu_the_driver_publishes():
    found = _sets(
        node("gpu-a", gpus=4), device_class(), resource_slice("gpu-a"), toolkit(), env_pod("alpha")
    )
    assert all(found[("gpu-a", uuid)][1] == {"alpha": 1} for uuid in UUIDS[:4])
    assert found[("gpu-a", "")][1] == {}  # counted once, on the named devices


# --- which resets attest a handover of the devices ---------------------------------------------


def test_a_reset_attests_a_handover_only_where_it_may_have_cleared_what_passed():
    whole, mig, dra = Devices(), Devices(MIG_1G, per_gpu=7), Devices(UUIDS[0], UUIDS[0])
    assert whole.attested({""}, 4) and not whole.attested({"GPU-x"}, 2)
    assert whole.attested({"GPU-x", "GPU-y"}, 2)
    # seven 1g instances fit on one GPU: one GPU's reset may have cleared 7 that passed
    assert mig.attested({"GPU-x"}, 7) and not mig.attested({"GPU-x"}, 8)
    # a named GPU: only its own reset, or the node's
    assert dra.attested({UUIDS[0]}, 1) and dra.attested({""}, 1)
    assert not dra.attested({UUIDS[1], UUIDS[2]}, 1)


# --- Koordinator / qGPU: a whole GPU asked of a sharing scheduler is passed whole --------------

KOORD_WHOLE = {"koordinator.sh/gpu-core": "100", "koordinator.sh/gpu-memory-ratio": "100"}
KOORD_HALF = {"koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory-ratio": "50"}


@pytest.mark.parametrize(
    "asked",
    [KOORD_WHOLE, {"tke.cloud.tencent.com/qgpu-core": "100"}, {"koordinator.sh/gpu": "100"}],
)
def test_a_whole_gpu_a_sharing_scheduler_holds_alone_is_the_nodes_whole_gpu(asked):
    """alpha's whole Koordinator (or qGPU) GPU goes to the next holder as an `nvidia.com/gpu`
    would: sync history keeps it, so LEAK-001 sees beta take it after alpha without a reset
    (it was left out as a fraction: rtself3 k31)."""
    found = _sets(node("gpu-a", gpus=1), pod("alpha", "a", container(gpu=asked)))
    assert found == {("gpu-a", ""): (1, {"alpha": 1}, Devices())}


@pytest.mark.parametrize(
    "pods",
    [
        [pod("alpha", "a", container(gpu=KOORD_HALF))],  # a share: not alpha's alone
        [  # a whole GPU and a share on one GPU: shared after all
            pod("alpha", "a", container(gpu=KOORD_WHOLE)),
            pod("beta", "b", container(gpu=KOORD_HALF)),
        ],
    ],
)
def test_shares_of_a_sharing_scheduler_are_never_a_set(pods):
    assert _sets(node("gpu-a", gpus=1), *pods) == {}
