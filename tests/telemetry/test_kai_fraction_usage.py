"""A KAI Scheduler fraction's GPU as DCGM-Exporter reports it: the kubelet's holder is KAI's
reservation pod, but the usage is the fraction pods' bound to the GPU it holds."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory import snapshot as snap
from inventory.models import Node, Pod
from inventory.sources.normalise import normalise
from posture.models import Finding
from posture.services import posture_evaluate
from telemetry.models import GpuReading
from telemetry.samples import GpuSample
from telemetry.services import samples_ingest
from tests.posture.gpu_access_world import (
    KAI_RESERVATION_NS,
    container,
    kai_fraction_pod,
    kai_reservation_pod,
    pod,
)

pytestmark = pytest.mark.django_db
UUID = "GPU-00000000-1111-2222-3333-444444444444"
GROUP = "df7c0dd3-9795-443c-85b9-acbf49c8fb6b"
RESERVATION = f"gpu-reservation-gpu-ts-1-{GROUP[-5:]}"


def _store(cluster, objects: list[dict]) -> None:
    """The pods as the last sync stored them, on the small world's GPU node."""
    node = Node.objects.get(name="gpu-ts-1")
    for read in normalise(objects).pods:
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


def _exclusive_node_with(cluster, *fractions: dict) -> None:
    node = Node.objects.get(name="gpu-ts-1")
    node.sharing_strategy = "none"
    node.data = {**node.data, "sharing_strategy": "none", "time_slicing_replicas": None}
    node.save()
    Pod.objects.filter(node=node).exclude(namespace="gpu-operator").delete()
    _store(cluster, [kai_reservation_pod(GROUP, UUID, node_name="gpu-ts-1"), *fractions])


def _samples(minutes: int = 25, **labels: str) -> list[GpuSample]:
    start = timezone.now() - timedelta(minutes=minutes)
    gpu = {"gpu": "0", "uuid": UUID, "namespace": KAI_RESERVATION_NS, "pod": RESERVATION}
    return [
        GpuSample(
            time=start + timedelta(minutes=m),
            hostname="gpu-ts-1",
            model="NVIDIA A100",
            util=96,
            **(gpu | labels),
        )
        for m in range(0, minutes + 1, 5)
    ]


def test_a_kai_gpu_is_the_usage_of_its_fractions_tenants_at_shared_confidence(small_world):
    _exclusive_node_with(
        small_world,
        kai_fraction_pod("team-alpha", "embed-0", GROUP, node_name="gpu-ts-1"),
        kai_fraction_pod("beta-prod", "rank-0", GROUP, fraction="0.25", node_name="gpu-ts-1"),
        kai_fraction_pod("team-alpha", "elsewhere", "other-group", node_name="gpu-ts-1"),
    )
    # A whole GPU beside it, which the exporter names its pod on.
    whole = container(gpu={"nvidia.com/gpu": "1"})
    _store(small_world, [pod("team-alpha", "trainer-0", whole, node_name="gpu-ts-1")])
    other = {"gpu": "1", "uuid": "GPU-0000-whole", "namespace": "team-alpha", "pod": "trainer-0"}
    samples_ingest(cluster=small_world, samples=_samples() + _samples(**other))
    booked = set(
        GpuReading.objects.filter(uuid=UUID).values_list(
            "namespace", "pod", "tenant__slug", "confidence"
        )
    )
    # Not KAI's placeholder, nobody's ("unclassified") at "exact": each fraction on that GPU.
    assert booked == {
        ("team-alpha", "embed-0", "alpha", "shared"),
        ("beta-prod", "rank-0", "beta", "shared"),
    }
    # The GPU is held: its fractions' samples are no hijack.
    posture_evaluate()
    assert not Finding.objects.filter(check_id="ATTR-001", status="open").exists()


def test_a_kai_gpu_with_no_fraction_bound_is_nobodys_known_usage(small_world):
    _exclusive_node_with(small_world)
    samples_ingest(cluster=small_world, samples=_samples(5))
    assert set(GpuReading.objects.values_list("attribution", "confidence", "tenant")) == {
        ("unattributed", "none", None)
    }


def test_a_reservation_pod_the_last_sync_did_not_see_is_not_booked_as_exact(small_world):
    """KAI made a new reservation pod since the sync: its fractions are not known yet."""
    _exclusive_node_with(small_world)
    samples_ingest(cluster=small_world, samples=_samples(5, pod="gpu-reservation-gpu-ts-1-new"))
    assert set(GpuReading.objects.values_list("attribution", "confidence", "tenant")) == {
        ("unattributed", "none", None)
    }
