"""A component with no pod on a GPU node where the read holds no DaemonSets: not running there
(the pods were read), but "no DaemonSet of it in the cluster" is no claim such a read can
make. A snapshot file that holds no DaemonSet may not have exported them; a live list that
found none read them all."""

from __future__ import annotations

import pytest

from inventory.components import StackFacts, presence
from inventory.node_components import node_components
from inventory.services import cluster_sync
from inventory.sources.kube import KubeSettings, KubeSource
from inventory.sync import cluster_get_or_create
from posture.read_model import cluster_snapshot
from tests.inventory.test_components import ds_pod, node, nodes_of, operator_cluster
from tests.kubeapi import FakeKubeAPI

UNREAD = "the snapshot holds no DaemonSets, so whether one would run here is not known"
NONE_IN_CLUSTER = "no pod of it on the node and no DaemonSet of it in the cluster"
PLUGIN = "nvcr.io/nvidia/k8s-device-plugin:v0.17.3"


def plugin_only() -> list[dict]:
    """A GPU node whose device plugin pod runs; no MIG manager or exporter anywhere."""
    return [node("gpu-a"), ds_pod("nvidia-device-plugin", "gpu-a", PLUGIN)]


def test_no_daemonset_read_says_so_and_the_component_still_runs_nowhere_here():
    facts = StackFacts(pods_read=True, daemonsets_read=False)
    _, absent = presence("gpu-a", {}, (), (), facts, stack_pods=())
    assert absent["mig_manager"] == f"no pod of it on the node; {UNREAD}"
    assert NONE_IN_CLUSTER not in absent.values()


def test_a_snapshot_without_daemonsets_does_not_claim_none_is_in_the_cluster():
    objects = [o for o in operator_cluster() if o["kind"] != "DaemonSet"]
    mig = node_components(nodes_of(objects)["gpu-a"])["mig_manager"]
    # No pod of it on the node: still not installed there (the checks leave it out of the
    # patch judgement and of STACK-004), with the reason saying what is not known.
    assert mig["state"] == "not_installed"
    assert UNREAD in mig["source"] and "no DaemonSet of it in the cluster" not in mig["source"]
    assert UNREAD in node_components(nodes_of(plugin_only())["gpu-a"])["dcgm_exporter"]["source"]


def test_a_snapshot_holding_daemonsets_says_none_of_it_is_in_the_cluster():
    plugin_ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvidia-device-plugin", "namespace": "kube-system"},
        "spec": {"template": {"spec": {"containers": [{"name": "p", "image": PLUGIN}]}}},
    }
    gpu = nodes_of([*plugin_only(), plugin_ds])["gpu-a"]
    assert node_components(gpu)["mig_manager"]["source"] == NONE_IN_CLUSTER


@pytest.mark.django_db
def test_a_live_list_that_found_no_daemonset_read_them_all(tmp_path, settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 0
    with FakeKubeAPI(plugin_only()) as api:
        source = KubeSource(
            kubeconfig=str(api.kubeconfig(tmp_path)),
            context="fake",
            settings=KubeSettings(page_size=50, read_timeout=5.0),
        )
        cluster = cluster_get_or_create(name="no-daemonsets")
        assert cluster_sync(cluster=cluster, source=source).status == "succeeded"
    (gpu,) = cluster_snapshot(cluster).nodes
    assert gpu.not_installed["mig_manager"] == NONE_IN_CLUSTER
