"""A GKE cluster end to end (`sync_cluster --snapshot`, then `score`): GKE runs no GPU Feature
Discovery, so its GPU nodes say how they share only through GKE's own labels. Two node pools of
our own making: L4 GPUs time-shared by GKE (a sensitive and an external tenant on one physical
GPU) and A100s partitioned into MIG instances by GKE."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
import yaml
from django.core.management import call_command

from tests.conftest import api_client
from tests.gke_world import GKE, gke_node, meta

pytestmark = pytest.mark.django_db

PLUGIN = "gke.gcr.io/nvidia-gpu-device-plugin:v0.0.35-gke.1"
TENANTS = {
    "tenants": [
        {"slug": "vision", "name": "Vision", "trust_class": "sensitive", "namespaces": ["vision"]},
        {
            "slug": "partner",
            "name": "Partner",
            "trust_class": "external",
            "namespaces": ["partner"],
        },
    ]
}


def pod(
    namespace: str, name: str, node_name: str, image: str, gpus: int = 0, owner: str = ""
) -> dict:
    resources = {"limits": {"nvidia.com/gpu": str(gpus)}, "requests": {"nvidia.com/gpu": str(gpus)}}
    container = {"name": "main", "image": image, **({"resources": resources} if gpus else {})}
    extra = {"ownerReferences": [{"kind": "DaemonSet", "name": owner}]} if owner else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta(name, namespace, **extra),
        "spec": {
            "nodeName": node_name,
            "serviceAccountName": "default",
            "containers": [container],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        },
        "status": {"phase": "Running"},
    }


def snapshot() -> dict[str, Any]:
    l4, a100 = "gke-ml-l4-shared-7f2c", "gke-ml-a100-mig-91d0"
    plugin_ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": meta("nvidia-gpu-device-plugin-small-cos", "kube-system"),
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "nvidia-gpu-device-plugin", "image": PLUGIN}],
                    "tolerations": [{"operator": "Exists"}],
                }
            }
        },
    }
    image = "registry.example.internal/{}/app@sha256:" + "c" * 64
    items = [
        gke_node(
            l4,
            "l4-shared",
            4,
            **{
                GKE + "gke-accelerator": "nvidia-l4",
                GKE + "gke-gpu-driver-version": "latest",
                GKE + "gke-gpu-sharing-strategy": "time-sharing",
                GKE + "gke-max-shared-clients-per-gpu": "4",
            },
        ),
        gke_node(
            a100,
            "a100-mig",
            2,
            **{
                GKE + "gke-accelerator": "nvidia-tesla-a100",
                GKE + "gke-gpu-driver-version": "latest",
                GKE + "gke-gpu-partition-size": "3g.20gb",
            },
        ),
        *(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(ns)}
            for ns in ("kube-system", "vision", "partner")
        ),
        plugin_ds,
        LEFTOVER_CONFIG,
        *(
            pod(
                "kube-system",
                f"nvidia-gpu-device-plugin-small-cos-{n[-4:]}",
                n,
                PLUGIN,
                owner="nvidia-gpu-device-plugin-small-cos",
            )
            for n in (l4, a100)
        ),
        pod("vision", "embedder-0", l4, image.format("vision"), gpus=1),
        pod("partner", "notebook-0", l4, image.format("partner"), gpus=1),
        pod("vision", "finetune-0", a100, image.format("vision"), gpus=1),
        pod("partner", "eval-0", a100, image.format("partner"), gpus=1),
    ]
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {}}


# A time-slicing config left in kube-system by an earlier GPU Operator trial, without
# failRequestsGreaterThanOne: GKE's device plugin never reads it, so it decides no node here.
LEFTOVER_CONFIG = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": meta("time-slicing-config", "kube-system"),
    "data": {
        "any": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
        "    - name: nvidia.com/gpu\n      replicas: 8\n"
    },
}


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture
def gke_world(tmp_path, personas):
    (tmp_path / "tenants.yaml").write_text(yaml.safe_dump(TENANTS))
    (tmp_path / "gke.json").write_text(json.dumps(snapshot()))
    run("apply_tenants", str(tmp_path / "tenants.yaml"))
    assert "succeeded" in run(
        "sync_cluster", "--cluster", "gke-ml", "--snapshot", str(tmp_path / "gke.json")
    )
    run("score", "--cluster", "gke-ml")
    findings = json.loads(
        run("export_findings", "--format", "json", "--cluster", "gke-ml", "--status", "open")
    )
    return findings


def by_check(findings: list[dict], check: str) -> list[dict]:
    return [f for f in findings if f["check"] == check]


def test_tenants_time_sharing_a_gke_gpu_are_found(gke_world):
    for check in ("SHARE-001", "SHARE-007"):
        found = by_check(gke_world, check)
        assert [f["tenants"] for f in found] == [["partner", "vision"]], check
        assert "l4-shared" in json.dumps(found[0]) or "gke-ml-l4-shared-7f2c" in json.dumps(
            found[0]
        )
        assert "a100" not in json.dumps(found[0]["evidence"])  # MIG instances are not time-shared


def test_gke_time_sharing_raises_no_share005(gke_world):
    # GKE rejects a container asking for more than one shared GPU, and its device plugin reads
    # no NVIDIA ConfigMap: the leftover config is nothing a GKE node uses.
    assert by_check(gke_world, "SHARE-005") == []


def test_the_node_api_shows_what_gke_labels_say(gke_world, personas):
    client = api_client(personas["security_lead"])
    rows = client.get("/api/v1/nodes/", {"cluster": "gke-ml"}).json()["results"]
    nodes = {row["name"]: row for row in rows}
    l4, a100 = nodes["gke-ml-l4-shared-7f2c"], nodes["gke-ml-a100-mig-91d0"]
    assert (l4["gpu_model"], l4["gpu_count"]) == ("NVIDIA-L4", 1)
    assert (l4["sharing_strategy"], l4["time_slicing_replicas"]) == ("time_slicing", 4)
    assert (a100["gpu_model"], a100["sharing_strategy"]) == ("NVIDIA-A100-40GB", "mig")
    assert l4["driver_version"] is None  # gke-gpu-driver-version "latest" is a channel
    assert l4["device_plugin_version"] is None  # a GKE build tag, not an NVIDIA release
    filtered = client.get("/api/v1/nodes/", {"cluster": "gke-ml", "gpu_model": "A100"}).json()
    assert [row["name"] for row in filtered["results"]] == ["gke-ml-a100-mig-91d0"]


def test_gkes_device_plugin_is_deployed_with_an_unknown_version_and_no_nvidia_defaults(gke_world):
    for finding in by_check(gke_world, "STACK-004"):
        deployed = finding["evidence"]["deployed"]["device_plugin_version"]
        assert "GKE build" in deployed and "v0.0.35-gke.1" in deployed
        assert "device_plugin" not in finding["evidence"]["not_installed"]
    assert len(by_check(gke_world, "STACK-004")) == 2
    # NVIDIA's plugin defaults to the envvar device-list strategy; GKE's plugin is not NVIDIA's,
    # so nothing here says the node honours NVIDIA_VISIBLE_DEVICES from unprivileged pods.
    assert by_check(gke_world, "STACK-008") == []


def test_the_mig_partitioner_reads_gkes_partition_size(gke_world, personas):
    client = api_client(personas["platform_engineer"])
    query = {"cluster": "gke-ml", "node": "gke-ml-a100-mig-91d0"}
    data = client.get("/api/v1/mig/node-layout/", query).json()
    assert data["valid"] and data["model"] == "A100-40GB"
    assert data["config_name"] == "3g.20gb" and "gke-gpu-partition-size" in data["source"]
    assert [p["profile"] for p in data["placements"]] == ["3g.20gb", "3g.20gb"]


def test_gkes_own_plugin_and_driver_are_upgraded_with_the_gke_node_pool(gke_world, personas):
    """GKE's plugin DaemonSet in kube-system is GKE's, not a chart of the user's own (GKE
    reverts edits to it): the node page says a GKE node pool upgrade moves it and the driver."""
    from django.test import Client

    from inventory.models import Node

    node = Node.objects.get(name="gke-ml-l4-shared-7f2c")
    by = node.data["upgrade_by"]
    assert by["device_plugin"] == "GKE node pool" and by["driver"] == "GKE node pool", by
    client = Client()
    client.force_login(personas["platform_engineer"])
    page = client.get(f"/nodes/gke-ml/{node.name}/").content.decode()
    assert 'data-upgrade-by="GKE node pool">upgraded by: GKE node pool' in page
    assert "own chart" not in page
