"""A `Hostname` that names neither a node nor a pod the last sync saw (the exporter's pod,
restarted since, without NODE_NAME) is read as the node its samples place it on."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from posture.services import posture_evaluate
from telemetry.models import GpuReading
from telemetry.services import samples_ingest
from tests.telemetry.test_held_labels import exporter_daemonset_pod
from tests.test_telemetry import make_exclusive, open_findings, series

pytestmark = pytest.mark.django_db
NEW_EXPORTER = "nvidia-dcgm-exporter-zz9k1"  # not in the inventory


def test_the_pods_a_new_exporter_names_place_it_on_their_node(small_world):
    samples = series(
        timezone.now() - timedelta(minutes=10),
        10,
        busy=60,
        hostname=NEW_EXPORTER,
        namespace="team-alpha",
        pod="trainer-0",
    )
    samples_ingest(cluster=small_world, samples=samples)
    assert set(GpuReading.objects.values_list("hostname", flat=True)) == {"gpu-ts-1"}
    posture_evaluate()
    assert not open_findings("ATTR-003")


def test_a_gpu_seen_on_a_node_before_places_a_new_exporter_that_names_no_pod(small_world):
    # Mapping off, so no pod label; the GPU's UUID was stored under its node an hour ago.
    make_exclusive()
    now = timezone.now()
    samples_ingest(cluster=small_world, samples=series(now - timedelta(hours=1), 0, busy=0))
    bare = series(now - timedelta(minutes=25), 25, busy=96, hostname=NEW_EXPORTER)
    samples_ingest(cluster=small_world, samples=bare)
    assert set(GpuReading.objects.values_list("hostname", flat=True)) == {"gpu-ts-1"}
    posture_evaluate()
    assert not open_findings("ATTR-001")  # one busy GPU, two held by the node's pods
    assert not open_findings("ATTR-003")


def test_a_host_whose_samples_point_at_two_nodes_stays_unplaced(small_world):
    now = timezone.now()
    samples_ingest(
        cluster=small_world,
        samples=series(now - timedelta(hours=1), 0, busy=0, hostname="cpu-1"),
    )
    mixed = series(now, 0, busy=5, hostname=NEW_EXPORTER, namespace="team-alpha", pod="trainer-0")
    samples_ingest(cluster=small_world, samples=mixed)
    hosts = set(GpuReading.objects.filter(time=now).values_list("hostname", flat=True))
    assert hosts == {NEW_EXPORTER}  # cpu-1 by its UUID, gpu-ts-1 by its pod: unknown


def test_busy_gpus_on_a_host_the_inventory_does_not_know_are_nobodys_not_a_hijack(small_world):
    """Mapping off and a host never placed (most often a node that joined since the sync):
    which pods run there is unknown, so no critical hijack is claimed; ATTR-002 names the host
    and says what a sync will tell."""
    now = timezone.now()
    samples_ingest(
        cluster=small_world,
        samples=series(now - timedelta(minutes=25), 25, busy=96, hostname="gpu-new-3"),
    )
    posture_evaluate()
    assert not open_findings("ATTR-001")
    (finding,) = [f for f in open_findings("ATTR-002") if f.subject_name == "gpu-new-3"]
    assert finding.severity == "low" and finding.evidence["in_inventory"] is False
    assert "sync the cluster again" in finding.evidence["hijack_detection"]
    assert [g["peak_busy_percent"] for g in finding.evidence["busy_gpus"]] == [96]


def test_a_scrapes_stamp_of_an_exporter_pod_newer_than_the_sync_names_no_workload(small_world):
    # The exporter restarted since the sync; its new pod, stamped by the scrape on the GPU it
    # left bare, is named after its DaemonSet: nobody's usage, not the platform's.
    exporter_daemonset_pod()
    stamped = series(
        timezone.now() - timedelta(minutes=5),
        5,
        busy=0,
        namespace="gpu-operator",
        pod="nvidia-dcgm-exporter-k2m9d",
    )
    samples_ingest(cluster=small_world, samples=stamped)
    assert set(GpuReading.objects.values_list("attribution", "pod")) == {("unattributed", "")}
