"""Whose usage a DCGM sample's pod label books, as a user reads it in the utilisation API, the
chargeback CSV and the findings: a label the last sync contradicts (its pod runs on another
node) books nobody, and a label naming a pod the sync does not list books that pod's tenant,
never at `exact` (telemetry.attribution, docs/bulletins-and-telemetry.md)."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from posture.services import posture_evaluate
from telemetry.models import GpuReading
from tests.conftest import api_client

pytestmark = pytest.mark.django_db

A100 = "NVIDIA A100-SXM4-80GB"
T = 30.5 / 60  # 31 scrapes a minute apart: 30 minutes, and the last one's default 30 s
SCRAPES = 31


def _uuid(index: int) -> str:
    return f"GPU-6f1c2a4e-9b7d-4c3a-8e21-00000000000{index}"


def _node(name: str, gpus: int) -> dict:
    cap = {"cpu": "64", "memory": "528227300Ki", "pods": "110"}
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
    if gpus:
        cap["nvidia.com/gpu"] = str(gpus)
        labels |= {
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.count": str(gpus),
            "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
        }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels},
        "spec": {},
        "status": {
            "capacity": cap,
            "allocatable": cap,
            "conditions": [{"type": "Ready", "status": "True"}],
            "nodeInfo": {
                "kubeletVersion": "v1.30.4",
                "containerRuntimeVersion": "containerd://1.7.20",
            },
        },
    }


def _pod(namespace: str, name: str, node: str, *, gpus: int) -> dict:
    started = (timezone.now() - timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    resources = {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {"requests": {"cpu": "2"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "main", "image": "pytorch/pytorch:2.4.0", "resources": resources}
            ],
        },
        "status": {
            "phase": "Running",
            "startTime": started,
            "containerStatuses": [
                {"name": "main", "ready": True, "state": {"running": {"startedAt": started}}}
            ],
        },
    }


@pytest.fixture
def world(tmp_path, personas):
    """Cluster `lab2`: node g-a (4 whole A100s; alpha's train-0 holds one), CPU node cpu-1
    (beta's tokenize-0, a CPU pod). alpha owns team-alpha by the registry, beta owns beta-prod
    by its namespace label."""
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document
    from tests.conftest import load_json

    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    items = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-alpha"}},
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "beta-prod", "labels": {"gpuposture.io/tenant": "beta"}},
        },
        _node("g-a", 4),
        _node("cpu-1", 0),
        _pod("team-alpha", "train-0", "g-a", gpus=1),
        _pod("beta-prod", "tokenize-0", "cpu-1", gpus=0),
    ]
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    cluster = cluster_get_or_create(name="lab2")
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    return cluster


def _dcgm(tmp_path, gpus: list[tuple[int, float, str, str]]):
    """DCGM-Exporter text for g-a: each (index, busy %, namespace, pod) a series of 31 scrapes
    a minute apart ending now, each line with its scrape's timestamp (a /federate dump)."""
    end = timezone.now().replace(second=0, microsecond=0)
    lines = [
        "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).",
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
    ]
    for index, busy, namespace, pod in gpus:
        labels = (
            f'gpu="{index}",UUID="{_uuid(index)}",device="nvidia{index}",modelName="{A100}",'
            'Hostname="g-a",DCGM_FI_DRIVER_VERSION="550.90.07"'
        )
        if pod:
            labels += f',container="main",namespace="{namespace}",pod="{pod}"'
        for i in range(SCRAPES):
            ms = int((end - timedelta(minutes=SCRAPES - 1 - i)).timestamp() * 1000)
            lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {busy:g} {ms}")
    path = tmp_path / "dcgm.prom"
    path.write_text("\n".join(lines) + "\n")
    call_command("ingest_dcgm", str(path), cluster="lab2", stdout=io.StringIO())
    posture_evaluate()  # what the ingest's re-score does once the command's work commits


def _utilisation(user) -> dict:
    answer = api_client(user).get("/api/v1/utilisation/?days=7&cluster=lab2")
    assert answer.status_code == 200
    return answer.json()


def _by_tenant(rows: list[dict]) -> dict[str, dict]:
    return {row["tenant"]: row for row in rows}


def _csv_tenants(user) -> set[str]:
    client = Client()
    client.force_login(user)
    answer = client.get("/utilisation/chargeback.csv?days=7&cluster=lab2")
    assert answer.status_code == 200
    return {row["tenant"] for row in csv.DictReader(io.StringIO(answer.content.decode()))}


def _findings(check: str) -> list[dict]:
    from posture.models import Finding

    return list(
        Finding.objects.filter(check_id=check, status="open", cluster__name="lab2").values(
            "subject_name", "evidence", "title"
        )
    )


def test_a_label_naming_another_nodes_pod_bills_nobody(world, personas, tmp_path):
    # GPU 1 of g-a is busy under the label of beta's tokenize-0, which the sync has on cpu-1:
    # DCGM-Exporter names only its own node's pods, so the label is stale or forged.
    _dcgm(
        tmp_path,
        [(0, 88, "team-alpha", "train-0"), (1, 80, "beta-prod", "tokenize-0"), (2, 0, "", "")],
    )
    # The product calls that GPU hijacked, and says where the named pod really runs.
    (hijack,) = _findings("ATTR-001")
    assert hijack["evidence"]["gpu_uuid"] == _uuid(1)
    assert hijack["evidence"]["labels_named"] == [
        {"pod": "beta-prod/tokenize-0", "runs_on": "cpu-1"}
    ]

    # So beta is charged nothing: no row, no chargeback, no busiest GPU of theirs.
    lead = _utilisation(personas["security_lead"])
    days, charged = lead["tenant_days"], _by_tenant(lead["chargeback"])
    assert "beta" not in {row["tenant"] for row in days}
    assert set(charged) == {"alpha", "unattributed"}
    # GPU 1's half hour is nobody's, beside the unlabelled GPU 2's.
    assert charged["unattributed"]["gpu_hours"] == pytest.approx(2 * T, rel=0.02)
    assert charged["unattributed"]["busy_gpu_hours"] == pytest.approx(0.80 * T, rel=0.02)
    assert charged["unattributed"]["confidence"] == "none"
    assert charged["alpha"]["gpu_hours"] == pytest.approx(T, rel=0.02)
    assert charged["alpha"]["confidence"] == "exact"
    assert "beta" not in _csv_tenants(personas["security_lead"])

    # beta's viewer sees no usage at all, nor the hijacked GPU among "their" busiest.
    viewer = _utilisation(personas["viewer_beta"])
    assert viewer["tenant_days"] == [] and viewer["chargeback"] == []
    assert viewer["top_gpus"] == []
    # The label is still what the sample said (the hijack's evidence reads it).
    assert set(GpuReading.objects.filter(uuid=_uuid(1)).values_list("namespace", "pod")) == {
        ("beta-prod", "tokenize-0")
    }


def test_a_label_naming_a_pod_the_sync_lacks_is_booked_unverified(world, personas, tmp_path):
    # GPU 2 is busy under beta's sweep-0, which the last sync does not list (created since).
    _dcgm(tmp_path, [(0, 88, "team-alpha", "train-0"), (2, 70, "beta-prod", "sweep-0")])
    # Not a hijack (a new pod looks the same), but attribution unverified.
    assert _findings("ATTR-001") == []
    (unverified,) = [f for f in _findings("ATTR-002") if f["subject_name"] == "g-a"]
    assert "attribution unverified" in unverified["title"]
    # A job created and gone between two syncs is real usage: booked to beta, never exact.
    charged = _by_tenant(_utilisation(personas["security_lead"])["chargeback"])
    assert charged["beta"]["gpu_hours"] == pytest.approx(T, rel=0.02)
    assert charged["beta"]["confidence"] == "none"
    assert charged["alpha"]["confidence"] == "exact"  # train-0, which the sync has on g-a
    days = _utilisation(personas["viewer_beta"])["tenant_days"]
    assert {(row["tenant"], row["confidence"]) for row in days} == {("beta", "none")}


def test_usage_a_contradicted_label_booked_before_moves_to_nobody(world, personas, tmp_path):
    """What ingest stored before: the named pod's tenant at confidence none (migration 0005)."""
    from telemetry.rebook import all_contradicted_labels_rebook
    from telemetry.rollup import telemetry_rollup
    from tenants.models import Tenant

    _dcgm(tmp_path, [(0, 88, "team-alpha", "train-0"), (1, 80, "beta-prod", "tokenize-0")])
    forged = GpuReading.objects.filter(uuid=_uuid(1))
    forged.update(attribution="tenant", tenant=Tenant.objects.get(slug="beta"), confidence="none")
    telemetry_rollup()
    assert "beta" in _by_tenant(_utilisation(personas["security_lead"])["chargeback"])
    assert all_contradicted_labels_rebook() == SCRAPES
    charged = _by_tenant(_utilisation(personas["security_lead"])["chargeback"])
    assert set(charged) == {"alpha", "unattributed"}
    assert charged["unattributed"]["gpu_hours"] == pytest.approx(T, rel=0.02)
    assert all_contradicted_labels_rebook() == 0  # once is enough
