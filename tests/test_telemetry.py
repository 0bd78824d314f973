"""GPU telemetry end to end: DCGM-Exporter text and a Prometheus HTTP API ingested and
attributed, rolled up by the hour within a retention, shown on the utilisation page and API
in the viewer's scope; ATTR-001, ATTR-003 and LEAK-001 from samples and attestations."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import unquote

import pytest
import time_machine
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from inventory.models import Node, Pod
from posture.models import Finding
from posture.services import posture_evaluate
from telemetry.models import GpuReading, GpuUsageHourly, ResetAttestation, TelemetrySource
from telemetry.rollup import telemetry_rollup
from telemetry.samples import GpuSample
from telemetry.services import samples_ingest
from telemetry.tasks import read_telemetry_sources
from tests.conftest import api_client
from tests.realworld import realworld
from tests.test_fetch import local_server

pytestmark = pytest.mark.django_db
MIG_SAMPLE = Path(__file__).parent / "data" / "dcgm-mig.txt"
UUID = "GPU-00000000-1111-2222-3333-444444444444"


def series(
    start: datetime, minutes: int, *, busy: float, step: int = 5, **labels
) -> list[GpuSample]:
    base = {"hostname": "gpu-ts-1", "gpu": "0", "uuid": UUID, "model": "NVIDIA A100"} | labels
    return [
        GpuSample(time=start + timedelta(minutes=m), util=busy, **base)
        for m in range(0, minutes + 1, step)
    ]


def make_exclusive(node_name: str = "gpu-ts-1") -> None:
    """The small world's node, as if its GPUs were whole (no time-slicing)."""
    node = Node.objects.get(name=node_name)
    node.sharing_strategy = "none"
    node.data = {**node.data, "sharing_strategy": "none", "time_slicing_replicas": None}
    node.save()


def open_findings(check_id: str) -> list[Finding]:
    return list(Finding.objects.filter(check_id=check_id, status="open").order_by("id"))


def test_ingest_command_reads_real_exporter_text_and_attributes_it(small_world):
    out = io.StringIO()
    call_command(
        "ingest_dcgm",
        str(realworld("dcgm", "datadog-dcgm-label_remap.txt")),
        cluster="lab",
        stdout=out,
    )
    reading = GpuReading.objects.get()
    assert (reading.namespace, reading.pod, reading.util) == ("foo", "bar", 0.0)
    # `foo` belongs to no tenant and is no platform namespace: the unclassified party's
    # (DESIGN §3), with the exact pod the exporter named; never the platform's.
    assert (reading.attribution, reading.confidence) == ("tenant", "exact")
    assert reading.tenant.slug == "unclassified"
    assert "1 samples for lab (1 unclassified)" in out.getvalue()
    with pytest.raises(CommandError, match="not DCGM-Exporter text"):
        bad = MIG_SAMPLE.parent / "small-tenants.json"
        call_command("ingest_dcgm", str(bad), cluster="lab", stdout=io.StringIO())
    with pytest.raises(CommandError, match="no cluster"):
        call_command("ingest_dcgm", str(MIG_SAMPLE), cluster="nowhere")


def test_usage_in_a_namespace_nobody_claims_is_charged_to_unclassified(small_world, settings):
    # Real platform namespaces stay the platform's (the defaults, the GPU Operator's as the
    # sync found it, the configured ones); any other unclaimed namespace is nobody's.
    settings.GPUPOSTURE_PLATFORM_NAMESPACES = ["ops-tools"]
    make_exclusive()
    start = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    samples = []
    for gpu, ns in enumerate(("kube-system", "gpu-operator", "ops-tools", "ml-scratch")):
        samples += series(
            start, 60, busy=90.0, gpu=str(gpu), uuid=f"GPU-{gpu}", namespace=ns, pod=f"p-{gpu}"
        )
    samples_ingest(cluster=small_world, samples=samples)
    booked = {
        (r.namespace, r.attribution, r.tenant.slug if r.tenant else None)
        for r in GpuReading.objects.all()
    }
    assert booked == {
        ("kube-system", "platform", None),
        ("gpu-operator", "platform", None),
        ("ops-tools", "platform", None),
        ("ml-scratch", "tenant", "unclassified"),
    }
    telemetry_rollup(now=start + timedelta(hours=3))
    hours = {
        (r.attribution, r.tenant.slug if r.tenant else None)
        for r in GpuUsageHourly.objects.filter(uuid="GPU-3")
    }
    assert hours == {("tenant", "unclassified")}


