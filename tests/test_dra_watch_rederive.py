"""A watch re-sync whose only changes are DRA claims or slices re-derives the nodes they name
(inventory.sync_delta_dra): a claim allocated with a TimeSlicing or MPS config, moved to another
node or deleted moves the node's sharing_strategy and sharing_basis at once, as a full list
would, not at the next full sync; so does a DeviceClass whose config changes, for the nodes of
the claims allocated from it. Through the real path: the official client against the fake
API server, a full list, then watches."""

from __future__ import annotations

import pytest

from inventory.models import Node
from inventory.services import cluster_sync
from inventory.sources.kube import KubeSettings, KubeSource
from inventory.sync import cluster_get_or_create
from tests.kubeapi import FakeKubeAPI
from tests.posture.dra_world import claim, device_class, dra_pod, gpu_config, resource_slice
from tests.posture.gpu_access_world import namespace, node

pytestmark = pytest.mark.django_db

NONE = {"nvidia.com/gpu.sharing-strategy": "none"}  # GFD's label: it knows nothing of DRA


@pytest.fixture(autouse=True)
def watches(settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 24  # the next syncs watch, they do not list


def _world(*claims: dict) -> list[dict]:
    return [
        namespace("alpha"),
        node("gpu-a", gpus=4, labels=NONE),
        node("gpu-b", gpus=4, labels=NONE),
        device_class(),
        resource_slice("gpu-a"),
        resource_slice("gpu-b"),
        dra_pod("alpha", "train-0", "train-gpu"),
        *claims,
    ]


def _train(sharing: str | None, where: str = "gpu-a") -> dict:
    return claim(
        "alpha", "train-gpu", ["gpu-0"], sharing=sharing, node=where, reserved_for=["train-0"]
    )


def _sync(api: FakeKubeAPI, cluster, tmp_path, objects: list[dict]):
    api.replace_objects(objects)
    source = KubeSource(
        kubeconfig=str(api.kubeconfig(tmp_path)),
        context="fake",
        settings=KubeSettings(page_size=50, read_timeout=5.0),
    )
    return cluster_sync(cluster=cluster, source=source)


def _sharing(cluster, name: str) -> tuple[str, str]:
    row = Node.objects.get(cluster=cluster, name=name)
    return row.sharing_strategy, row.data.get("sharing_basis") or ""


def test_a_claim_only_watch_moves_the_nodes_dra_sharing(tmp_path):
    with FakeKubeAPI(_world(_train(None))) as api:
        cluster = cluster_get_or_create(name="dra-watch")
        assert _sync(api, cluster, tmp_path, _world(_train(None))).mode == "full"
        mode, basis = _sharing(cluster, "gpu-a")
        assert mode == "none" and "DRA" not in basis  # the claim holds gpu-0 whole

        run = _sync(api, cluster, tmp_path, _world(_train("TimeSlicing")))
        assert run.mode == "watch", run.warnings
        assert {kind for kind, events in run.counts.items() if events} == {"ResourceClaim"}
        assert run.changes["nodes_rederived"] == 1 and run.changes["nodes"]["updated"] == 1
        assert run.changes["drift_events"] == 1  # the node's sharing changed, as a full list says
        mode, basis = _sharing(cluster, "gpu-a")
        assert mode == "time_slicing"
        assert "DRA: ResourceClaim alpha/train-gpu holds gpu-0 by time_slicing" in basis

        run = _sync(api, cluster, tmp_path, _world(_train("MPS")))
        assert run.mode == "watch", run.warnings
        mode, basis = _sharing(cluster, "gpu-a")
        assert mode == "mps" and "alpha/train-gpu holds gpu-0 by mps" in basis

        # Released and allocated again on gpu-b between two watches: the old node and the new.
        run = _sync(api, cluster, tmp_path, _world(_train("MPS", where="gpu-b")))
        assert run.mode == "watch", run.warnings
        assert run.changes["nodes_rederived"] == 2
        mode, basis = _sharing(cluster, "gpu-a")
        assert mode == "none" and "DRA" not in basis
        assert _sharing(cluster, "gpu-b")[0] == "mps"

        run = _sync(api, cluster, tmp_path, _world())  # the claim deleted
        assert run.mode == "watch", run.warnings
        assert run.changes["dra_claim"]["deleted"] == 1
        mode, basis = _sharing(cluster, "gpu-b")
        assert mode == "none" and "DRA" not in basis


def test_a_claim_stored_as_it_is_rederives_nothing(tmp_path):
    shared = _train("TimeSlicing")
    with FakeKubeAPI(_world(shared)) as api:
        cluster = cluster_get_or_create(name="dra-quiet")
        assert _sync(api, cluster, tmp_path, _world(shared)).mode == "full"
        # A new resourceVersion of the claim that changes nothing kept (a status heartbeat).
        touched = {**shared, "metadata": {**shared["metadata"], "labels": {"run": "2"}}}
        run = _sync(api, cluster, tmp_path, _world(touched))
        assert run.mode == "watch", run.warnings
        assert run.changes["nodes_rederived"] == 0
        assert _sharing(cluster, "gpu-a")[0] == "time_slicing"


def test_a_slice_only_watch_moves_the_nodes_dra_kubelet_plugin(tmp_path):
    """The node's ResourceSlice is what shows the DRA driver's kubelet plugin serves it (its
    version unknown, STACK-004) where no pod of it is seen: one that comes or goes says so at
    once."""
    bare = [namespace("alpha"), node("gpu-a", gpus=4, labels=NONE), device_class()]
    with FakeKubeAPI(bare) as api:
        cluster = cluster_get_or_create(name="dra-slices")
        assert _sync(api, cluster, tmp_path, bare).mode == "full"
        assert "dra_driver" not in Node.objects.get(cluster=cluster, name="gpu-a").data["deployed"]

        run = _sync(api, cluster, tmp_path, [*bare, resource_slice("gpu-a")])
        assert run.mode == "watch", run.warnings
        assert {kind for kind, events in run.counts.items() if events} == {"ResourceSlice"}
        assert run.changes["nodes_rederived"] == 1
        deployed = Node.objects.get(cluster=cluster, name="gpu-a").data["deployed"]
        assert "ResourceSlices of gpu.nvidia.com" in deployed["dra_driver"]

        run = _sync(api, cluster, tmp_path, bare)  # the slice deleted: the plugin is gone
        assert run.mode == "watch", run.warnings
        assert "dra_driver" not in Node.objects.get(cluster=cluster, name="gpu-a").data["deployed"]


def _class_world(gpu_class: dict) -> list[dict]:
    """A claim of the GPU class on gpu-a and one of another class on gpu-b, neither with a
    config of its own: the class's config decides their sharing."""
    other = claim(
        "alpha",
        "infer-gpu",
        ["gpu-1"],
        device_class_name="other.nvidia.com",
        node="gpu-b",
        reserved_for=["infer-0"],
    )
    return [
        *_world(_train(None)),
        gpu_class,
        device_class("other.nvidia.com"),
        dra_pod("alpha", "infer-0", "infer-gpu", node_name="gpu-b"),
        other,
    ]


def test_a_device_class_watch_moves_the_nodes_of_its_claims(tmp_path):
    """Its Helm values give the DeviceClass a TimeSlicing GpuConfig: every claim of the class
    that sets none of its own shares its device, so gpu-a (train-gpu) reads as time-sliced at
    this watch, as a full list would; gpu-b's claim is of another class and is not re-read."""
    plain = [o for o in _class_world(device_class()) if o["kind"] != "DeviceClass"]
    shared_class = device_class(config=[{"opaque": gpu_config("TimeSlicing")["opaque"]}])
    with FakeKubeAPI(_class_world(device_class())) as api:
        cluster = cluster_get_or_create(name="dra-class")
        assert _sync(api, cluster, tmp_path, _class_world(device_class())).mode == "full"
        assert _sharing(cluster, "gpu-a")[0] == "none"

        run = _sync(api, cluster, tmp_path, _class_world(shared_class))
        assert run.mode == "watch", run.warnings
        assert {kind for kind, events in run.counts.items() if events} == {"DeviceClass"}
        assert run.changes["nodes_rederived"] == 1 and run.changes["nodes"]["updated"] == 1
        assert run.changes["drift_events"] == 1  # the node's sharing changed
        mode, basis = _sharing(cluster, "gpu-a")
        assert mode == "time_slicing"
        assert "DRA GpuConfig of its device class: sharing TimeSlicing" in basis
        assert _sharing(cluster, "gpu-b")[0] == "none"

        # The class deleted (its claims keep their devices): no class config shares them.
        run = _sync(api, cluster, tmp_path, [*plain, device_class("other.nvidia.com")])
        assert run.mode == "watch", run.warnings
        assert run.changes["nodes_rederived"] == 1
        mode, basis = _sharing(cluster, "gpu-a")
        assert mode == "none" and "DRA" not in basis
