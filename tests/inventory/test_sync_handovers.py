"""LEAK-001 from sync history: with no telemetry, a GPU node whose whole GPUs pass from one
tenant's pods to another's between two syncs is a handover when the counts make it certain
(k + m > the node's GPUs), bounded by the two syncs, unless a reset is attested between them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

import posture.rules  # noqa: F401  (registers the checks)
from inventory.holding_models import GpuHolders, SyncHandover
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from posture.read_model import posture_inputs
from telemetry.models import ResetAttestation
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.conftest import load_json
from tests.posture.builders import run

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


def _node(name: str, gpus: int) -> dict:
    labels = {"nvidia.com/gpu.count": str(gpus), "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
    capacity = {"cpu": "96", "nvidia.com/gpu": str(gpus)}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def _pod(namespace: str, name: str, node: str, gpus: int, phase: str = "Running") -> dict:
    limits = {"nvidia.com/gpu": str(gpus)}
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "main", "image": "r.example/x:1", "resources": {"limits": limits}}
            ],
        },
        "status": {"phase": phase},
    }


NAMESPACES = [
    {"kind": "Namespace", "metadata": {"name": "team-alpha"}},
    {
        "kind": "Namespace",
        "metadata": {"name": "beta-prod", "labels": {"gpuposture.io/tenant": "beta"}},
    },
]


@pytest.fixture
def cluster(db):
    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    return cluster_get_or_create(name="hist")


def _sync(cluster, tmp_path, when: datetime, *objects: dict, nodes=None):
    path = tmp_path / f"snap-{when.timestamp():.0f}.json"
    items = [*NAMESPACES, *(nodes or [_node("gpu-1", 1)]), *objects]
    path.write_text(json.dumps({"kind": "List", "items": items}))
    with time_machine.travel(when, tick=False):
        return cluster_sync_from_snapshot(cluster=cluster, paths=[str(path)])


def _leaks(cluster, when: datetime):
    with time_machine.travel(when, tick=False):
        inputs = posture_inputs(cluster)
    return list(run("LEAK-001", inputs))


def test_alpha_then_beta_on_a_one_gpu_node_is_a_handover_from_sync_history(cluster, tmp_path):
    _sync(cluster, tmp_path, T0, _pod("team-alpha", "train", "gpu-1", 1))
    _sync(cluster, tmp_path, T0 + timedelta(hours=1), _pod("team-alpha", "train", "gpu-1", 1))
    # alpha's pod is gone; the GPU stood idle one sync, then beta's pod holds it.
    _sync(cluster, tmp_path, T0 + timedelta(hours=2))
    _sync(cluster, tmp_path, T0 + timedelta(hours=3), _pod("beta-prod", "serve", "gpu-1", 1))
    (h,) = SyncHandover.objects.filter(cluster=cluster)
    assert (h.previous_holder, h.next_holder) == ("alpha", "beta")
    assert (h.previous_end, h.next_start) == (T0 + timedelta(hours=1), T0 + timedelta(hours=3))
    # A re-sync with nothing changed records nothing new, and moves only the set's last sight.
    _sync(cluster, tmp_path, T0 + timedelta(hours=4), _pod("beta-prod", "serve", "gpu-1", 1))
    assert SyncHandover.objects.filter(cluster=cluster).count() == 1
    row = GpuHolders.objects.get(cluster=cluster, node_name="gpu-1")
    assert row.holders == {"beta-prod": 1} and row.first_seen == T0 + timedelta(hours=3)
    assert row.last_seen == T0 + timedelta(hours=4)
    (leak,) = _leaks(cluster, T0 + timedelta(hours=5))
    assert sorted(leak.tenants) == ["alpha", "beta"]
    e = leak.evidence
    assert e["source"] == "sync_history" and e["granularity"] == "sync"
    assert (e["previous_tenant"], e["next_tenant"], e["gpu_count"]) == ("alpha", "beta", 1)
    assert e["previous_end"] == (T0 + timedelta(hours=1)).isoformat()
    # A reset of the node recorded between the two syncs closes it.
    ResetAttestation.objects.create(
        cluster=cluster,
        node="gpu-1",
        reset_at=T0 + timedelta(hours=2),
        method="reboot",
        recorded_by="plat",
    )
    assert _leaks(cluster, T0 + timedelta(hours=5)) == []


def test_one_tenant_reusing_its_gpu_or_counts_that_leave_room_record_nothing(cluster, tmp_path):
    two = [_node("gpu-2", 2)]
    _sync(cluster, tmp_path, T0, _pod("team-alpha", "a", "gpu-2", 1), nodes=two)
    # beta takes one GPU of two while alpha's pod went: 1 + 1 = 2 leaves room, not certain.
    _sync(cluster, tmp_path, T0 + timedelta(hours=1), _pod("beta-prod", "b", "gpu-2", 1), nodes=two)
    assert not SyncHandover.objects.exists()
    # alpha again on the whole node later: 1 (beta) + 2 > 2, certain; alpha after alpha is not.
    both = _pod("team-alpha", "a2", "gpu-2", 2)
    _sync(cluster, tmp_path, T0 + timedelta(hours=2), both, nodes=two)
    _sync(
        cluster, tmp_path, T0 + timedelta(hours=3), _pod("team-alpha", "a3", "gpu-2", 2), nodes=two
    )
    assert list(SyncHandover.objects.values_list("previous_holder", "next_holder")) == [
        ("beta", "alpha")
    ]
    assert len(_leaks(cluster, T0 + timedelta(hours=4))) == 1


def test_a_watch_resync_records_the_handover_and_nothing_when_nothing_changed(cluster, tmp_path):
    from inventory.services import cluster_sync
    from inventory.sources.kube import KubeSettings, KubeSource
    from tests.kubeapi import FakeKubeAPI

    def world(*pods: dict) -> list[dict]:
        return [*NAMESPACES, _node("gpu-1", 1), *pods]

    with FakeKubeAPI(world(_pod("team-alpha", "train", "gpu-1", 1))) as api:
        source = KubeSource(
            kubeconfig=str(api.kubeconfig(tmp_path)),
            context="fake",
            settings=KubeSettings(page_size=3, read_timeout=5.0, watch_seconds=1),
        )
        with time_machine.travel(T0, tick=False):
            assert cluster_sync(cluster=cluster, source=source).mode == "full"
        cluster.refresh_from_db()
        api.replace_objects(world(_pod("beta-prod", "serve", "gpu-1", 1)))
        with time_machine.travel(T0 + timedelta(hours=1), tick=False):
            assert cluster_sync(cluster=cluster, source=source).mode == "watch"
        (h,) = SyncHandover.objects.filter(cluster=cluster)
        assert (h.previous_holder, h.next_holder, h.previous_end) == ("alpha", "beta", T0)
        with time_machine.travel(T0 + timedelta(hours=2), tick=False):
            again = cluster_sync(cluster=cluster, source=source)
        assert again.mode == "watch" and SyncHandover.objects.count() == 1
        row = GpuHolders.objects.get(cluster=cluster)
        assert (row.holders, row.last_seen) == ({"beta-prod": 1}, T0 + timedelta(hours=2))


def test_a_namespace_changing_hands_is_not_its_pods_changing(cluster, tmp_path):
    """The same pod on a 1-GPU node, its namespace relabelled from beta to alpha between two
    syncs: holders are namespaces, so no GPU passed."""
    serve = _pod("beta-prod", "serve", "gpu-1", 1)
    _sync(cluster, tmp_path, T0, serve)
    relabelled = {
        "kind": "Namespace",
        "metadata": {"name": "beta-prod", "labels": {"gpuposture.io/tenant": "alpha"}},
    }
    path = tmp_path / "relabelled.json"
    items = [NAMESPACES[0], relabelled, _node("gpu-1", 1), serve]
    path.write_text(json.dumps({"kind": "List", "items": items}))
    with time_machine.travel(T0 + timedelta(hours=1), tick=False):
        cluster_sync_from_snapshot(cluster=cluster, paths=[str(path)])
    assert not SyncHandover.objects.exists()
    # alpha's own second namespace taking the GPU next is alpha's reuse: nothing either.
    items = [NAMESPACES[0], relabelled, _node("gpu-1", 1), _pod("team-alpha", "t", "gpu-1", 1)]
    path.write_text(json.dumps({"kind": "List", "items": items}))
    with time_machine.travel(T0 + timedelta(hours=2), tick=False):
        cluster_sync_from_snapshot(cluster=cluster, paths=[str(path)])
    assert not SyncHandover.objects.exists()


PASSTHROUGH = "nvidia.com/GA100_A100_PCIE_40GB"


def _vm_node(name: str, gpus: int) -> dict:
    """A KubeVirt vm-passthrough node: no GFD there (no count label), the sandbox device plugin
    advertises each GPU bound to vfio-pci under its PCI device name."""
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.workload.config": "vm-passthrough"}
    capacity = {"cpu": "96", PASSTHROUGH: str(gpus)}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def _launcher(namespace: str, name: str, node: str, gpus: int) -> dict:
    found = _pod(namespace, f"virt-launcher-{name}", node, gpus)
    found["spec"]["containers"][0]["resources"]["limits"] = {PASSTHROUGH: str(gpus)}
    return found


def test_passthrough_gpus_of_one_tenants_vm_then_anothers_are_a_handover(cluster, tmp_path):
    vm = [_vm_node("gpu-pt", 4)]
    _sync(cluster, tmp_path, T0, _launcher("team-alpha", "a", "gpu-pt", 2), nodes=vm)
    # alpha's VM is gone; beta's VM holds 3 of the 4 GPUs: 2 + 3 > 4, one surely was alpha's.
    later = T0 + timedelta(hours=1)
    _sync(cluster, tmp_path, later, _launcher("beta-prod", "b", "gpu-pt", 3), nodes=vm)
    (h,) = SyncHandover.objects.filter(cluster=cluster)
    assert (h.previous_holder, h.next_holder, h.gpu_count) == ("alpha", "beta", 4)
    (leak,) = _leaks(cluster, T0 + timedelta(hours=2))
    assert sorted(leak.tenants) == ["alpha", "beta"]
    assert leak.evidence["source"] == "sync_history"


def test_a_handover_seen_by_sync_history_alone_fails_checklist_item_9(cluster, tmp_path, personas):
    """No telemetry, but sync history shows alpha's GPU went to beta with no reset: the open
    LEAK-001 fails item 9 (it said unknown, "no GPU telemetry", with the finding open)."""
    from django.test import Client

    from posture.services import posture_evaluate
    from tests.conftest import api_client

    _sync(cluster, tmp_path, T0, _pod("team-alpha", "train", "gpu-1", 1))
    _sync(cluster, tmp_path, T0 + timedelta(hours=1), _pod("beta-prod", "serve", "gpu-1", 1))
    with time_machine.travel(T0 + timedelta(hours=2), tick=False):
        posture_evaluate()
    url = "/api/v1/clusters/hist/checklist/"
    item9 = api_client(personas["security_lead"]).get(url).json()[8]
    assert (item9["number"], item9["status"]) == (9, "fail")
    assert item9["evidence"]["open_findings"] == {"LEAK-001": 1}
    client = Client()
    client.force_login(personas["security_lead"])
    page = client.get("/clusters/hist/").content.decode()
    row = page[page.index("GPU resets recorded between exclusive tenants") :]
    assert row.index("check-fail") < row.index("</tr>")
    assert '<th scope="row">LEAK-001</th><td>1</td>' in row[: row.index("</tr>")]
    # The reset recorded, the finding resolves: with no telemetry and no LEAK-001 open, sync
    # history alone cannot pass the item (a handover between two syncs is never seen).
    ResetAttestation.objects.create(
        cluster=cluster,
        node="gpu-1",
        reset_at=T0 + timedelta(minutes=30),
        method="reboot",
        recorded_by="plat",
    )
    with time_machine.travel(T0 + timedelta(hours=3), tick=False):
        posture_evaluate()
    item9 = api_client(personas["security_lead"]).get(url).json()[8]
    assert item9["status"] == "unknown" and "no GPU telemetry" in item9["evidence"]["reason"]


# An 8-GPU node shared out whole by three tenants; beta and gamma each have two namespaces.
THREE = {
    "tenants": [
        {"slug": slug, "name": slug, "trust_class": "internal", "namespaces": namespaces}
        for slug, namespaces in (
            ("alpha", ["team-alpha"]),
            ("beta", ["beta-prod", "beta-dev"]),
            ("gamma", ["gamma-train", "gamma-serve"]),
        )
    ]
}
EIGHT = [_node("gpu-8", 8)]


@pytest.fixture
def three(db):
    tenants_apply(specs=parse_tenants_document(THREE))
    return cluster_get_or_create(name="eight")


def _sync8(cluster, tmp_path, hour: int, **held: int):
    pods = [_pod(ns, f"p-{ns}", "gpu-8", n) for ns, n in held.items()]
    return _sync(cluster, tmp_path, T0 + timedelta(hours=hour), *pods, nodes=EIGHT)


def _pairs(cluster, hour: int) -> dict[tuple[str, ...], dict]:
    found = _leaks(cluster, T0 + timedelta(hours=hour))
    return {tuple(sorted(d.tenants)): d.evidence for d in found}


def _reset(cluster, minutes: int, gpu_uuid: str = "") -> None:
    ResetAttestation.objects.create(
        cluster=cluster,
        node="gpu-8",
        gpu_uuid=gpu_uuid,
        reset_at=T0 + timedelta(minutes=minutes),
        method="gpu_reset" if gpu_uuid else "reboot",
        recorded_by="plat",
    )


def test_alpha_and_beta_then_gamma_holding_all_eight_are_two_handovers(three, tmp_path):
    """alpha 4 + beta 4, then gamma 8 in two namespaces (4 + 4): gamma surely received all of
    alpha's GPUs and all of beta's: two findings, each with both of its tenants."""
    _sync8(three, tmp_path, 0, **{"team-alpha": 4, "beta-prod": 4})
    _sync8(three, tmp_path, 1, **{"gamma-train": 4, "gamma-serve": 4})
    found = _pairs(three, 2)
    assert set(found) == {("alpha", "gamma"), ("beta", "gamma")}
    e = found[("beta", "gamma")]
    assert (e["previous_gpus"], e["next_gpus"], e["gpus_passed_at_least"]) == (4, 8, 4)
    # One GPU's reset between the syncs cannot be the four that passed from each.
    _reset(three, 30, "GPU-1")
    assert set(_pairs(three, 2)) == {("alpha", "gamma"), ("beta", "gamma")}
    # Four GPUs reset may be alpha's four, or beta's: neither handover is certain unreset now.
    for uuid in ("GPU-2", "GPU-3", "GPU-4"):
        _reset(three, 30, uuid)
    assert _pairs(three, 2) == {}


def test_a_reset_of_the_node_between_the_syncs_closes_every_handover(three, tmp_path):
    _sync8(three, tmp_path, 0, **{"team-alpha": 4, "beta-prod": 4})
    _sync8(three, tmp_path, 1, **{"gamma-train": 8})
    assert len(_pairs(three, 2)) == 2
    _reset(three, 30)
    assert _pairs(three, 2) == {}


def test_a_previous_holder_split_over_namespaces_counts_whole(three, tmp_path):
    """beta's 4 in two namespaces (2 + 2) and gamma's 6: 4 + 6 > 8, beta's is certain too."""
    _sync8(three, tmp_path, 0, **{"team-alpha": 4, "beta-prod": 2, "beta-dev": 2})
    _sync8(three, tmp_path, 1, **{"gamma-train": 6})
    assert set(_pairs(three, 2)) == {("alpha", "gamma"), ("beta", "gamma")}


