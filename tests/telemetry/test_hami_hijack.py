"""ATTR-001 on a HAMi node: `nvidia.com/gpu` there counts vGPU shares, several to a GPU, so a
busy GPU no share is bound to runs outside the scheduler however many shares the pods hold."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from django.utils import timezone

from inventory import snapshot as snap
from inventory.models import Node, Pod
from inventory.sources.normalise import normalise
from posture.models import Finding
from posture.services import posture_evaluate
from telemetry.samples import GpuSample
from telemetry.services import samples_ingest
from tests.posture.gpu_access_world import hami_pod

pytestmark = pytest.mark.django_db
GPUS = [f"GPU-861e4ded-a29c-7edc-f6e0-c76587dc598{i}" for i in range(4)]


def _hami_node(cluster, *pods: dict, strategy: str = "none") -> None:
    """gpu-ts-1 with four GPUs, whole (GFD says no sharing) unless `strategy` says GFD labels
    them shared, and only these HAMi pods on it."""
    node = Node.objects.get(name="gpu-ts-1")
    node.sharing_strategy = strategy
    node.gpu_count = 4
    node.data = {
        **node.data,
        "sharing_strategy": strategy,
        "gpu_count": 4,
        **({"time_slicing_replicas": None} if strategy == "none" else {}),
    }
    node.save()
    Pod.objects.filter(node=node).exclude(namespace="gpu-operator").delete()
    for obj in pods:
        obj["spec"]["nodeName"] = "gpu-ts-1"
    for read in normalise(list(pods)).pods:
        Pod.objects.create(
            cluster=cluster,
            namespace=read.namespace,
            name=read.name,
            phase="Running",
            node=node,
            gpu_resources=read.gpu_resources,
            data=snap.to_dict(read),
            changed_at=timezone.now(),
        )


def _busy(*indexes: int) -> list[GpuSample]:
    """25 minutes of the GPUs busy at 99 %, with no pod label (HAMi's exporter names none)."""
    start = timezone.now() - timedelta(minutes=25)
    return [
        GpuSample(
            time=start + timedelta(minutes=m),
            hostname="gpu-ts-1",
            gpu=str(i),
            uuid=GPUS[i],
            model="NVIDIA L40S",
            util=99,
        )
        for i in indexes
        for m in range(0, 26, 5)
    ]


def test_a_busy_gpu_no_hami_share_is_bound_to_is_a_hijack(small_world):
    _hami_node(
        small_world,
        hami_pod("team-alpha", "infer-a", GPUS[0], **{"nvidia.com/gpumem": "20000"}),
        hami_pod("team-alpha", "infer-b", GPUS[0]),
        hami_pod("beta-prod", "caller-a", GPUS[1]),
        hami_pod("beta-prod", "caller-b", GPUS[1]),
    )
    samples_ingest(cluster=small_world, samples=_busy(0, 1, 3))
    posture_evaluate()
    # Four shares are not four GPUs held: GPU 3 has no share, GPUs 0 and 1 are the shares'.
    (finding,) = Finding.objects.filter(check_id="ATTR-001", status="open")
    assert finding.severity == "critical"
    assert finding.evidence["gpu_uuid"] == GPUS[3]
    held_by = finding.evidence["held_by"]
    assert f"bound to {GPUS[0]}, {GPUS[1]}" in held_by and "none to this GPU" in held_by
    assert "more GPUs were busy" not in held_by
    assert finding.title.endswith("min with no scheduled workload")


@pytest.mark.parametrize("strategy", ["time_slicing", "mps"])
def test_on_a_node_gfd_labels_shared_hami_shares_are_still_judged_by_device(small_world, strategy):
    # GFD may label a HAMi node time-slicing or MPS: four shares on GPUs 0 and 1 are still
    # not four GPUs the pods can occupy, so GPU 3 busy is none of theirs.
    _hami_node(
        small_world,
        hami_pod("team-alpha", "infer-a", GPUS[0]),
        hami_pod("team-alpha", "infer-b", GPUS[0]),
        hami_pod("beta-prod", "caller-a", GPUS[1]),
        hami_pod("beta-prod", "caller-b", GPUS[1]),
        strategy=strategy,
    )
    samples_ingest(cluster=small_world, samples=_busy(0, 1, 3))
    posture_evaluate()
    (finding,) = Finding.objects.filter(check_id="ATTR-001", status="open")
    assert finding.evidence["gpu_uuid"] == GPUS[3]
    held_by = finding.evidence["held_by"]
    assert f"bound to {GPUS[0]}, {GPUS[1]}" in held_by and "none to this GPU" in held_by
    assert "more GPUs were busy" not in held_by
    assert finding.title.endswith("min with no scheduled workload")


def test_on_a_shared_hami_node_the_busy_gpus_shares_are_bound_to_are_theirs(small_world):
    _hami_node(
        small_world,
        hami_pod("team-alpha", "infer-a", GPUS[0]),
        hami_pod("beta-prod", "caller-a", GPUS[1]),
        strategy="time_slicing",
    )
    samples_ingest(cluster=small_world, samples=_busy(0, 1))
    posture_evaluate()
    assert not Finding.objects.filter(check_id="ATTR-001", status="open").exists()


def test_hami_shares_whose_devices_are_not_named_count_one_gpu_each(small_world):
    _hami_node(
        small_world,
        hami_pod("team-alpha", "infer-a", None, **{"nvidia.com/gpumem": "20000"}),
        hami_pod("beta-prod", "caller-a", None, **{"nvidia.com/gpumem": "8000"}),
    )
    samples_ingest(cluster=small_world, samples=_busy(0, 1))
    posture_evaluate()
    assert not Finding.objects.filter(check_id="ATTR-001", status="open").exists()
    samples_ingest(cluster=small_world, samples=_busy(2))
    posture_evaluate()
    # Three busy, two shares: which one is not theirs is unknown, so none is explained.
    # Which of the three is unheld is unknown: one finding of the node, exposure the one
    # beyond, the three its candidates; no title claims a GPU has no workload.
    (finding,) = Finding.objects.filter(check_id="ATTR-001", status="open")
    assert (finding.key, finding.exposure) == ("by-count", 1)
    assert set(finding.evidence["candidate_gpus"]) == set(GPUS[:3])
    held_by = finding.evidence["held_by"]
    assert "than the 2 its scheduled pods hold" in held_by
    assert "2 HAMi share(s) whose devices no annotation names are counted as one GPU" in held_by
    assert "no scheduled workload" not in finding.title


def _named(index: int, ns: str, pod: str) -> list[GpuSample]:
    """_busy for one GPU, with the exporter naming the pod that holds it."""
    return [replace(s, namespace=ns, pod=pod) for s in _busy(index)]


# "none": as a sync before HAMi nodes read time_slicing left it; "time_slicing": as now.
@pytest.mark.parametrize("strategy", ["none", "time_slicing"])
def test_an_unannotated_hami_share_on_a_node_whose_exporter_names_pods_is_judged_by_count(
    small_world, strategy
):
    # The exporter names the annotated share's pod on GPU 0; the unannotated share's GPU is
    # unknown, so a busy GPU it may hold is its (by count), never a critical hijack.
    _hami_node(
        small_world,
        hami_pod("team-alpha", "infer-a", GPUS[0]),
        hami_pod("beta-prod", "caller-a", None, **{"nvidia.com/gpumem": "8000"}),
        strategy=strategy,
    )
    samples_ingest(cluster=small_world, samples=_named(0, "team-alpha", "infer-a") + _busy(2))
    posture_evaluate()
    assert not Finding.objects.filter(check_id="ATTR-001", status="open").exists()
    # Two GPUs busy beyond what one unannotated share can cover: judged by count.
    samples_ingest(cluster=small_world, samples=_busy(3))
    posture_evaluate()
    (finding,) = Finding.objects.filter(check_id="ATTR-001", status="open")
    assert set(finding.evidence["candidate_gpus"]) == {GPUS[2], GPUS[3]}
    assert (finding.evidence["busy_gpus"], finding.evidence["excess"]) == (2, 1)
    assert "1 HAMi share(s) whose devices no annotation names" in finding.evidence["held_by"]
    assert "no scheduled workload" not in finding.title


def test_a_busy_gpu_on_a_node_whose_exporter_names_pods_and_no_hami_pod_runs_still_fires(
    small_world,
):
    _hami_node(small_world, hami_pod("team-alpha", "infer-a", GPUS[0]))
    samples_ingest(cluster=small_world, samples=_named(0, "team-alpha", "infer-a") + _busy(2))
    posture_evaluate()
    (finding,) = Finding.objects.filter(check_id="ATTR-001", status="open")
    assert finding.evidence["gpu_uuid"] == GPUS[2]
    assert finding.title.endswith("min with no scheduled workload")