def test_usage_booked_to_the_platform_before_moves_to_unclassified(small_world):
    # What ingest stored before the fix: an unclaimed namespace's samples as the platform's.
    from telemetry.rebook import all_unclaimed_usage_rebook

    start = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=3)
    samples_ingest(
        cluster=small_world,
        samples=series(start, 60, busy=50.0, namespace="ml-scratch", pod="nb-0")
        + series(start, 60, busy=50.0, uuid="GPU-ks", namespace="kube-system", pod="ks-0"),
    )
    GpuReading.objects.update(attribution="platform", tenant=None)
    telemetry_rollup()
    assert all_unclaimed_usage_rebook() == 13
    booked = {
        (r.namespace, r.attribution, r.tenant.slug if r.tenant else None)
        for r in GpuReading.objects.all()
    }
    assert booked == {("ml-scratch", "tenant", "unclassified"), ("kube-system", "platform", None)}
    hours = {
        (r.uuid, r.attribution, r.tenant.slug if r.tenant else None)
        for r in GpuUsageHourly.objects.all()
    }
    assert hours == {(UUID, "tenant", "unclassified"), ("GPU-ks", "platform", None)}
    assert all_unclaimed_usage_rebook() == 0  # once is enough


def test_mig_instances_are_attributed_by_the_exported_pod_labels(small_world):
    call_command("ingest_dcgm", str(MIG_SAMPLE), cluster="lab", stdout=io.StringIO())
    mig = GpuReading.objects.exclude(gi_id="").order_by("gi_id")
    assert [(r.gi_profile, r.namespace) for r in mig] == [
        ("3g.40gb", "team-alpha"),
        ("2g.20gb", "beta-jobs"),
        ("1g.10gb", "team-alpha"),
    ]
    alpha = [r for r in mig if r.namespace == "team-alpha"]
    assert all(r.tenant.slug == "alpha" and r.confidence == "exact" for r in alpha)
    # A Prometheus range read again overlaps the last one: the same readings are kept once.
    samples = series(timezone.now() - timedelta(minutes=20), 20, busy=5)
    samples_ingest(cluster=small_world, samples=samples)
    before = GpuReading.objects.count()
    samples_ingest(cluster=small_world, samples=samples)
    assert GpuReading.objects.count() == before


def test_a_time_sliced_gpu_is_attributed_with_shared_confidence(small_world):
    now = timezone.now()
    samples = series(
        now - timedelta(minutes=30), 30, busy=60, namespace="team-alpha", pod="trainer-0"
    )
    samples += series(
        now - timedelta(minutes=30), 30, busy=60, namespace="beta-prod", pod="inference-0"
    )
    samples_ingest(cluster=small_world, samples=samples)
    assert set(GpuReading.objects.values_list("confidence", flat=True)) == {"shared"}
    posture_evaluate()
    assert not open_findings("ATTR-001")  # its pods explain a shared GPU's use


def test_prometheus_range_is_ingested(small_world, settings):
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = ["127.0.0.1"]
    now = int(timezone.now().timestamp())
    labels = {
        "Hostname": "gpu-ts-1",
        "gpu": "0",
        "UUID": UUID,
        "modelName": "NVIDIA A100",
        "exported_namespace": "team-alpha",
        "exported_pod": "trainer-0",
    }
    answer = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [{"metric": labels, "values": [[now - 120, "55"], [now - 60, "57"]]}],
        },
    }
    with local_server({"/api/v1/query_range": json.dumps(answer).encode()}) as server:
        out = io.StringIO()
        call_command(
            "ingest_dcgm", cluster="lab", prometheus=server.url(""), since="10m", stdout=out
        )
    assert GpuReading.objects.count() == 2 and "2 samples" in out.getvalue()
    assert {q.split("query=")[1].split("&")[0] for q, _ in server.seen} >= {"DCGM_FI_DEV_GPU_UTIL"}
    with pytest.raises(CommandError, match="refused"):
        settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = []
        call_command("ingest_dcgm", cluster="lab", prometheus="http://127.0.0.1:9/", since="1h")


def test_ingest_dcgm_match_picks_the_clusters_series_and_refuses_a_bad_one(small_world, settings):
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = ["127.0.0.1"]
    with local_server(
        {"/api/v1/query_range": b'{"status":"success","data":{"resultType":"matrix","result":[]}}'}
    ) as server:
        call_command(
            "ingest_dcgm",
            cluster="lab",
            prometheus=server.url(""),
            match="cluster=lab",
            stdout=io.StringIO(),
        )
    queries = {unquote(q.split("query=")[1].split("&")[0]) for q, _ in server.seen}
    assert 'DCGM_FI_DEV_GPU_UTIL{cluster="lab"}' in queries
    with pytest.raises(CommandError, match="LABEL=VALUE"):
        call_command("ingest_dcgm", cluster="lab", prometheus=server.url(""), match="lab")
    with pytest.raises(CommandError, match="--prometheus only"):
        call_command("ingest_dcgm", "/dev/null", cluster="lab", match="cluster=lab")