def test_handovers_the_counts_leave_only_possible_are_never_reported(three, tmp_path):
    """alpha 4 + beta 2 (2 idle), then gamma 4: gamma may hold alpha's, or beta's and the idle
    ones; some GPU passed from alpha or beta, but no pair of tenants is certain."""
    _sync8(three, tmp_path, 0, **{"team-alpha": 4, "beta-prod": 2})
    _sync8(three, tmp_path, 1, **{"gamma-train": 4})
    assert not SyncHandover.objects.filter(cluster=three).exists()
    assert _pairs(three, 2) == {}


def test_a_reset_before_a_holder_was_last_seen_does_not_attest_its_handover(three, tmp_path):
    """beta leaves, alpha still holds its 4 at the next sync, a node reset falls between the
    two; then gamma holds 8. The reset came after beta's use, not after alpha's."""
    _sync8(three, tmp_path, 0, **{"team-alpha": 4, "beta-prod": 4})
    _sync8(three, tmp_path, 1, **{"team-alpha": 4})
    _reset(three, 30)
    _sync8(three, tmp_path, 2, **{"gamma-serve": 8})
    found = _pairs(three, 3)
    assert set(found) == {("alpha", "gamma")}
    assert found[("alpha", "gamma")]["previous_end"] == (T0 + timedelta(hours=1)).isoformat()
