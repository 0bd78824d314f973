"""LEAK-001 from sync history on every path that hands a tenant devices of its own (DESIGN §2
"every one of them feeds the ... leak ... checks"): a DRA claim's device, a MIG GPU instance,
every GPU through an honoured NVIDIA_VISIBLE_DEVICES=all. alpha alone at one sync, beta alone
at the next, no reset recorded: a finding; the same tenant again, or a reset that clears the
device between the syncs: none. Through the sync (snapshot files and a watch) and the read
model, with no telemetry."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine

import posture.rules  # noqa: F401  (registers the checks)
from inventory.holding_models import SyncHandover
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from posture.read_model import posture_inputs
from telemetry.models import ResetAttestation
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.posture.builders import run
from tests.posture.dra_world import claim, device_class, dra_pod, resource_slice
from tests.posture.gpu_access_world import OPERATOR_NS, UUIDS, container, namespace, node, pod

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
TENANTS = {
    "tenants": [
        {"slug": slug, "name": slug, "trust_class": "external", "namespaces": [slug]}
        for slug in ("alpha", "beta")
    ]
}
BASE = [namespace("alpha"), namespace("beta"), namespace(OPERATOR_NS)]


@pytest.fixture
def cluster(db):
    tenants_apply(specs=parse_tenants_document(TENANTS))
    return cluster_get_or_create(name="paths")


def _sync(cluster, tmp_path, hour: int, *objects: dict[str, Any]) -> None:
    path = tmp_path / f"snap-{hour}.json"
    path.write_text(json.dumps({"kind": "List", "items": [*BASE, *objects]}))
    with time_machine.travel(T0 + timedelta(hours=hour), tick=False):
        cluster_sync_from_snapshot(cluster=cluster, paths=[str(path)])


def _leaks(cluster, hour: int = 5) -> list:
    with time_machine.travel(T0 + timedelta(hours=hour), tick=False):
        return list(run("LEAK-001", posture_inputs(cluster)))


def _reset(cluster, gpu_uuid: str = "", minutes: int = 90) -> None:
    ResetAttestation.objects.create(
        cluster=cluster,
        node="gpu-a",
        gpu_uuid=gpu_uuid,
        reset_at=T0 + timedelta(minutes=minutes),
        method="gpu_reset" if gpu_uuid else "reboot",
        recorded_by="plat",
    )


# --- DRA -----------------------------------------------------------------------------------------


def _dra(ns: str, device: str = "gpu-0") -> list[dict[str, Any]]:
    return [
        node("gpu-a", gpus=4),
        device_class(),
        resource_slice("gpu-a"),
        claim(ns, f"{ns}-gpu", [device], reserved_for=[f"{ns}-train"]),
        dra_pod(ns, f"{ns}-train", f"{ns}-gpu"),
    ]


def test_a_dra_gpu_allocated_to_alpha_then_to_beta_is_a_handover_of_that_gpu(cluster, tmp_path):
    _sync(cluster, tmp_path, 0, *_dra("alpha"))
    _sync(cluster, tmp_path, 2, *_dra("beta"))
    (leak,) = _leaks(cluster)
    assert sorted(leak.tenants) == ["alpha", "beta"]
    e = leak.evidence
    assert (e["source"], e["gpu_uuid"], e["dra_device"]) == ("sync_history", UUIDS[0], UUIDS[0])
    assert leak.title == f"GPU {UUIDS[0]} on gpu-a went from alpha to beta without a recorded reset"
    assert e["looked_for"].startswith(f"a reset attestation of GPU {UUIDS[0]} or of this node")
    assert "time-sliced, MPS-shared and fractional GPUs are left out" in e["counted"]
    # Another GPU's reset between the two syncs is not this one's.
    _reset(cluster, UUIDS[1])
    assert len(_leaks(cluster)) == 1
    _reset(cluster, UUIDS[0])
    assert _leaks(cluster) == []


def test_alpha_again_or_beta_on_another_gpu_is_no_handover(cluster, tmp_path):
    _sync(cluster, tmp_path, 0, *_dra("alpha"))
    _sync(cluster, tmp_path, 1, *_dra("alpha"))
    _sync(cluster, tmp_path, 2, *_dra("beta", "gpu-1"))
    assert not SyncHandover.objects.exists() and _leaks(cluster) == []


def _watch(cluster, tmp_path, first: list[dict], then: list[dict]) -> SyncHandover:
    """A full list of `first`, then a watch that sees `then`: the one handover recorded."""
    from inventory.services import cluster_sync
    from inventory.sources.kube import KubeSettings, KubeSource
    from tests.kubeapi import FakeKubeAPI

    with FakeKubeAPI([*BASE, *first]) as api:
        source = KubeSource(
            kubeconfig=str(api.kubeconfig(tmp_path)),
            context="fake",
            settings=KubeSettings(page_size=50, read_timeout=5.0, watch_seconds=1),
        )
        with time_machine.travel(T0, tick=False):
            assert cluster_sync(cluster=cluster, source=source).mode == "full"
        cluster.refresh_from_db()
        api.replace_objects([*BASE, *then])
        with time_machine.travel(T0 + timedelta(hours=1), tick=False):
            assert cluster_sync(cluster=cluster, source=source).mode == "watch"
    (h,) = SyncHandover.objects.filter(cluster=cluster)
    return h


def test_a_watch_resync_records_the_dra_handover(cluster, tmp_path, settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 24  # the next sync watches
    h = _watch(cluster, tmp_path, _dra("alpha"), _dra("beta"))
    assert (h.previous_holder, h.next_holder, h.devices, h.gpu_uuid) == (
        "alpha",
        "beta",
        UUIDS[0],
        UUIDS[0],
    )


# --- MIG -----------------------------------------------------------------------------------------

MIG_7G = "nvidia.com/mig-7g.80gb"


def _mig(ns: str) -> list[dict[str, Any]]:
    labels = {
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig.config": "all-7g.80gb",
        "nvidia.com/mig.config.state": "success",
    }
    capacity = {"nvidia.com/gpu": "0", MIG_7G: "1"}
    gpu_node = node("gpu-a", gpus=1, capacity=capacity, labels=labels)
    return [gpu_node, pod(ns, f"{ns}-train", container(gpu={MIG_7G: "1"}))]


def test_a_full_gpu_mig_instance_from_alpha_to_beta_is_a_handover(cluster, tmp_path):
    _sync(cluster, tmp_path, 0, *_mig("alpha"))
    _sync(cluster, tmp_path, 2, *_mig("beta"))
    (leak,) = _leaks(cluster)
    e = leak.evidence
    assert (e["mig_resource"], e["gpu_count"], e["gpus_passed_at_least"]) == (MIG_7G, 1, 1)
    assert leak.title.startswith("A MIG GPU instance (mig-7g.80gb) on gpu-a went from alpha")
    assert "1 or more of its GPUs (a GPU reset needs every MIG instance" in e["looked_for"]
    _reset(cluster, "GPU-the-parent")
    assert _leaks(cluster) == []


# --- NVIDIA_VISIBLE_DEVICES=all ------------------------------------------------------------------


def _toolkit(accept: str) -> dict[str, Any]:
    env = [{"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED", "value": accept}]
    image = "nvcr.io/nvidia/k8s/container-toolkit:v1.17.5-ubuntu20.04"
    ctr = container("nvidia-container-toolkit-ctr", image, env=env)
    return pod(OPERATOR_NS, "nvidia-container-toolkit-daemonset-gpu-a", ctr)


def _env(ns: str) -> dict[str, Any]:
    probe = container("probe", "nvidia/cuda:12.4.1-base-ubuntu22.04")
    probe["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    return pod(ns, f"{ns}-probe", probe)


def _whole(ns: str, gpus: int = 1) -> dict[str, Any]:
    return pod(ns, f"{ns}-train", container(gpu={"nvidia.com/gpu": str(gpus)}))


GPUS = node("gpu-a", gpus=2, capacity={"nvidia.com/gpu": "2"})


def test_a_pod_holding_every_gpu_through_the_variable_then_beta_is_a_handover(cluster, tmp_path):
    _sync(cluster, tmp_path, 0, GPUS, _toolkit("true"), _env("alpha"))
    # alpha held both GPUs: beta's one is surely one of them.
    _sync(cluster, tmp_path, 2, GPUS, _toolkit("true"), _whole("beta"))
    (leak,) = _leaks(cluster)
    e = leak.evidence
    assert (e["previous_tenant"], e["previous_gpus"], e["gpu_count"]) == ("alpha", 2, 2)
    # And the other way: beta's GPU, then alpha reaching every GPU of the node.
    _sync(cluster, tmp_path, 3, GPUS, _toolkit("true"), _env("alpha"))
    assert {
        (d.evidence["previous_tenant"], d.evidence["next_tenant"]) for d in _leaks(cluster)
    } == {
        ("alpha", "beta"),
        ("beta", "alpha"),
    }


def test_the_variable_on_a_node_that_ignores_it_holds_nothing(cluster, tmp_path):
    _sync(cluster, tmp_path, 0, GPUS, _toolkit("false"), _env("alpha"))
    _sync(cluster, tmp_path, 2, GPUS, _toolkit("false"), _whole("beta"))
    assert _leaks(cluster) == []


def test_a_watch_resync_reads_the_variable_as_a_full_sync_does(cluster, tmp_path, settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 24  # the next sync watches
    stack = [GPUS, _toolkit("true")]
    h = _watch(cluster, tmp_path, [*stack, _env("alpha")], [*stack, _whole("beta")])
    assert (h.previous_holder, h.previous_gpus, h.next_holder, h.devices) == (
        "alpha",
        2,
        "beta",
        "",
    )
