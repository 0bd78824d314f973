"""A node replaced under the same name is another machine (LEAK-001 from sync history): a cloud
autoscaler or Karpenter gives a new VM an old name, but a Node's metadata.uid is its identity.
alpha held gpu-1's GPU; gpu-1 is then a new VM (new uid, created after alpha was last seen,
another GPU model) and beta's pod runs on it: no GPU passed from alpha to beta, so no handover
and no finding. The same Node object (same uid): the handover stands, as before. A holding
recorded before uids were kept is judged by the node's creationTimestamp, else as before (the
finding says the machines were not compared). Through a snapshot sync and a watch."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine

import posture.rules  # noqa: F401  (registers the checks)
from inventory.holding_models import GpuHolders, SyncHandover
from inventory.services import cluster_sync, cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from posture.read_model import posture_inputs
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.posture.builders import run

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
TENANTS = {
    "tenants": [
        {"slug": slug, "name": slug, "trust_class": "external", "namespaces": [slug]}
        for slug in ("alpha", "beta")
    ]
}
NAMESPACES = [{"kind": "Namespace", "metadata": {"name": ns}} for ns in ("alpha", "beta")]
A100, H100 = "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"
OLD_VM = ("uid-gpu-1-a", "2026-10-01T08:00:00Z", A100)


def _node(uid: str, created: str, product: str) -> dict[str, Any]:
    labels = {"nvidia.com/gpu.count": "1", "nvidia.com/gpu.product": product}
    capacity = {"cpu": "96", "nvidia.com/gpu": "1"}
    metadata = {"name": "gpu-1", "labels": labels, "uid": uid, "creationTimestamp": created}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": {},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def _pod(namespace: str) -> dict[str, Any]:
    limits = {"nvidia.com/gpu": "1"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "work", "namespace": namespace},
        "spec": {
            "nodeName": "gpu-1",
            "containers": [
                {"name": "main", "image": "r.example/x:1", "resources": {"limits": limits}}
            ],
        },
        "status": {"phase": "Running"},
    }


@pytest.fixture
def cluster(db):
    tenants_apply(specs=parse_tenants_document(TENANTS))
    return cluster_get_or_create(name="replaced")


def _sync(cluster, tmp_path, hour: int, vm: tuple[str, str, str], tenant: str) -> None:
    path = tmp_path / f"snap-{hour}.json"
    items = [*NAMESPACES, _node(*vm), _pod(tenant)]
    path.write_text(json.dumps({"kind": "List", "items": items}))
    with time_machine.travel(T0 + timedelta(hours=hour), tick=False):
        cluster_sync_from_snapshot(cluster=cluster, paths=[str(path)])


def _leaks(cluster) -> list:
    with time_machine.travel(T0 + timedelta(hours=5), tick=False):
        return list(run("LEAK-001", posture_inputs(cluster)))


def test_a_node_replaced_under_its_name_hands_nothing_over(cluster, tmp_path):
    _sync(cluster, tmp_path, 0, OLD_VM, "alpha")
    # Between the syncs the VM was replaced: same name, new uid, created after alpha's sighting.
    _sync(cluster, tmp_path, 2, ("uid-gpu-1-b", "2026-11-02T11:00:00Z", H100), "beta")
    assert not SyncHandover.objects.exists()
    assert _leaks(cluster) == []
    row = GpuHolders.objects.get(cluster=cluster, node_name="gpu-1")
    # The record is the new machine's, from the sync that first saw it.
    assert (row.holders, row.node_uid) == ({"beta": 1}, "uid-gpu-1-b")
    assert row.first_seen == T0 + timedelta(hours=2)


def test_the_same_node_object_still_hands_over(cluster, tmp_path):
    _sync(cluster, tmp_path, 0, OLD_VM, "alpha")
    _sync(cluster, tmp_path, 2, OLD_VM, "beta")
    (leak,) = _leaks(cluster)
    assert sorted(leak.tenants) == ["alpha", "beta"]
    assert leak.evidence["node_identity"].startswith("one machine")


def _stored_before_uids(cluster) -> None:
    """The record as a sync before this change left it: no uid."""
    GpuHolders.objects.filter(cluster=cluster).update(node_uid="")


def test_a_record_without_uid_is_of_another_machine_where_the_node_is_newer(cluster, tmp_path):
    _sync(cluster, tmp_path, 0, OLD_VM, "alpha")
    _stored_before_uids(cluster)
    _sync(cluster, tmp_path, 2, ("uid-gpu-1-b", "2026-11-02T11:00:00Z", H100), "beta")
    assert not SyncHandover.objects.exists() and _leaks(cluster) == []


def test_a_record_without_uid_on_an_older_node_is_judged_as_before_and_says_so(cluster, tmp_path):
    _sync(cluster, tmp_path, 0, OLD_VM, "alpha")
    _stored_before_uids(cluster)
    _sync(cluster, tmp_path, 2, OLD_VM, "beta")
    (leak,) = _leaks(cluster)
    assert sorted(leak.tenants) == ["alpha", "beta"]
    assert leak.evidence["node_identity"].startswith("not compared")


def _watch(cluster, tmp_path, then: tuple[str, str, str]) -> None:
    """A full list of alpha on the old VM, then a watch that sees beta on `then`."""
    from inventory.sources.kube import KubeSettings, KubeSource
    from tests.kubeapi import FakeKubeAPI

    with FakeKubeAPI([*NAMESPACES, _node(*OLD_VM), _pod("alpha")]) as api:
        source = KubeSource(
            kubeconfig=str(api.kubeconfig(tmp_path)),
            context="fake",
            settings=KubeSettings(page_size=50, read_timeout=5.0, watch_seconds=1),
        )
        with time_machine.travel(T0, tick=False):
            assert cluster_sync(cluster=cluster, source=source).mode == "full"
        cluster.refresh_from_db()
        api.replace_objects([*NAMESPACES, _node(*then), _pod("beta")])
        with time_machine.travel(T0 + timedelta(hours=2), tick=False):
            assert cluster_sync(cluster=cluster, source=source).mode == "watch"


def test_a_watch_sees_the_replaced_node_as_another_machine(cluster, tmp_path, settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 24  # the next sync watches
    _watch(cluster, tmp_path, ("uid-gpu-1-b", "2026-11-02T11:00:00Z", H100))
    assert not SyncHandover.objects.exists() and _leaks(cluster) == []
    assert GpuHolders.objects.get(cluster=cluster).node_uid == "uid-gpu-1-b"


def test_a_watch_on_the_same_node_object_records_the_handover(cluster, tmp_path, settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 24
    _watch(cluster, tmp_path, OLD_VM)
    (h,) = SyncHandover.objects.filter(cluster=cluster)
    assert (h.previous_holder, h.next_holder, h.node_identity) == ("alpha", "beta", "same_uid")


def test_a_holder_seen_on_the_node_after_it_was_created_keeps_the_record():
    """A record without uid whose holders were still seen after the Node's creation was (at
    least partly) on this machine: the name is not taken for a new one."""
    from inventory.holdings import Held, NodeIdentity, same_machine

    hour = timedelta(hours=1)
    held = Held({"alpha": 1}, 2, T0, T0, False, {"alpha": T0 + 2 * hour})
    assert same_machine(held, NodeIdentity("uid-b", T0 + hour)) is None
    assert same_machine(held, NodeIdentity("uid-b", T0 + 3 * hour)) is False
    assert (
        same_machine(Held({"alpha": 1}, 1, T0, T0, node_uid="uid-a"), NodeIdentity("uid-a")) is True
    )
