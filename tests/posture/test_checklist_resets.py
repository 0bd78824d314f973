"""Checklist item 9 ("GPU resets recorded between exclusive tenants") passes only where
gpuposture has looked: handovers seen and each attested, or the GPUs watched over the whole
window LEAK-001 looks in. A cluster synced once, with minutes of telemetry and no reset
recorded, showed nothing a reset could be recorded for: unknown, with the reason."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.holding_models import SyncHandover
from posture.checklist import ChecklistFacts, cluster_checklist
from posture.rules import CHECKS
from telemetry.models import GpuReading
from tests.conftest import api_client

# rtholdout: one sync, three DCGM scrapes five minutes apart, an exclusive H100 pool running
# two tenants' jobs, no reset recorded.
SYNCED_ONCE = dict(
    synced=True,
    gpu_nodes=41,
    time_sliced_nodes=8,
    registered_checks=frozenset(CHECKS),
    telemetry_samples=1,
    telemetry_span_hours=10 / 60,
    reset_attestations=0,
)


def item9(**facts):
    return cluster_checklist(ChecklistFacts(**{**SYNCED_ONCE, **facts}))[8]


def test_minutes_of_telemetry_and_no_handover_seen_is_unknown_not_pass():
    # Before: pass, "reset_attestations: 0", as soon as any GPU sample was held.
    item = item9()
    assert item.status == "unknown"
    assert item.evidence["reason"].startswith(
        "GPU telemetry spans 0.2 h of the 7-day window in which handovers are looked for"
    )
    assert "0 reset(s) recorded" in item.evidence["reason"]
    assert item.evidence["telemetry_span_hours"] == 0.2
    assert item.evidence["handovers_recorded"] == 0


def test_the_whole_window_watched_with_no_leak_open_passes():
    item = item9(telemetry_span_hours=7 * 24 - 0.5)  # the first scrape just after it opened
    assert (item.status, item.evidence["open_findings"]) == ("pass", {})
    assert item9(telemetry_span_hours=6 * 24).status == "unknown"  # a day of it not watched
    # A longer window is looked at whole too.
    assert item9(handover_window_days=30, telemetry_span_hours=7 * 24).status == "unknown"


def test_handovers_seen_and_each_attested_pass():
    item = item9(handovers_recorded=2, reset_attestations=2)
    assert item.status == "pass"
    assert item.evidence["handovers_recorded"] == 2


def test_an_open_leak_fails_whatever_was_watched():
    for span in (10 / 60, 7 * 24):
        item = item9(telemetry_span_hours=span, open_findings={"LEAK-001": 1})
        assert (item.status, item.evidence["open_findings"]) == ("fail", {"LEAK-001": 1})


@pytest.mark.django_db
def test_the_api_counts_the_telemetry_span_and_recorded_handovers(small_world, personas):
    """checklist_facts reads the span of the samples in the window and the handovers sync
    history recorded there; a tenant viewer counts only its own tenants' handovers."""
    now = timezone.now()
    GpuReading.objects.filter(cluster=small_world).delete()
    for minutes in (0, 5, 10):
        GpuReading.objects.create(
            cluster=small_world,
            time=now - timedelta(minutes=minutes),
            hostname="gpu-ts-1",
            gpu="0",
            uuid="GPU-1",
        )
    url = "/api/v1/clusters/lab/checklist/"
    lead = api_client(personas["security_lead"]).get(url).json()[8]
    assert lead["evidence"]["telemetry_span_hours"] == 0.2
    assert lead["evidence"]["handovers_recorded"] == 0
    assert lead["status"] == "unknown"
    for previous, following in (("beta", "gamma"), ("alpha", "beta")):
        SyncHandover.objects.create(
            cluster=small_world,
            node_name="gpu-ts-1",
            previous_holder=previous,
            next_holder=following,
            previous_gpus=1,
            next_gpus=1,
            gpu_count=1,
            previous_end=now - timedelta(hours=2),
            next_start=now - timedelta(hours=1),
        )
    lead = api_client(personas["security_lead"]).get(url).json()[8]
    assert (lead["status"], lead["evidence"]["handovers_recorded"]) == ("pass", 2)
    viewer = api_client(personas["viewer_alpha"]).get(url).json()[8]
    assert viewer["evidence"]["handovers_recorded"] == 1  # beta's to gamma is not alpha's


def _samples(cluster, host, *ages):
    for age in ages:
        GpuReading.objects.create(
            cluster=cluster, time=timezone.now() - age, hostname=host, gpu="0", uuid=f"GPU-{host}"
        )


@pytest.mark.django_db
def test_only_samples_of_gpus_used_whole_show_that_handovers_were_watched(small_world, personas):
    """A week of a time-sliced node's samples watches no GPU that passes whole from tenant to
    tenant: with an exclusive node on the cluster, its own samples must span the window."""
    from inventory.models import Node

    Node.objects.create(
        cluster=small_world, name="gpu-x-1", is_gpu_node=True, changed_at=timezone.now()
    )
    GpuReading.objects.filter(cluster=small_world).delete()
    _samples(small_world, "gpu-ts-1", timedelta(days=7) - timedelta(minutes=5), timedelta(0))
    _samples(small_world, "gpu-x-1", timedelta(minutes=10), timedelta(0))
    url = "/api/v1/clusters/lab/checklist/"
    item = api_client(personas["security_lead"]).get(url).json()[8]
    assert (item["status"], item["evidence"]["telemetry_span_hours"]) == ("unknown", 0.2)
    _samples(small_world, "gpu-x-1", timedelta(days=7) - timedelta(minutes=5))
    item = api_client(personas["security_lead"]).get(url).json()[8]
    assert item["status"] == "pass" and item["evidence"]["telemetry_span_hours"] == 167.9