def test_busy_gpu_with_no_scheduled_pod_is_a_critical_finding(small_world):
    make_exclusive()
    Pod.objects.filter(node__name="gpu-ts-1").exclude(namespace="gpu-operator").delete()
    now = timezone.now()
    samples_ingest(cluster=small_world, samples=series(now - timedelta(minutes=25), 25, busy=96))
    posture_evaluate()
    (finding,) = open_findings("ATTR-001")
    assert finding.severity == "critical" and finding.subject_name == "gpu-ts-1"
    assert finding.evidence["gpu_uuid"] == UUID and finding.evidence["minutes"] == 25
    assert finding.evidence["samples"] and finding.evidence["window_minutes"] == 15


def test_the_same_busy_gpu_held_by_a_scheduled_pod_is_fine(small_world):
    make_exclusive()
    now = timezone.now()
    samples = series(
        now - timedelta(minutes=25), 25, busy=96, namespace="team-alpha", pod="trainer-0"
    )
    samples_ingest(cluster=small_world, samples=samples)
    posture_evaluate()
    assert not open_findings("ATTR-001")


def test_an_exporter_that_names_no_pod_is_not_a_hijack_while_pods_hold_the_gpus(small_world):
    """DCGM-Exporter without its Kubernetes mapping labels no pod: the node's one busy GPU is
    one its scheduled pods hold (by count), not a critical hijack; ATTR-002 says the usage
    is attributed to nobody."""
    make_exclusive()
    now = timezone.now()
    samples_ingest(cluster=small_world, samples=series(now - timedelta(minutes=25), 25, busy=96))
    posture_evaluate()
    assert not open_findings("ATTR-001")
    (unmapped,) = [f for f in open_findings("ATTR-002") if f.key == "unmapped"]
    assert unmapped.subject_name == "gpu-ts-1"
    assert unmapped.evidence["gpus_held_by_scheduled_pods"] == 2
    assert set(unmapped.tenants.values_list("slug", flat=True)) == {"alpha", "beta"}


def test_more_busy_gpus_than_the_pods_hold_is_still_a_hijack_without_pod_labels(small_world):
    make_exclusive()
    Pod.objects.filter(node__name="gpu-ts-1", name="inference-0").delete()  # 1 GPU held
    now = timezone.now()
    start = now - timedelta(minutes=25)
    other = "GPU-99999999-1111-2222-3333-444444444444"
    samples = series(start, 25, busy=96) + series(start, 25, busy=91, gpu="1", uuid=other)
    samples_ingest(cluster=small_world, samples=samples)
    posture_evaluate()
    # Two busy, one held: one of them runs outside the scheduler, which is unknown. One
    # finding of the node, exposure the one GPU beyond, both GPUs its candidates.
    (finding,) = open_findings("ATTR-001")
    assert (finding.subject_kind, finding.subject_name, finding.key) == (
        "Node",
        "gpu-ts-1",
        "by-count",
    )
    assert finding.severity == "critical" and finding.exposure == 1
    evidence = finding.evidence
    assert (evidence["busy_gpus"], evidence["held_gpus"], evidence["excess"]) == (2, 1, 1)
    assert evidence["candidate_gpus"] == sorted([UUID, other])
    assert evidence["which_gpus_unheld"].startswith("unknown")
    assert "at least one runs outside the scheduler" in evidence["held_by"]
    assert list(finding.tenants.values_list("slug", flat=True)) == ["alpha"]  # on the node


def test_an_unheld_gpu_next_to_a_labelled_one_is_a_hijack(small_world):
    # The exporter names the pod on the held GPU, so its mapping is on: the other busy GPU,
    # unlabelled, is held by no pod.
    make_exclusive()
    now = timezone.now()
    start = now - timedelta(minutes=25)
    held = series(start, 25, busy=96, namespace="team-alpha", pod="trainer-0")
    stray = series(start, 25, busy=96, uuid="GPU-0000-stray", gpu="1")
    samples_ingest(cluster=small_world, samples=held + stray)
    posture_evaluate()
    (finding,) = open_findings("ATTR-001")
    assert finding.evidence["gpu_uuid"] == "GPU-0000-stray"
    assert finding.evidence["held_by"] == "no scheduled pod in the last inventory holds this GPU"


EXPORTER = "nvidia-dcgm-exporter-7hx2q"


def exporter_pod() -> None:
    """A DCGM exporter pod on gpu-ts-1 (a copy of the platform pod there, with its image)."""
    pod = Pod.objects.get(name="nvidia-device-plugin-daemonset-x1")
    image = "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04"
    containers = [{**c, "image": image} for c in pod.data["containers"]]
    pod.pk, pod.name = None, EXPORTER
    pod.data = {**pod.data, "name": EXPORTER, "containers": containers}
    pod.save()


