"""GKE's MIG partitions, plain and time-shared (`gke-gpu-partition-size` with
`gke-gpu-sharing-strategy: time-sharing`): capacity is partitions x clients x GPUs, so two
tenants time-share one partition only when the pigeonhole says so, never "the single physical
GPU"; and a plain partitioned pool has no time-slicing replicas."""

from __future__ import annotations

import pytest

from tests.conftest import api_client
from tests.gke_world import MIG, MIGTS, by_check, container, pod, snapshot, sync_and_score

pytestmark = pytest.mark.django_db


def share001_on_migts(findings: list[dict]) -> dict:
    (finding,) = [f for f in by_check(findings, "SHARE-001") if f["subject_name"] == "a2-migts"]
    (node,) = finding["evidence"]["nodes"]
    assert node["node"] == MIGTS
    return node


def test_two_tenants_on_time_shared_gke_mig_partitions_may_meet_not_must(tmp_path, personas):
    node = share001_on_migts(sync_and_score(tmp_path, snapshot()))
    # One A100 cut into 7 x 1g.10gb, 2 clients each: 1 + 1 pods fit on 7 partitions apart.
    assert node["co_residence"] == "possible"
    reason = node["co_residence_reason"]
    assert "7 MIG partitions" in reason and "single physical GPU" not in reason
    assert "mig_gi" in reason  # on different partitions they are hardware-isolated
    assert (node["gpu_count"], node["mig_config"]) == (1, "1g.10gb")


def test_more_pods_than_partitions_can_keep_apart_must_meet(tmp_path, personas):
    app = "registry.example.internal/{}/app@sha256:" + "c" * 64
    extra = [
        pod(ns, f"more-{i}", MIGTS, [container("main", app.format(ns), gpus=1)])
        for ns in ("search", "ads")
        for i in range(6)
    ]
    node = share001_on_migts(sync_and_score(tmp_path, snapshot(extra=extra)))
    # 7 + 7 pods at 2 per partition need 4 + 4 partitions apart; there are 7.
    assert node["co_residence"] == "certain"
    assert "need 8 MIG partitions" in node["co_residence_reason"]


def test_gke_partitioned_nodes_in_the_node_api(tmp_path, personas):
    sync_and_score(tmp_path, snapshot())
    client = api_client(personas["security_lead"])
    rows = client.get("/api/v1/nodes/", {"cluster": "gke-lab"}).json()["results"]
    nodes = {row["name"]: row for row in rows}
    shared, plain = nodes[MIGTS], nodes[MIG]
    # Time-shared partitions: time_slicing, its layout the partition size, 2 clients each.
    assert (shared["sharing_strategy"], shared["mig_config"]) == ("time_slicing", "1g.10gb")
    assert shared["time_slicing_replicas"] == 2
    # Plain partitions: MIG, and the 7 partitions on one GPU are not 7 time-slicing replicas.
    assert (plain["sharing_strategy"], plain["mig_config"]) == ("mig", "1g.10gb")
    assert (plain["gpu_count"], plain["time_slicing_replicas"]) == (1, None)
