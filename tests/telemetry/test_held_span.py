"""ATTR-001 by count holds a pod's GPUs from its start to its finish as the kubelet recorded
them, not at every moment of the samples (telemetry.held_span); where no time is recorded, the
pod holds them throughout, as before."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from inventory.models import Pod
from inventory.snapshot import Pod as SnapPod
from inventory.snapshot import from_dict
from inventory.sources.pods import pod_from_object
from posture.services import posture_evaluate
from telemetry.services import samples_ingest
from tests.test_telemetry import make_exclusive, open_findings, series

pytestmark = pytest.mark.django_db


def iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def set_inference(*, phase: str, seen_running: bool, **times: datetime) -> None:
    """inference-0 (one GPU of gpu-ts-1) in `phase`, with the kubelet's recorded times."""
    now = timezone.now()
    pod = Pod.objects.get(name="inference-0")
    pod.phase = phase
    pod.data = {**pod.data, "phase": phase, **{k: iso(v) for k, v in times.items()}}
    pod.save()
    first = now - timedelta(hours=2) if seen_running else now
    Pod.objects.filter(pk=pod.pk).update(first_seen=first, changed_at=now)


def two_busy_gpus(minutes: int) -> None:
    """Both GPUs of gpu-ts-1 busy from `minutes` ago to 2 minutes ago, no pod named."""
    start = timezone.now() - timedelta(minutes=minutes)
    other = {"gpu": "1", "uuid": "GPU-0000-second"}
    samples = series(start, minutes - 2, busy=96) + series(start, minutes - 2, busy=96, **other)
    samples_ingest(cluster=small_world_cluster(), samples=samples)


def small_world_cluster():
    return Pod.objects.get(name="inference-0").cluster


def test_a_job_first_seen_finished_held_its_gpu_between_its_recorded_start_and_finish(
    small_world,
):
    make_exclusive()
    now = timezone.now()
    set_inference(
        phase="Succeeded",
        seen_running=False,
        started_at=now - timedelta(hours=1),
        finished_at=now - timedelta(minutes=1),
    )
    two_busy_gpus(30)
    posture_evaluate()
    assert not open_findings("ATTR-001")


def test_a_job_first_seen_finished_with_no_recorded_times_is_not_counted(small_world):
    # Unchanged: when it ran is unknown, so it explains none of the busy minutes.
    make_exclusive()
    set_inference(phase="Succeeded", seen_running=False)
    two_busy_gpus(30)
    posture_evaluate()
    assert open_findings("ATTR-001")


def test_a_pod_that_started_late_held_nothing_before_its_start(small_world):
    # 30 minutes of two GPUs busy while only trainer-0's one was held.
    make_exclusive()
    set_inference(
        phase="Running", seen_running=True, started_at=timezone.now() - timedelta(minutes=8)
    )
    two_busy_gpus(40)
    posture_evaluate()
    (finding,) = open_findings("ATTR-001")
    assert (finding.evidence["busy_gpus"], finding.evidence["held_gpus"]) == (2, 1)


def test_a_running_pod_with_no_recorded_start_holds_its_gpu_throughout(small_world):
    make_exclusive()
    set_inference(phase="Running", seen_running=True)
    two_busy_gpus(40)
    posture_evaluate()
    assert not open_findings("ATTR-001")


def test_a_finished_pods_hold_ends_at_its_recorded_finish_not_the_sync(small_world):
    # A sync saw it finished only now; its container ended 30 minutes ago and both GPUs
    # stayed busy after: one of them ran outside the scheduler for 28 minutes.
    make_exclusive()
    now = timezone.now()
    set_inference(
        phase="Succeeded",
        seen_running=True,
        started_at=now - timedelta(hours=1),
        finished_at=now - timedelta(minutes=30),
    )
    two_busy_gpus(40)
    posture_evaluate()
    assert open_findings("ATTR-001")


def pod_object(status: dict) -> dict:
    return {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "n", "containers": [{"name": "a", "image": "i"}]},
        "status": status,
    }


def test_the_pod_keeps_its_earliest_start_and_its_last_containers_finish():
    status = {
        "phase": "Succeeded",
        "startTime": "2026-01-01T10:00:05Z",
        "containerStatuses": [
            {
                "state": {
                    "terminated": {
                        "startedAt": "2026-01-01T10:00:00Z",
                        "finishedAt": "2026-01-01T11:00:00Z",
                    }
                }
            },
            {
                "state": {
                    "terminated": {
                        "startedAt": "2026-01-01T10:01:00Z",
                        "finishedAt": "2026-01-01T11:05:00Z",
                    }
                }
            },
        ],
    }
    pod = pod_from_object(pod_object(status), "ns")
    assert (pod.started_at, pod.finished_at) == ("2026-01-01T10:00:00Z", "2026-01-01T11:05:00Z")


def test_a_running_pod_has_no_finish_and_a_restart_does_not_move_its_start():
    status = {
        "startTime": "2026-01-01T10:00:00Z",
        "containerStatuses": [
            {
                "state": {
                    "terminated": {
                        "startedAt": "2026-01-01T10:00:01Z",
                        "finishedAt": "2026-01-01T10:30:00Z",
                    }
                }
            },
            {"state": {"running": {"startedAt": "2026-01-01T10:31:00Z"}}},
        ],
    }
    pod = pod_from_object(pod_object(status), "ns")
    assert (pod.started_at, pod.finished_at) == ("2026-01-01T10:00:00Z", None)
    unreadable = pod_from_object(pod_object({"startTime": "not a time"}), "ns")
    assert (unreadable.started_at, unreadable.finished_at) == (None, None)


def test_a_stored_pod_without_the_times_reads_as_unknown():
    # Rows written before the fields existed need no migration.
    pod = from_dict(SnapPod, {"namespace": "ns", "name": "p", "phase": "Running"})
    assert (pod.started_at, pod.finished_at) == (None, None)
