"""A busy GPU a pod holds through NVIDIA_VISIBLE_DEVICES (DESIGN §2: such holds feed the hijack
checks). Where the node honours the variable the pod's workload is on the GPU: its use is
explained, POD-011 is the one finding about how it got there (§5 "a finding is one cause"), and
ATTR-002's evidence names the pod. Where the product cannot verify the node honours it, the
pod explains nothing: ATTR-001 fires and names it as the suspect."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.models import Node, Pod
from posture.services import posture_evaluate
from telemetry.services import samples_ingest
from tests.test_telemetry import _env_pod, make_exclusive, open_findings, series

pytestmark = pytest.mark.django_db


def _busy_beside_a_scheduled_pod(cluster, value: str) -> None:
    """gpu-ts-1's GPU 0 busy for team-alpha's scheduled trainer-0 (the exporter names it), and
    GPU 1 busy with no pod named, while team-alpha's probe sets the variable to `value`."""
    make_exclusive()
    _env_pod(cluster, value)
    start = timezone.now() - timedelta(minutes=25)
    held = series(start, 25, busy=96, namespace="team-alpha", pod="trainer-0")
    taken = series(start, 25, busy=96, uuid="GPU-0000-taken", gpu="1")
    samples_ingest(cluster=cluster, samples=held + taken)


@pytest.mark.parametrize("value", ["all", "1", "GPU-0000-taken"])
def test_an_honoured_env_hold_explains_the_busy_gpu(small_world, value):
    _busy_beside_a_scheduled_pod(small_world, value)
    posture_evaluate()
    assert not open_findings("ATTR-001")
    (pod011,) = open_findings("POD-011")  # the one finding about the access
    assert pod011.subject_name == "probe"
    (attr002,) = open_findings("ATTR-002")
    (run,) = attr002.evidence["busy_gpus_explained_by_visible_devices"]
    assert run["gpu_uuid"] == "GPU-0000-taken" and run["peak_busy_percent"] == 96.0
    assert f"team-alpha/probe (NVIDIA_VISIBLE_DEVICES={value})" in run["held_by"]
    assert "explains its use" in run["held_by"]


def test_an_env_hold_on_another_gpu_explains_nothing(small_world):
    _busy_beside_a_scheduled_pod(small_world, "3")
    posture_evaluate()
    (finding,) = open_findings("ATTR-001")
    assert finding.evidence["gpu_uuid"] == "GPU-0000-taken"
    assert finding.evidence["held_by"] == "no scheduled pod in the last inventory holds this GPU"


def test_an_unverified_env_hold_does_not_explain_it_and_is_named_as_the_suspect(small_world):
    # No toolkit or device-plugin pod in the inventory, no device-list strategy resolved:
    # whether the node honours the variable from unprivileged pods is unknown, so the product
    # cannot say the probe is what uses the GPU.
    Pod.objects.filter(namespace="gpu-operator").delete()
    node = Node.objects.get(name="gpu-ts-1")
    node.data = {**node.data, "device_list_strategy": None, "device_list_strategy_source": ""}
    node.save()
    _busy_beside_a_scheduled_pod(small_world, "all")
    posture_evaluate()
    (finding,) = open_findings("ATTR-001")
    assert finding.evidence["gpu_uuid"] == "GPU-0000-taken"
    (suspect,) = finding.evidence["reached_through_visible_devices"]
    assert (suspect["pod"], suspect["node_honours_it"]) == ("team-alpha/probe", "unverified")
    assert finding.title.endswith("; 1 pod(s) may reach it through NVIDIA_VISIBLE_DEVICES")
    (pod011,) = open_findings("POD-011")
    assert pod011.evidence["pods"][0]["containers"][0]["honoured_here"] == "unverified"
    assert "busy_gpus_explained_by_visible_devices" not in str(
        [f.evidence for f in open_findings("ATTR-002")]
    )