def test_an_exporter_pods_name_as_hostname_is_read_as_its_node(small_world):
    # dcgm-exporter without host networking (and without NODE_NAME) reports its own pod's
    # name as `Hostname`: the inventory says which node that pod runs on.
    exporter_pod()
    now = timezone.now()
    samples = series(
        now - timedelta(minutes=10),
        10,
        busy=60,
        hostname=EXPORTER,
        namespace="team-alpha",
        pod="trainer-0",
    )
    samples_ingest(cluster=small_world, samples=samples)
    assert set(GpuReading.objects.values_list("hostname", flat=True)) == {"gpu-ts-1"}
    posture_evaluate()
    assert not open_findings("ATTR-003")  # the node reports, under its exporter's name


def test_the_scrapes_own_pod_label_names_no_workload(small_world):
    # A Prometheus scrape stamped its target, the exporter's pod, on samples the exporter
    # left bare (its Kubernetes mapping off): nobody's usage, not the platform's, and the
    # node's held GPUs are not a hijack.
    exporter_pod()
    make_exclusive()
    now = timezone.now()
    samples = series(
        now - timedelta(minutes=25), 25, busy=96, namespace="gpu-operator", pod=EXPORTER
    )
    samples_ingest(cluster=small_world, samples=samples)
    assert set(GpuReading.objects.values_list("attribution", "pod")) == {("unattributed", "")}
    posture_evaluate()
    assert not open_findings("ATTR-001")
    assert open_findings("ATTR-002")


def test_a_gpu_node_silent_for_an_hour_is_reported(small_world, settings):
    posture_evaluate()
    # A cluster that never sent telemetry: its GPU node has none (tests/telemetry/
    # test_never_sampled.py); once samples came and stopped, it is silent since the last.
    (never,) = open_findings("ATTR-003")
    assert never.evidence["cluster_telemetry"].startswith("none: no DCGM-Exporter sample")
    long_ago = timezone.now() - timedelta(minutes=settings.GPUPOSTURE_SILENT_NODE_MINUTES + 30)
    samples_ingest(cluster=small_world, samples=series(long_ago, 10, busy=10))
    posture_evaluate()
    findings = open_findings("ATTR-003")
    assert findings and {f.subject_name for f in findings} == {"gpu-ts-1"}
    last = long_ago + timedelta(minutes=10)
    assert findings[0].evidence["last_sample"].startswith(last.isoformat()[:16])
    assert "cluster_telemetry" not in findings[0].evidence


@pytest.mark.parametrize("workload", ["vm-passthrough", "vm-vgpu"])
def test_a_node_giving_its_gpus_to_vms_is_silent_by_design_not_a_broken_exporter(
    small_world, settings, workload
):
    # A GPU Operator sandbox node: its GPUs go to KubeVirt VMs, no DCGM-Exporter runs there.
    node = Node.objects.get(name="gpu-ts-1")
    labels = {**node.labels, "nvidia.com/gpu.workload.config": workload}
    node.labels = labels
    # Moved: the sandbox device plugin's resource, no container GPU resource left (a node
    # still advertising nvidia.com/gpu is judged as the container node it still is).
    capacity = {"nvidia.com/AD102GL_L40S": 1}
    node.data = {**node.data, "labels": labels, "gpu_capacity": capacity}
    node.save()
    long_ago = timezone.now() - timedelta(minutes=settings.GPUPOSTURE_SILENT_NODE_MINUTES + 30)
    samples_ingest(cluster=small_world, samples=series(long_ago, 10, busy=10))
    posture_evaluate()
    [finding] = open_findings("ATTR-003")
    assert finding.severity == "low"  # not the medium of an exporter the platform can fix
    assert workload in finding.title and "VMs" in finding.title
    assert workload in finding.evidence["why_no_telemetry"]


def test_a_gpu_passed_between_tenants_needs_a_recorded_reset(small_world, personas):
    make_exclusive()
    start = timezone.now() - timedelta(hours=3)
    alpha = series(start, 60, busy=80, namespace="team-alpha", pod="trainer-0")
    beta = series(
        start + timedelta(minutes=90), 60, busy=80, namespace="beta-prod", pod="inference-0"
    )
    samples_ingest(cluster=small_world, samples=alpha + beta)
    posture_evaluate()
    (finding,) = open_findings("LEAK-001")
    # One cause, both tenants: one's residue, the other's exposure to it.
    assert sorted(finding.tenants.values_list("slug", flat=True)) == ["alpha", "beta"]
    assert finding.evidence["previous_tenant"] == "alpha"
    # A reset recorded between the two closes it.
    engineer = api_client(personas["platform_engineer"])
    answer = engineer.post(
        "/api/v1/reset-attestations/",
        {
            "cluster": "lab",
            "node": "gpu-ts-1",
            "gpu_uuid": UUID,
            "reset_at": (start + timedelta(minutes=75)).isoformat(),
            "method": "gpu_reset",
            "previous_tenant": "alpha",
            "next_tenant": "beta",
        },
        format="json",
    )
    assert answer.status_code == 201 and answer.json()["recorded_by"] == "plat"
    posture_evaluate()
    assert not open_findings("LEAK-001")


