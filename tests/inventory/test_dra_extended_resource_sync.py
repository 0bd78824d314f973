"""KEP-5004 read from the live API and from a snapshot alike: the claim a pod's status names
for its extended-resource request holds its GPU, and the workloads API says so
(`extended_resource_claim`) where `gpu_resources`, a device plugin's holdings, is `{}`."""

from __future__ import annotations

import json

import pytest

from inventory.services import cluster_sync
from inventory.sources.files import SnapshotFileSource
from inventory.sources.kube import KubeSettings, KubeSource
from inventory.sync import cluster_get_or_create
from posture.read_model import cluster_snapshot
from tests.conftest import api_client
from tests.kubeapi import FakeKubeAPI
from tests.posture.extended_world import EXT_CLAIM, extended_cluster

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def full_lists(settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 0


def _live(tmp_path):
    with FakeKubeAPI(extended_cluster()) as api:
        source = KubeSource(
            kubeconfig=str(api.kubeconfig(tmp_path)),
            context="fake",
            settings=KubeSettings(page_size=2, read_timeout=5.0),
        )
        cluster = cluster_get_or_create(name="ext")
        assert cluster_sync(cluster=cluster, source=source).status == "succeeded"
    return cluster


def _file(tmp_path):
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": extended_cluster()}))
    cluster = cluster_get_or_create(name="ext")
    assert (
        cluster_sync(cluster=cluster, source=SnapshotFileSource([str(path)])).status == "succeeded"
    )
    return cluster


@pytest.mark.parametrize("sync", [_live, _file], ids=["live", "snapshot"])
def test_the_workload_names_the_claim_that_holds_its_gpu(sync, tmp_path, personas):
    cluster = sync(tmp_path)
    ext = next(p for p in cluster_snapshot(cluster).pods if p.name == "ext-0")
    assert ext.gpu_resources == {}
    assert [(c.claim, c.extended) for c in ext.resource_claims] == [
        (EXT_CLAIM, (("main", "nvidia.com/gpu"),))
    ]
    rows = api_client(personas["security_lead"]).get("/api/v1/workloads/?cluster=ext").json()
    by_name = {r["name"]: r for r in rows["results"]}
    assert by_name["ext-0"]["gpu_resources"] == {}
    assert by_name["ext-0"]["extended_resource_claim"] == {
        "claim": f"beta/{EXT_CLAIM}",
        "requests": [{"container": "main", "resource": "nvidia.com/gpu"}],
    }
    assert by_name["train-0"]["extended_resource_claim"] is None
