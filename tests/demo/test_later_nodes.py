"""The demo shows last session's capabilities to a user, through the API and the pages: a vGPU
guest VM's driver from NVAIE's guest driver image and its MIG-backed vGPU as mig_gi; a DRA-only
node's model and driver from its ResourceSlice; Koordinator's GPU share putting two tenants on
one GPU; LEAK-001 through the cloud's burn-in job; an accepted driver finding a later bulletin
reopens. Needs the database: the demo is built through the real paths (once: the checks share
one test)."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from inventory.models import Node, SyncRun
from posture.models import Finding

pytestmark = pytest.mark.django_db
ORBITAL = "cust-orbital"


def _node(client: Client, name: str) -> dict:
    return client.get(f"/api/v1/nodes/{Node.objects.get(name=name).pk}/").json()


def _findings(client: Client, **query: str) -> list[dict]:
    return client.get("/api/v1/findings/", query).json()["results"]


def test_the_demo_shows_guest_vgpu_dra_only_koordinator_burn_in_leak_and_a_reopened_finding():
    call_command("demo", stdout=io.StringIO())
    client = Client()
    client.force_login(User.objects.get(username="admin"))

    # (a) The vGPU guest's driver is its NVAIE guest driver pod's tag, and its MIG-backed vGPU
    # is a GPU instance of clinical's own (mig_gi), never best-effort vGPU.
    guest = _node(client, "pe-vgpu-01")
    assert (guest["gpu_model"], guest["driver_version"]) == ("NVIDIA-A100-4-20C", "535.104.05")
    assert guest["sharing_strategy"] == "vgpu"
    driver = guest["components"]["driver"]["source"]
    assert "vgpu-guest-driver-4:535.104.05" in driver and "vGPU guest driver" in driver
    uses = _findings(client, check="SHARE-004", tenant="clinical", cluster="prod-east")
    (mode,) = [f for f in uses if "sensitive-vgpu" in f["title"]]
    assert mode["evidence"]["observed_mode"] == "mig_gi"
    assert not _findings(client, check="SHARE-008", tenant="clinical")

    # (b) A DRA-only node without GFD labels: model and driver from the DRA driver's slice, the
    # driver in NVIDIA's spelling, judged against the bulletins.
    dra = _node(client, "nw-a100-01")
    assert dra["labels"].get("nvidia.com/gpu.product") is None
    assert (dra["gpu_model"], dra["gpu_count"]) == ("NVIDIA-A100-SXM4-80GB", 8)
    assert dra["driver_version"] == "550.144.03"
    assert "ResourceSlice" in dra["gpu_model_basis"]
    assert "driverVersion of ResourceSlice" in dra["driver_version_basis"]
    assert dra["patch_status"] == "below_baseline"
    # Each GPU of the DRA node two tenants time-slice GPU 0 of reads its own sharing: GPU 0
    # time-sliced, GPU 2 (research's whole H100 from its template) not.
    rows = client.get("/api/v1/gpus/", {"node": "nw-h100-03", "page_size": 50}).json()
    modes = {r["index"]: r["sharing_strategy"] for r in rows["results"]}
    assert modes[0] == "time_slicing" and modes[2] == "none"

    # (c) Koordinator's GPU share: orbital and research on GPU minor 1 of one L40S.
    koord = _node(client, "nw-l40s-03")
    assert koord["sharing_strategy"] == "time_slicing"
    assert "Koordinator" in koord["sharing_basis"]
    shares = _findings(client, check="SHARE-001", cluster="neo-west", tenant="orbital")
    (share,) = [f for f in shares if f["subject_name"] == "fractional"]
    assert share["tenants"] == ["orbital", "research"]
    assert share["evidence"]["co_residence"] == "certain"
    assert any(
        f["subject_name"] == "fractional"
        for f in _findings(client, check="SHARE-003", cluster="neo-west", tenant="research")
    )

    # A build tool's annotation holding a NUL byte on one of orbital's pods: read without it,
    # the sync succeeds and says so (the API server accepts a NUL in an annotation value).
    runs = SyncRun.objects.filter(cluster__name="neo-west", status="succeeded")
    run = runs.latest("started_at")  # the last good one (the demo's last sync fails on purpose)
    (said,) = [w for w in run.warnings if "held a NUL byte" in w]
    assert f"Pod {ORBITAL}/" in said and "removed" in said
    # The annotation's key is the tenant's own text: the place names the map and a count only.
    assert "metadata.annotations (one key)" in said and "build-note" not in said

    # (d) LEAK-001 from sync history: kestrel's whole-node job, the cloud's burn-in, then
    # orbital, with no reset recorded.
    leaks = _findings(client, check="LEAK-001", cluster="neo-west", tenant="kestrel")
    (leak,) = [f for f in leaks if f["subject_name"] == "nw-h200-04"]
    assert leak["tenants"] == ["kestrel", "orbital"]
    assert leak["evidence"]["source"] == "sync_history"
    assert leak["evidence"]["platform_between"] == ["nimbus-burnin/gpu-burnin"]

    # (e) The legacy T4 node's driver finding, accepted as last week's January bulletin left
    # it, is reopened by the April bulletin's new CVEs and higher fix; its page says so.
    listed = _findings(client, check="STACK-001", cluster="prod-east")
    (stack,) = [f for f in listed if f["subject_name"] == "pe-t4-02"]
    assert stack["status"] == "open"
    detail = client.get(f"/api/v1/findings/{stack['id']}/").json()
    assert "more exposure than was accepted" in detail["reopened"]
    assert "CVE-2025-23244" in detail["reopened"] and "535.247.01" in detail["reopened"]
    page = client.get(f"/findings/{stack['id']}/").content.decode()
    assert "reopened" in page and "CVE-2025-23244" in page
    assert Finding.objects.get(pk=stack["id"]).accepted_by.username == "security-lead"