def test_a_gpu_passed_between_two_unclaimed_namespaces_needs_a_reset(small_world):
    # Two namespaces nobody claims are both the unclassified tenant's, but not known to be one
    # party: their GPU changing hands is a handover like any other.
    make_exclusive()
    start = timezone.now() - timedelta(hours=3)
    first = series(start, 60, busy=80, namespace="scratch-x", pod="nb-0")
    second = series(start + timedelta(minutes=90), 60, busy=80, namespace="scratch-y", pod="nb-1")
    again = series(start + timedelta(minutes=180), 20, busy=80, namespace="scratch-y", pod="nb-2")
    samples_ingest(cluster=small_world, samples=first + second + again)
    posture_evaluate()
    (finding,) = open_findings("LEAK-001")
    evidence = finding.evidence
    assert (evidence["previous_namespace"], evidence["next_namespace"]) == (
        "scratch-x",
        "scratch-y",
    )
    assert evidence["previous_tenant"] == evidence["next_tenant"] == "unclassified"
    assert list(finding.tenants.values_list("slug", flat=True)) == ["unclassified"]


def test_reset_attestations_api_validates_and_scopes(small_world, personas):
    body = {
        "cluster": "lab",
        "node": "gpu-ts-1",
        "reset_at": timezone.now().isoformat(),
        "method": "reboot",
        "previous_tenant": "beta",
        "next_tenant": "beta",
    }
    assert (
        api_client(personas["auditor"])
        .post("/api/v1/reset-attestations/", body, format="json")
        .status_code
        == 403
    )
    lead = api_client(personas["security_lead"])
    bad = lead.post("/api/v1/reset-attestations/", body | {"node": "nope"}, format="json")
    assert bad.status_code == 400 and "nope" in str(bad.json())
    bad = lead.post("/api/v1/reset-attestations/", body | {"method": "prayer"}, format="json")
    assert bad.status_code == 400
    assert "gpu_reset, reboot, vm_recycle" in str(bad.json())  # the values a caller may send
    assert lead.post("/api/v1/reset-attestations/", body, format="json").status_code == 201
    viewer = api_client(personas["viewer_alpha"])
    assert viewer.get("/api/v1/reset-attestations/").json()["results"] == []  # beta's, not alpha's
    assert ResetAttestation.objects.get().recorded_by == "sec"


def test_the_reset_form_records_a_reset(small_world, personas):
    client = Client()
    client.force_login(personas["platform_engineer"])
    cluster = small_world.pk
    # The time typed has no zone: the form says which one it is read in.
    assert "In UTC, to the minute" in client.get("/resets/new/").content.decode()
    answer = client.post(
        "/resets/new/",
        {
            "cluster": cluster,
            "node": "gpu-ts-1",
            "reset_at": "2026-11-30T10:00",
            "method": "gpu_reset",
        },
    )
    assert answer.status_code == 302 and ResetAttestation.objects.get().recorded_by == "plat"
    refused = client.post(
        "/resets/new/",
        {
            "cluster": cluster,
            "node": "ghost",
            "reset_at": "2026-11-30T10:00",
            "method": "gpu_reset",
        },
    )
    assert "has no node" in refused.content.decode()
    viewer = Client()
    viewer.force_login(personas["viewer_alpha"])
    assert viewer.get("/resets/new/").status_code == 403


def test_rollup_keeps_hours_and_drops_raw_samples_past_retention(small_world, settings):
    day = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
    samples = series(day, 120, busy=50, namespace="team-alpha", pod="trainer-0")
    samples_ingest(cluster=small_world, samples=samples)
    with time_machine.travel(day + timedelta(hours=5), tick=False):
        first = telemetry_rollup()
        again = telemetry_rollup()
    assert first.hours >= 2 and GpuUsageHourly.objects.filter(tenant__slug="alpha").exists()
    hourly = sorted(GpuUsageHourly.objects.values_list("hour", "gpu_hours", "busy_gpu_hours"))
    assert sum(h for _, h, _ in hourly) == pytest.approx(2.0 + 0.5 / 60, abs=0.01)
    assert again.hours <= 1  # only the last hour is looked at again
    assert GpuUsageHourly.objects.count() == len(hourly)
    assert GpuReading.objects.count() == len(samples)  # within the retention: kept
    later = day + timedelta(days=settings.GPUPOSTURE_TELEMETRY_RETENTION_DAYS + 1)
    with time_machine.travel(later, tick=False):
        gone = telemetry_rollup()
    assert gone.deleted == len(samples) and GpuReading.objects.count() == 0
    assert GpuUsageHourly.objects.count() == len(hourly)  # the hours stay


