"""ATTR-001 reads a sample's pod label as of the sample's time: the exporter names a pod only
where the kubelet gave it the device then, while the inventory was read at another moment
(telemetry.exporter_labels.PodLabels)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.models import Node, Pod
from posture.services import posture_evaluate
from telemetry.services import samples_ingest
from tests.test_telemetry import UUID, make_exclusive, open_findings, series

pytestmark = pytest.mark.django_db


def only_finished_gpu_pod_left() -> None:
    """gpu-ts-1 whole GPUs, and of its GPU pods only `beta-prod/batch-done` (Succeeded)."""
    make_exclusive()
    Pod.objects.filter(name__in=["trainer-0", "inference-0"]).delete()


def exporter_daemonset_pod() -> None:
    """A pod of the DCGM-Exporter DaemonSet `nvidia-dcgm-exporter` on gpu-ts-1, as synced."""
    pod = Pod.objects.get(name="nvidia-device-plugin-daemonset-x1")
    image = "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04"
    pod.pk, pod.name = None, "nvidia-dcgm-exporter-7hx2q"
    pod.data = {
        **pod.data,
        "name": pod.name,
        "owner_kind": "DaemonSet",
        "owner_name": "nvidia-dcgm-exporter",
        "containers": [{**c, "image": image} for c in pod.data["containers"]],
    }
    pod.save()


def busy_until(minutes_ago: int, **labels) -> list:
    now = timezone.now()
    return series(now - timedelta(minutes=25 + minutes_ago), 25, busy=96, **labels)


def test_a_job_that_completed_since_held_its_gpu_while_it_ran(small_world):
    # The Job ran busy until two minutes before the sync that saw it Succeeded.
    only_finished_gpu_pod_left()
    Pod.objects.filter(name="batch-done").update(changed_at=timezone.now())
    samples = busy_until(2, namespace="beta-prod", pod="batch-done")
    samples_ingest(cluster=small_world, samples=samples)
    posture_evaluate()
    assert not open_findings("ATTR-001")


def test_a_finished_pods_label_after_a_sync_saw_it_finished_holds_nothing(small_world):
    # A kubelet that still lists a terminated pod's devices: the busy GPU is not its.
    only_finished_gpu_pod_left()
    Pod.objects.filter(name="batch-done").update(changed_at=timezone.now() - timedelta(hours=1))
    samples = busy_until(0, namespace="beta-prod", pod="batch-done")
    samples_ingest(cluster=small_world, samples=samples)
    posture_evaluate()
    (finding,) = open_findings("ATTR-001")
    assert finding.subject_name == "gpu-ts-1"


def test_a_pod_started_after_the_last_sync_holds_the_gpu_the_exporter_names(small_world):
    only_finished_gpu_pod_left()
    samples = busy_until(0, namespace="team-alpha", pod="trainer-1")  # unknown to the sync
    samples_ingest(cluster=small_world, samples=samples)
    posture_evaluate()
    assert not open_findings("ATTR-001")


def test_a_scrape_stamping_an_exporter_pod_newer_than_the_sync_explains_nothing(small_world):
    # The exporter restarted since the sync: its new pod, named after its DaemonSet, is
    # stamped by the scrape on a GPU the exporter left bare. Still nobody's GPU.
    only_finished_gpu_pod_left()
    exporter_daemonset_pod()
    samples = busy_until(0, namespace="gpu-operator", pod="nvidia-dcgm-exporter-k2m9d")
    samples_ingest(cluster=small_world, samples=samples)
    posture_evaluate()
    assert open_findings("ATTR-001")


def four_time_sliced_gpus_one_pod() -> None:
    """gpu-ts-1 with four physical GPUs, time-sliced; one pod (trainer-0) holds one replica."""
    node = Node.objects.get(name="gpu-ts-1")
    node.gpu_count = 4
    node.data = {**node.data, "gpu_count": 4}
    node.save()
    Pod.objects.filter(name="inference-0").delete()


@pytest.mark.parametrize("labelled", [True, False])
def test_busy_gpus_beyond_what_a_shared_nodes_pods_can_occupy_are_a_hijack(small_world, labelled):
    # The exporter names the one pod on its GPU, or (unable to map replicas) no pod at all;
    # a second GPU busy too is one no pod can be on.
    four_time_sliced_gpus_one_pod()
    pod = {"namespace": "team-alpha", "pod": "trainer-0"} if labelled else {}
    held = busy_until(0, **pod)
    stray = busy_until(0, gpu="3", uuid="GPU-0000-stray")
    samples_ingest(cluster=small_world, samples=held + stray)
    posture_evaluate()
    # Judged by count: one finding of the node, the GPU beyond its exposure, the busy GPUs
    # no label explains its candidates (unlabelled, which of the two is unknown).
    (finding,) = open_findings("ATTR-001")
    assert (finding.subject_name, finding.key, finding.exposure) == ("gpu-ts-1", "by-count", 1)
    candidates = set(finding.evidence["candidate_gpus"])
    assert candidates == ({"GPU-0000-stray"} if labelled else {UUID, "GPU-0000-stray"})
    assert (finding.evidence["busy_gpus"], finding.evidence["held_gpus"]) == (2, 1)
    assert "time-sliced or MPS-shared" in finding.evidence["held_by"]
    # The title does not claim a GPU has no workload on it.
    assert "no scheduled workload" not in finding.title
    assert finding.title.startswith("2 GPUs busy on gpu-ts-1 while its scheduled pods can occupy 1")


def test_as_many_busy_shared_gpus_as_the_pods_can_occupy_are_theirs(small_world):
    four_time_sliced_gpus_one_pod()
    samples_ingest(cluster=small_world, samples=busy_until(0, gpu="3", uuid="GPU-0000-other"))
    posture_evaluate()
    assert not open_findings("ATTR-001")


def inference_finished() -> None:
    pod = Pod.objects.get(name="inference-0")
    pod.phase = "Succeeded"
    pod.data = {**pod.data, "phase": "Succeeded"}
    pod.save()


@pytest.mark.parametrize(("read_minutes_ago", "hijack"), [(0, False), (60, True)])
def test_an_exporter_naming_no_pod_counts_a_job_that_completed_since(
    small_world, read_minutes_ago, hijack
):
    # Mapping off: two GPUs busy, one pod still running, the other's Job completed after
    # its last busy sample; by count, both busy GPUs were held while the Job ran.
    make_exclusive()
    inference_finished()
    Pod.objects.filter(name="inference-0").update(
        first_seen=timezone.now() - timedelta(hours=2),  # an earlier sync saw it running
        changed_at=timezone.now() - timedelta(minutes=read_minutes_ago),
    )
    two = busy_until(2) + busy_until(2, gpu="1", uuid="GPU-0000-second")
    samples_ingest(cluster=small_world, samples=two)
    posture_evaluate()
    assert bool(open_findings("ATTR-001")) is hijack
