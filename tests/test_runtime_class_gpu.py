"""GPUs reached through NVIDIA's container runtime by RuntimeClass, with no device plugin (k3s on a
Jetson: `runtimeClassName: nvidia` and NVIDIA_VISIBLE_DEVICES=all), end to end: `sync_cluster
--snapshot`, `score`, then the nodes API and the findings export. A world of our own making:
a store node whose two tenants' pods run that way, and nodes where nothing proves a GPU (a pod
naming the class that is still Pending, a pod under Kata with the variable set)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
import yaml
from django.core.management import call_command

from inventory.snapshot import Pod
from inventory.sources.nvidia_runtime import nvidia_runtime_pods
from tests.conftest import api_client

pytestmark = pytest.mark.django_db

CLUSTER = "edge-test"
ORIN, PENDING, KATA, RENAMED, SPOOF = (
    "store-0042-orin",
    "store-0043-orin",
    "store-0044-x86",
    "store-0045-orin",
    "store-0046-x86",
)
TENANTS = {
    "tenants": [
        {
            "slug": "vendor",
            "name": "Vendor",
            "trust_class": "external",
            "namespaces": ["vendor"],
            "viewers": ["viewer-alpha"],
        },
        {"slug": "shop", "name": "Shop", "trust_class": "internal", "namespaces": ["shop"]},
    ]
}


def meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    found = {"name": name, "uid": f"uid-{namespace}-{name}", "labels": {}}
    return {**found, "namespace": namespace} if namespace else found


def node(name: str, kernel: str) -> dict[str, Any]:
    resources = {"cpu": "6", "memory": "7620Mi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta(name),
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "nodeInfo": {"kernelVersion": kernel, "containerRuntimeVersion": "containerd://1.7"},
        },
    }


def runtime_class(name: str, handler: str) -> dict[str, Any]:
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "handler": handler,
        "metadata": meta(name),
    }


def pod(namespace: str, name: str, node_name: str, runtime: str, phase: str = "Running") -> dict:
    env = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    container = {"name": "main", "image": f"registry.example.com/{name}:1.0", "env": env}
    spec = {"containers": [container], "runtimeClassName": runtime, "nodeName": node_name}
    if phase == "Pending":
        del spec["nodeName"]  # not scheduled yet: it never reached a runtime
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta(name, namespace),
        "spec": spec,
        "status": {"phase": phase},
    }


def snapshot() -> dict[str, Any]:
    items = [
        node(ORIN, "5.15.148-tegra"),
        node(PENDING, "5.15.148-tegra"),
        node(KATA, "6.8.0-49-generic"),
        node(RENAMED, "5.15.148-tegra"),
        node(SPOOF, "6.8.0-49-generic"),
        *(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(ns)}
            for ns in ("kube-system", "vendor", "shop")
        ),
        runtime_class("nvidia", "nvidia"),
        runtime_class("nvidia-experimental", "nvidia-experimental"),
        runtime_class("kata", "kata-qemu"),
        runtime_class("jetson-gpu", "nvidia"),  # a class of the platform's own naming
        runtime_class("nvidia-legacy", "runc"),  # named like NVIDIA's, but runc's
        pod("vendor", "shelf-cam", ORIN, "nvidia"),
        pod("shop", "queue-length", ORIN, "nvidia"),
        pod("vendor", "waiting-cam", PENDING, "nvidia", phase="Pending"),
        pod("vendor", "sandboxed", KATA, "kata"),
        pod("shop", "footfall", RENAMED, "jetson-gpu"),
        pod("shop", "counter", SPOOF, "nvidia-legacy"),
    ]
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {}}


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture
def world(tmp_path, personas) -> list[dict]:
    (tmp_path / "tenants.yaml").write_text(yaml.safe_dump(TENANTS))
    (tmp_path / "edge.json").write_text(json.dumps(snapshot()))
    run("apply_tenants", str(tmp_path / "tenants.yaml"))
    synced = run("sync_cluster", "--cluster", CLUSTER, "--snapshot", str(tmp_path / "edge.json"))
    assert "succeeded" in synced
    run("score", "--cluster", CLUSTER)
    return json.loads(
        run("export_findings", "--format", "json", "--cluster", CLUSTER, "--status", "open")
    )


def nodes(personas) -> dict[str, dict]:
    client = api_client(personas["security_lead"])
    rows = client.get("/api/v1/nodes/", {"cluster": CLUSTER, "page_size": 50}).json()["results"]
    return {row["name"]: row for row in rows}


def on(findings: list[dict], check: str, node_name: str) -> list[dict]:
    return [f for f in findings if f["check"] == check and node_name in json.dumps(f)]


def test_a_node_whose_pods_run_under_the_nvidia_runtime_is_a_gpu_node_of_unknown_stack(
    world, personas
):
    orin = nodes(personas)[ORIN]
    assert orin["is_gpu_node"] is True
    assert orin["patch_status"] == "unknown"
    # Nothing counts or names its GPUs: unknown, never guessed, and the basis says what showed
    # them (each pod and its RuntimeClass, with the handler read from the object).
    assert (orin["gpu_model"], orin["gpu_count"]) == (None, None)
    basis = orin["gpu_count_basis"]
    assert "pod vendor/shelf-cam runs with RuntimeClass nvidia (handler nvidia)" in basis
    assert "pod shop/queue-length" in basis
    states = {name: c["state"] for name, c in orin["components"].items()}
    assert states["driver"] == "unknown"  # on the host (JetPack): unknown, not absent
    assert states["container_toolkit"] == "unknown"
    assert states["device_plugin"] == "not_installed"
    assert on(world, "STACK-004", ORIN)


def test_each_tenants_pod_reaching_the_gpu_by_runtime_class_raises_pod011(world):
    found = [f for f in world if f["check"] == "POD-011"]
    assert sorted(
        (f["subject_namespace"], f["severity"]) for f in found if ORIN in json.dumps(f)
    ) == [
        ("shop", "high"),
        ("vendor", "high"),
    ]


def test_the_findings_name_the_runtime_class_and_what_showed_the_gpus(world):
    stack = on(world, "STACK-004", ORIN)[0]["evidence"]
    assert stack["gpus_shown_by"] == [
        "pod shop/queue-length runs with RuntimeClass nvidia (handler nvidia)",
        "pod vendor/shelf-cam runs with RuntimeClass nvidia (handler nvidia)",
    ]
    pod011 = next(f for f in world if f["check"] == "POD-011" and f["subject_name"] == "shelf-cam")
    entry = pod011["evidence"]["pods"][0]
    assert (entry["node"], entry["runtime_class"]) == (ORIN, "nvidia")
    # Whether the host's toolkit honours the variable from unprivileged pods is in a file the
    # API never shows: said unverified, so no time-slicing with the other tenant is claimed.
    assert entry["node_honours_visible_devices"] == "unverified"
    assert not [f for f in world if f["check"].startswith("SHARE-")]


def test_a_tenant_viewer_never_reads_the_other_tenants_pod_in_that_evidence(world, personas):
    client = api_client(personas["viewer_alpha"])
    node_rows = client.get("/api/v1/nodes/", {"cluster": CLUSTER, "page_size": 50}).content
    found = client.get("/api/v1/findings/", {"cluster": CLUSTER, "page_size": 200}).content
    assert b"shelf-cam" in found and b"gpus_shown_by" in found
    assert b"RuntimeClass nvidia (handler nvidia)" in node_rows
    for body in (node_rows, found):
        assert b"queue-length" not in body


def test_a_class_of_another_name_whose_handler_is_nvidias_shows_gpus(world, personas):
    renamed = nodes(personas)[RENAMED]
    assert (renamed["is_gpu_node"], renamed["patch_status"]) == (True, "unknown")
    assert "RuntimeClass jetson-gpu (handler nvidia)" in renamed["gpu_count_basis"]
    assert on(world, "POD-011", RENAMED)


@pytest.mark.parametrize("name", [PENDING, KATA, SPOOF])
def test_a_pending_pod_or_another_runtimes_handler_proves_no_gpu(world, personas, name):
    row = nodes(personas)[name]
    assert (row["is_gpu_node"], row["patch_status"], row["components"]) == (False, None, {})
    assert not on(world, "POD-011", name)
    assert not on(world, "STACK-004", name)


@pytest.mark.parametrize(
    ("runtime_class", "handler", "phase", "shown"),
    [
        ("nvidia", None, "Running", "RuntimeClass nvidia (its RuntimeClass object is not"),
        ("nvidia-cdi", None, "Running", "RuntimeClass nvidia-cdi (its RuntimeClass object"),
        ("gpu", "nvidia-legacy", "Running", "RuntimeClass gpu (handler nvidia-legacy)"),
        ("nvidia", "runc", "Running", None),  # the object's handler wins over the name
        ("runsc", None, "Running", None),
        ("nvidia", "nvidia", "Pending", None),
        ("nvidia", "nvidia", "Succeeded", None),
        (None, None, "Running", None),
    ],
)
def test_what_shows_nvidias_runtime_on_a_node(runtime_class, handler, phase, shown):
    pods = [
        Pod(
            "ns",
            "p",
            node_name="n",
            phase=phase,
            runtime_class=runtime_class,
            runtime_handler=handler,
        )
    ]
    found = nvidia_runtime_pods(pods)
    if shown is None:
        assert found == ()
    else:
        assert len(found) == 1 and found[0].startswith(f"pod ns/p runs with {shown}")