def _one_day_for_two_tenants(cluster) -> None:
    start = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=6)
    samples = series(start, 180, busy=90, namespace="team-alpha", pod="trainer-0")
    samples += series(
        start, 180, busy=2, namespace="beta-prod", pod="inference-0", uuid="GPU-beta", gpu="1"
    )
    samples_ingest(cluster=cluster, samples=samples)
    telemetry_rollup()


def test_utilisation_page_api_and_csv_in_the_viewers_scope(small_world, personas, settings):
    make_exclusive()
    _one_day_for_two_tenants(small_world)
    lead = Client()
    lead.force_login(personas["security_lead"])
    page = lead.get("/utilisation/?days=7").content.decode()
    assert "GPU-hours per tenant per day" in page and "hours-chart" in page
    assert "alpha" in page and "beta" in page and "Idle allocated GPUs" in page
    assert "GPU-beta" in page  # beta held it for hours, at 2% busy: idle allocated
    csv = lead.get("/utilisation/chargeback.csv?days=7").content.decode().splitlines()
    assert csv[0] == "tenant,gpu_hours,mig_slice_hours,busy_gpu_hours,confidence"
    assert {line.split(",")[0] for line in csv[1:]} == {"alpha", "beta"}
    viewer = api_client(personas["viewer_alpha"])
    data = viewer.get("/api/v1/utilisation/?days=7").json()
    assert {row["tenant"] for row in data["tenant_days"]} == {"alpha"}
    assert {row["tenant"] for row in data["chargeback"]} == {"alpha"}
    assert all(g["uuid"] != "GPU-beta" for g in data["top_gpus"])
    assert viewer.get("/api/v1/utilisation/?days=13").status_code == 400


def test_utilisation_hours_are_rounded_not_float_sums(small_world, personas):
    # 5-minute samples summed as floats print as 71.55000000000001: the API says 71.55.
    make_exclusive()
    _one_day_for_two_tenants(small_world)
    data = api_client(personas["security_lead"]).get("/api/v1/utilisation/?days=7").json()
    rows = [*data["tenant_days"], *data["chargeback"]]
    assert rows
    for row in rows:
        for field in ("gpu_hours", "mig_slice_hours", "busy_gpu_hours"):
            assert len(repr(row[field]).partition(".")[2]) <= 4, (field, row[field])


def test_beat_reads_a_configured_exporter_and_records_failures(small_world, settings):
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = ["127.0.0.1"]
    with local_server({"/metrics": MIG_SAMPLE.read_bytes()}) as server:
        source = TelemetrySource.objects.create(
            cluster=small_world, kind="exporter", url=server.url("/metrics")
        )
        assert read_telemetry_sources() == {"read": 1, "failed": 0}
    source.refresh_from_db()
    assert source.last_read_at and not source.last_error
    assert GpuReading.objects.filter(hostname="gpu-h100-07").exists()
    assert read_telemetry_sources() == {"read": 0, "failed": 0}  # not due again yet
    TelemetrySource.objects.filter(pk=source.pk).update(last_read_at=None, url="https://10.0.0.9/m")
    assert read_telemetry_sources() == {"read": 0, "failed": 1}
    source.refresh_from_db()
    assert "private" in source.last_error


def test_the_utilisation_page_costs_the_same_queries_whatever_the_data(small_world, personas):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(personas["security_lead"])
    make_exclusive()
    _one_day_for_two_tenants(small_world)
    with CaptureQueriesContext(connection) as small:
        client.get("/utilisation/")
    start = timezone.now() - timedelta(days=3)
    more = [
        sample
        for gpu in range(2, 10)
        for sample in series(
            start,
            600,
            busy=40,
            step=10,
            uuid=f"GPU-{gpu}",
            gpu=str(gpu),
            namespace="team-alpha",
            pod="trainer-0",
        )
    ]
    samples_ingest(cluster=small_world, samples=more)
    telemetry_rollup()
    with CaptureQueriesContext(connection) as large:
        client.get("/utilisation/")
    assert len(large) == len(small) <= 12


def test_days_sum_their_hours_with_the_worst_confidence(small_world):
    from telemetry.models import GpuUsageDaily

    make_exclusive()
    day = datetime(2026, 11, 21, 6, 0, tzinfo=UTC)
    samples = series(day, 120, busy=50, namespace="team-alpha", pod="trainer-0")
    samples_ingest(cluster=small_world, samples=samples)
    with time_machine.travel(day + timedelta(hours=4), tick=False):
        telemetry_rollup()
    hours = GpuUsageHourly.objects.filter(tenant__slug="alpha")
    (daily,) = GpuUsageDaily.objects.filter(tenant__slug="alpha")
    assert daily.day == day.date() and daily.confidence == "exact"
    assert daily.gpu_hours == pytest.approx(sum(h.gpu_hours for h in hours))
    assert daily.samples == len(samples)


