"""LEAK-001 from sync history across the platform's own use of a node's GPUs (DESIGN §2 "GPUs
are reset between exclusive tenants, and the reset is recorded"): a burn-in job of a platform
namespace between two tenants resets nothing, so alpha 8 -> the platform's burn-in 8 -> beta 8
with no reset recorded is alpha's GPUs passed to beta. The platform before the first tenant, or
between one tenant's own holds, is nothing; a reset recorded between alpha and beta clears it.
Through snapshot syncs and a watch, and the read model, with no telemetry."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

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

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
TENANTS = {
    "tenants": [
        {"slug": slug, "name": slug, "trust_class": "external", "namespaces": [slug]}
        for slug in ("alpha", "beta")
    ]
}
NAMESPACES = [
    {"kind": "Namespace", "metadata": {"name": "alpha"}},
    {"kind": "Namespace", "metadata": {"name": "beta"}},
    {
        "kind": "Namespace",
        "metadata": {"name": "burn", "labels": {"gpuposture.io/platform": "true"}},
    },
]
NODE = {
    "kind": "Node",
    "metadata": {
        "name": "gpu-1",
        "labels": {"nvidia.com/gpu.count": "8", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
    },
    "spec": {},
    "status": {
        "capacity": {"cpu": "96", "nvidia.com/gpu": "8"},
        "allocatable": {"cpu": "96", "nvidia.com/gpu": "8"},
    },
}


def _pod(namespace: str, name: str = "train") -> dict:
    """A Running pod of a StatefulSet `name` holding all 8 GPUs of gpu-1."""
    owner = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": name, "controller": True}
    return {
        "kind": "Pod",
        "metadata": {"name": f"{name}-0", "namespace": namespace, "ownerReferences": [owner]},
        "spec": {
            "nodeName": "gpu-1",
            "containers": [
                {
                    "name": "main",
                    "image": "r.example/x:1",
                    "resources": {"limits": {"nvidia.com/gpu": "8"}},
                }
            ],
        },
        "status": {"phase": "Running"},
    }


@pytest.fixture
def cluster(db):
    tenants_apply(specs=parse_tenants_document(TENANTS))
    return cluster_get_or_create(name="burn")


def _sync(cluster, tmp_path, hour: int, *pods: dict) -> None:
    path = tmp_path / f"snap-{hour}.json"
    path.write_text(json.dumps({"kind": "List", "items": [*NAMESPACES, NODE, *pods]}))
    with time_machine.travel(T0 + timedelta(hours=hour), tick=False):
        cluster_sync_from_snapshot(cluster=cluster, paths=[str(path)])


def _leaks(cluster) -> list:
    with time_machine.travel(T0 + timedelta(hours=6), tick=False):
        return list(run("LEAK-001", posture_inputs(cluster)))


def _reset(cluster, minutes: int) -> None:
    ResetAttestation.objects.create(
        cluster=cluster,
        node="gpu-1",
        reset_at=T0 + timedelta(minutes=minutes),
        method="reboot",
        recorded_by="plat",
    )


def test_a_platform_burn_in_between_two_tenants_does_not_launder_the_handover(cluster, tmp_path):
    _sync(cluster, tmp_path, 0, _pod("alpha"))
    _sync(cluster, tmp_path, 2, _pod("burn", "burnin"))
    _sync(cluster, tmp_path, 4, _pod("beta"))
    (leak,) = _leaks(cluster)
    assert sorted(leak.tenants) == ["alpha", "beta"]
    e = leak.evidence
    assert (e["previous_tenant"], e["next_tenant"]) == ("alpha", "beta")
    # Bounded by alpha's last sync and beta's first: the burn-in is inside, not a bound.
    assert e["previous_end"] == T0.isoformat()
    assert e["next_start"] == (T0 + timedelta(hours=4)).isoformat()
    assert e["platform_between"] == ["burn/burnin"]
    assert "held by the platform's burn/burnin in between: not a reset" in e["why"]
    # All 8 of alpha's GPUs passed: the finding weighs 8, as the node's GPUs are counted.
    assert e["gpus_passed_at_least"] == 8 and leak.exposure == 8
    # A reset recorded before alpha was last seen on the node attests nothing.
    _reset(cluster, -30)
    assert len(_leaks(cluster)) == 1
    # One recorded after the burn-in, before beta: alpha's residue is gone.
    _reset(cluster, 3 * 60)
    assert _leaks(cluster) == []


def test_the_platform_before_the_first_tenant_or_between_one_tenants_holds_is_nothing(
    cluster, tmp_path
):
    _sync(cluster, tmp_path, 0, _pod("burn", "burnin"))
    _sync(cluster, tmp_path, 1, _pod("alpha"))
    _sync(cluster, tmp_path, 2, _pod("burn", "burnin"))
    _sync(cluster, tmp_path, 3, _pod("alpha"))
    assert not SyncHandover.objects.exists()
    assert _leaks(cluster) == []


def test_a_watch_resync_carries_alpha_across_the_platforms_burn_in(cluster, tmp_path):
    from inventory.services import cluster_sync
    from inventory.sources.kube import KubeSettings, KubeSource
    from tests.kubeapi import FakeKubeAPI

    with FakeKubeAPI([*NAMESPACES, NODE, _pod("alpha")]) as api:
        source = KubeSource(
            kubeconfig=str(api.kubeconfig(tmp_path)),
            context="fake",
            settings=KubeSettings(page_size=3, read_timeout=5.0, watch_seconds=1),
        )
        with time_machine.travel(T0, tick=False):
            assert cluster_sync(cluster=cluster, source=source).mode == "full"
        for hour, pod in ((2, _pod("burn", "burnin")), (4, _pod("beta"))):
            cluster.refresh_from_db()
            api.replace_objects([*NAMESPACES, NODE, pod])
            with time_machine.travel(T0 + timedelta(hours=hour), tick=False):
                assert cluster_sync(cluster=cluster, source=source).mode == "watch"
    (h,) = SyncHandover.objects.filter(cluster=cluster)
    assert (h.previous_holder, h.next_holder, h.previous_end) == ("alpha", "beta", T0)
    assert h.between == ["burn/burnin"]
    (leak,) = _leaks(cluster)
    assert sorted(leak.tenants) == ["alpha", "beta"]
