"""LEAK-001 where one of two tenants held the GPU through NVIDIA_VISIBLE_DEVICES: the exporter
never names such a pod, yet it held the GPU while it ran, so the GPU passing to it (or from it)
with no reset between is a handover like any other."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.models import Pod
from posture.services import posture_evaluate
from telemetry.models import ResetAttestation
from telemetry.services import samples_ingest
from tests.test_telemetry import UUID, _env_pod, make_exclusive, open_findings, series

pytestmark = pytest.mark.django_db


def _world(cluster, value: str):
    """beta-prod's scheduled pod on GPU 0 three hours ago, then team-alpha's probe, which names
    GPUs in the variable, running since 100 minutes ago on samples the exporter leaves bare."""
    make_exclusive()
    _env_pod(cluster, value)
    now = timezone.now()
    Pod.objects.filter(name="probe").update(first_seen=now - timedelta(minutes=100))
    beta = series(now - timedelta(hours=3), 60, busy=80, namespace="beta-prod", pod="inference-0")
    bare = series(now - timedelta(minutes=90), 60, busy=80)
    samples_ingest(cluster=cluster, samples=beta + bare)
    return now


@pytest.mark.parametrize("value", ["all", "0", UUID])
def test_a_gpu_passed_to_a_tenant_holding_it_through_the_variable_needs_a_reset(small_world, value):
    now = _world(small_world, value)
    posture_evaluate()
    (finding,) = open_findings("LEAK-001")
    assert finding.evidence["previous_tenant"] == "beta"
    assert finding.evidence["next_tenant"] == "alpha"
    assert sorted(finding.tenants.values_list("slug", flat=True)) == ["alpha", "beta"]
    ResetAttestation.objects.create(
        cluster=small_world,
        node="gpu-ts-1",
        gpu_uuid=UUID,
        reset_at=now - timedelta(minutes=100),
        method="gpu_reset",
        recorded_by="plat",
    )
    posture_evaluate()
    assert not open_findings("LEAK-001")


def test_a_pod_naming_another_gpu_in_the_variable_takes_no_tenancy_of_this_one(small_world):
    _world(small_world, "3")
    posture_evaluate()
    assert not open_findings("LEAK-001")


# --- ATTR-001: a MIG instance a pod names by MIG UUID in the variable ------------------------

MIG_UUID = "MIG-5d3c7a10-0a1b-5c2d-8e3f-4a5b6c7d8e9f"


def test_a_busy_mig_instance_a_pod_names_by_mig_uuid_says_it_may_hold_it(small_world):
    # DCGM reports a MIG instance under its parent's UUID and GPU_I_ID, never its MIG UUID
    # (NVIDIA/dcgm-exporter#171): which instance the pod holds is unknown, so the finding says
    # it may be this one, not that no pod holds it, and not that it surely does.
    make_exclusive()
    _env_pod(small_world, MIG_UUID)
    start = timezone.now() - timedelta(minutes=25)
    # The exporter names the pod on GPU 0, so the node is judged GPU by GPU, not by count.
    held = series(start, 25, busy=96, namespace="team-alpha", pod="trainer-0")
    mig = series(start, 25, busy=96, uuid="GPU-0000-mig", gpu="1", gi_id="2", gi_profile="1g.10gb")
    samples_ingest(cluster=small_world, samples=held + mig)
    posture_evaluate()
    (finding,) = open_findings("ATTR-001")
    assert finding.evidence["mig_instance"] == "2"
    held_by = finding.evidence["held_by"]
    assert "no scheduled pod" not in held_by
    assert f"team-alpha/probe (NVIDIA_VISIBLE_DEVICES={MIG_UUID})" in held_by
    assert "whether it is this instance is unknown" in held_by
    (reach,) = finding.evidence["reached_through_visible_devices"]
    assert reach["pod"].endswith("probe") and reach["which_instance"] == "unknown"
    assert "no scheduled workload" not in finding.title
    assert "may reach it through NVIDIA_VISIBLE_DEVICES" in finding.title