def test_a_node_past_raw_retention_is_last_seen_in_the_hourly_roll_ups(small_world):
    from telemetry.silence import _last_seen

    hour = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(days=9)
    GpuUsageHourly.objects.create(
        cluster=small_world,
        hour=hour,
        hostname="gpu-ts-1",
        attribution="platform",
        confidence="none",
    )
    seen = _last_seen(small_world, ["gpu-ts-1"], timezone.now(), timedelta(hours=1))
    assert seen == {"gpu-ts-1": hour + timedelta(hours=1)}


def _dra_holds_uuid(cluster, *, with_pod: bool) -> None:
    """A DRA claim of team-alpha holding the GPU UUID on gpu-ts-1 (the NVIDIA DRA driver's
    slice), and the pod using it when `with_pod`."""
    from inventory import snapshot as snap
    from inventory.models import ClusterObject
    from inventory.sources.normalise import normalise
    from tests.posture.dra_world import claim, dra_pod, gpu_device, resource_slice

    device = gpu_device(0)
    device["attributes"]["uuid"] = {"string": UUID}
    objects = [
        resource_slice("gpu-ts-1", [device]),
        claim("team-alpha", "trainer-gpu", ["gpu-0"], node="gpu-ts-1", reserved_for=["dra-0"]),
        dra_pod("team-alpha", "dra-0", "trainer-gpu", node_name="gpu-ts-1"),
    ]
    read = normalise(objects)
    for kind, items in (("dra_slice", read.dra_slices), ("dra_claim", read.dra_claims)):
        for item in items:
            ClusterObject.objects.create(
                cluster=cluster,
                kind=kind,
                namespace=getattr(item, "namespace", ""),
                name=item.name,
                data=snap.to_dict(item),
            )
    if with_pod:
        (pod,) = read.pods
        Pod.objects.create(
            cluster=cluster,
            namespace=pod.namespace,
            name=pod.name,
            phase="Running",
            node=Node.objects.get(name="gpu-ts-1"),
            data=snap.to_dict(pod),
            changed_at=timezone.now(),
        )


@pytest.mark.parametrize("with_pod", [True, False])
def test_a_busy_gpu_a_dra_claim_in_use_holds_is_not_hijacked(small_world, with_pod):
    """The exporter may not map DRA devices to pods: the samples carry no pod, yet the claim a
    running pod uses explains them. A claim whose pod is gone explains nothing."""
    make_exclusive()
    Pod.objects.filter(node__name="gpu-ts-1").exclude(namespace="gpu-operator").delete()
    _dra_holds_uuid(small_world, with_pod=with_pod)
    now = timezone.now()
    samples_ingest(cluster=small_world, samples=series(now - timedelta(minutes=25), 25, busy=96))
    posture_evaluate()
    assert bool(open_findings("ATTR-001")) is not with_pod


@pytest.mark.parametrize("dra_slice", [True, False])
def test_a_dra_only_node_passing_a_gpu_between_tenants_needs_a_reset(small_world, dra_slice):
    """cpu-1 has no GPU capacity or GFD labels: its GPU is seen only through the NVIDIA DRA
    driver's ResourceSlice, and is then judged for handovers like any exclusive GPU."""
    from inventory import snapshot as snap
    from inventory.models import ClusterObject
    from inventory.sources.normalise import normalise
    from tests.posture.dra_world import gpu_device, resource_slice

    if dra_slice:
        device = gpu_device(0)
        device["attributes"]["uuid"] = {"string": UUID}
        (read,) = normalise([resource_slice("cpu-1", [device])]).dra_slices
        ClusterObject.objects.create(
            cluster=small_world, kind="dra_slice", name=read.name, data=snap.to_dict(read)
        )
    start = timezone.now() - timedelta(hours=3)
    # Pods that came and went between syncs (trainer-0 and inference-0 of the inventory run on
    # gpu-ts-1: a cpu-1 sample naming them would be a stale label, booked to nobody exactly).
    alpha = series(start, 60, busy=80, namespace="team-alpha", pod="burst-0", hostname="cpu-1")
    beta = series(
        start + timedelta(minutes=90),
        60,
        busy=80,
        namespace="beta-prod",
        pod="burst-1",
        hostname="cpu-1",
    )
    samples_ingest(cluster=small_world, samples=alpha + beta)
    posture_evaluate()
    found = [f for f in open_findings("LEAK-001") if f.subject_name == "cpu-1"]
    assert bool(found) is dra_slice


