"""A watch re-sync derives a node's facts from the same inputs as a full list: the device-plugin
config the GPU Operator's ClusterPolicy makes the default for unlabelled nodes included."""

from __future__ import annotations

import copy

import pytest

from inventory.models import Node
from inventory.services import cluster_sync
from inventory.sync import cluster_get_or_create
from tests.kubeapi import FakeKubeAPI
from tests.test_watch_sync import item, source, world

pytestmark = pytest.mark.django_db

TWO_KEYS = {
    "mps": "version: v1\nsharing:\n  mps:\n    resources:\n"
    "    - name: nvidia.com/gpu\n      replicas: 4\n",
    "sliced": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
    "    - name: nvidia.com/gpu\n      replicas: 4\n",
}


def default_world(plugin_image: str = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0") -> list[dict]:
    """gpu-ts-1 with no sharing label of its own: the ClusterPolicy's default config
    (`mps`, one of two keys, so no fallback would find it) shares it by MPS."""
    objects = world()
    node = item(objects, "Node", "gpu-ts-1")
    for label in (
        "nvidia.com/device-plugin.config",
        "nvidia.com/gpu.replicas",
        "nvidia.com/gpu.sharing-strategy",
    ):
        node["metadata"]["labels"].pop(label, None)
    node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-H100-80GB-HBM3"
    item(objects, "ConfigMap", "time-slicing-config")["data"] = copy.deepcopy(TWO_KEYS)
    objects.append(
        {
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy", "resourceVersion": "1"},
            "spec": {"devicePlugin": {"config": {"name": "time-slicing-config", "default": "mps"}}},
        }
    )
    plugin = item(objects, "Pod", "nvidia-device-plugin-daemonset-x1")
    plugin["spec"]["containers"][0]["image"] = plugin_image
    return objects


def test_a_rederived_node_keeps_the_clusterpolicy_default_config(tmp_path, small_world):
    with FakeKubeAPI(default_world()) as api:
        cluster = cluster_get_or_create(name="live")
        assert cluster_sync(cluster=cluster, source=source(api, tmp_path)).mode == "full"
        node = Node.objects.get(cluster=cluster, name="gpu-ts-1")
        assert node.sharing_strategy == "mps"
        # A GPU-stack pod on the node changes: only the node is re-derived.
        api.replace_objects(default_world("nvcr.io/nvidia/k8s-device-plugin:v0.17.3"))
        run = cluster_sync(cluster=cluster, source=source(api, tmp_path))
        assert run.mode == "watch" and run.changes["nodes_rederived"] == 1
        node.refresh_from_db()
        assert node.device_plugin_version == "0.17.3"
        assert node.sharing_strategy == "mps"


def test_a_rederived_node_takes_no_version_from_a_tenants_stack_image(tmp_path, small_world):
    """A watch re-sync reads a node's stack from the platform's pods only, as a full sync does:
    alpha's pod running an old device plugin image is no plugin of the node's (rtself2 k43)."""
    with FakeKubeAPI(world()) as api:
        cluster = cluster_get_or_create(name="live")
        assert cluster_sync(cluster=cluster, source=source(api, tmp_path)).mode == "full"
        objects = world()
        evil = copy.deepcopy(item(objects, "Pod", "trainer-0"))
        evil["metadata"].update(name="evil", uid="uid-evil")
        evil["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/k8s-device-plugin:v0.1.0"
        api.replace_objects([*objects, evil])
        run = cluster_sync(cluster=cluster, source=source(api, tmp_path))
        assert run.mode == "watch" and run.changes["nodes_rederived"] == 1
        node = Node.objects.get(cluster=cluster, name="gpu-ts-1")
        assert node.device_plugin_version == "0.17.0"
        assert "team-alpha" not in str(node.data.get("deployed"))