def test_a_configured_prometheus_source_reads_only_its_clusters_series(small_world, settings):
    from telemetry.models import TelemetrySource
    from telemetry.services import telemetry_source_read

    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = ["127.0.0.1"]
    empty = b'{"status":"success","data":{"resultType":"matrix","result":[]}}'
    with local_server({"/api/v1/query_range": empty}) as server:
        source = TelemetrySource.objects.create(
            cluster=small_world, url=server.url(""), match="cluster=lab"
        )
        telemetry_source_read(source=source)
    queries = {unquote(q.split("query=")[1].split("&")[0]) for q, _ in server.seen}
    assert queries and all(q.endswith('{cluster="lab"}') for q in queries)
    source.match = "lab"
    with pytest.raises(ValidationError, match="LABEL=VALUE"):
        source.full_clean()


def make_mig(node_name: str = "gpu-ts-1") -> None:
    """The small world's node, as if its GPUs were split into MIG instances, none replicated."""
    node = Node.objects.get(name=node_name)
    node.sharing_strategy = "mig"
    node.data = {
        **node.data,
        "sharing_strategy": "mig",
        "mig_strategy": "mixed",
        "time_slicing_replicas": None,
        "resource_sharing": [],
    }
    node.save()


def test_a_mig_instance_passed_between_tenants_needs_a_recorded_reset(small_world):
    # MIG isolates instances side by side, not one user of an instance from the next: a GPU
    # instance handed from alpha to beta is a handover like a whole GPU's, per instance.
    make_mig()
    start = timezone.now() - timedelta(hours=3)
    mig = {"gi_id": "1", "gi_profile": "3g.40gb"}
    alpha = series(start, 60, busy=80, namespace="team-alpha", pod="trainer-0", **mig)
    beta = series(
        start + timedelta(minutes=90), 60, busy=80, namespace="beta-prod", pod="inference-0", **mig
    )
    # beta on the sibling instance all along: side by side, no handover there.
    sibling = series(
        start, 150, busy=80, namespace="beta-prod", pod="other-0", gi_id="2", gi_profile="3g.40gb"
    )
    samples_ingest(cluster=small_world, samples=alpha + beta + sibling)
    posture_evaluate()
    (finding,) = open_findings("LEAK-001")
    assert sorted(finding.tenants.values_list("slug", flat=True)) == ["alpha", "beta"]
    assert finding.evidence["gpu_uuid"] == UUID
    assert finding.evidence["gpu_instance_id"] == "1"
    assert "MIG GPU instance 1" in finding.title
    # A reset of the parent GPU between the two (every instance destroyed first) closes it.
    ResetAttestation.objects.create(
        cluster=small_world,
        node="gpu-ts-1",
        gpu_uuid=UUID,
        reset_at=start + timedelta(minutes=75),
        method="gpu_reset",
        recorded_by="plat",
    )
    posture_evaluate()
    assert not open_findings("LEAK-001")


def test_a_mig_instance_of_a_node_with_no_mig_label_is_handed_over_too(small_world):
    # A DRA-only node carries no GFD MIG label (its strategy reads "none"), yet DCGM-Exporter
    # reports its MIG instances: each is handed from tenant to tenant as on any MIG node.
    make_exclusive()
    start = timezone.now() - timedelta(hours=3)
    mig = {"gi_id": "3", "gi_profile": "1g.10gb"}
    alpha = series(start, 60, busy=80, namespace="team-alpha", pod="trainer-0", **mig)
    beta = series(
        start + timedelta(minutes=90), 60, busy=80, namespace="beta-prod", pod="inference-0", **mig
    )
    samples_ingest(cluster=small_world, samples=alpha + beta)
    posture_evaluate()
    (finding,) = open_findings("LEAK-001")
    assert finding.evidence["gpu_instance_id"] == "3"
    assert sorted(finding.tenants.values_list("slug", flat=True)) == ["alpha", "beta"]


def _env_pod(cluster, value: str) -> None:
    """A team-alpha pod on gpu-ts-1 that requests no GPU and sets NVIDIA_VISIBLE_DEVICES (the
    node's toolkit runs its default, which honours it from unprivileged pods)."""
    from inventory import snapshot as snap
    from inventory.sources.normalise import normalise
    from tests.posture.gpu_access_world import container, pod

    probe = container("probe", "nvidia/cuda:12.4.1-base-ubuntu22.04")
    probe["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": value}]
    (read,) = normalise([pod("team-alpha", "probe", probe, node_name="gpu-ts-1")]).pods
    Pod.objects.create(
        cluster=cluster,
        namespace=read.namespace,
        name=read.name,
        phase="Running",
        node=Node.objects.get(name="gpu-ts-1"),
        data=snap.to_dict(read),
        changed_at=timezone.now(),
    )
