"""RuntimeClasses listed live (node.k8s.io/v1) and read as from a snapshot: the same cluster
synced both ways stores each pod with the same handler, so a class whose handler is Kata's
runs its pod in a VM (no POD-011) and one whose handler is NVIDIA's shows its node's GPUs,
whatever the classes are named. A watch re-sync keeps the handler of the pods it rewrites; an
account that may not list RuntimeClasses syncs with a warning (the official client against
the fake API server, tests/kubeapi.py)."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import pytest
import yaml
from django.core.management import call_command

from inventory.services import cluster_sync
from inventory.sources.kube import KubeSettings, KubeSource
from inventory.sources.nvidia_runtime import vm_runtime
from inventory.sync import cluster_get_or_create
from posture.read_model import cluster_snapshot
from tests.kubeapi import LIST_PATHS, FakeKubeAPI
from tests.test_runtime_class_gpu import TENANTS, meta, node, pod, runtime_class

pytestmark = pytest.mark.django_db

CLASSES = LIST_PATHS["RuntimeClass"]
GPU, ORIN = "gpu-a100-0", "store-0045-orin"


def gpu_node(name: str) -> dict[str, Any]:
    found = node(name, "6.8.0-49-generic")
    for key in ("capacity", "allocatable"):
        found["status"][key] = {**found["status"][key], "nvidia.com/gpu": "1"}
    return found


def world() -> list[dict[str, Any]]:
    """Classes whose names do not say their handlers: read by name, the Kata pod would be
    judged as a container of its GPU node and the Jetson's node as no GPU node."""
    return [
        gpu_node(GPU),
        node(ORIN, "5.15.148-tegra"),
        *(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(ns)}
            for ns in ("vendor", "shop")
        ),
        runtime_class("confidential", "kata-qemu-nvidia-gpu"),
        runtime_class("jetson-gpu", "nvidia"),
        pod("vendor", "enclave", GPU, "confidential"),
        pod("shop", "footfall", ORIN, "jetson-gpu"),
    ]


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def live_source(api: FakeKubeAPI, tmp_path) -> KubeSource:
    return KubeSource(
        kubeconfig=str(api.kubeconfig(tmp_path)),
        context="fake",
        settings=KubeSettings(page_size=1, read_timeout=5.0),  # one class a page
    )


def synced_from_snapshot(tmp_path, name: str):
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": world()}))
    assert "succeeded" in run("sync_cluster", "--cluster", name, "--snapshot", str(path))
    return cluster_get_or_create(name=name)


def handlers(cluster) -> dict[str, tuple[str | None, str | None]]:
    return {
        f"{p.namespace}/{p.name}": (p.runtime_class, p.runtime_handler)
        for p in cluster_snapshot(cluster).pods
    }


def gpu_nodes(cluster) -> dict[str, tuple[bool, str]]:
    return {n.name: (n.is_gpu_node, n.gpu_count_basis) for n in cluster_snapshot(cluster).nodes}


def verdicts(name: str) -> set[tuple[str, str]]:
    """(check, what it is about) of each open finding of the cluster."""
    run("score", "--cluster", name)
    found = json.loads(
        run("export_findings", "--format", "json", "--cluster", name, "--status", "open")
    )
    return {(f["check"], f["title"]) for f in found if f["check"] in ("POD-011", "STACK-004")}


@pytest.fixture(autouse=True)
def tenants(tmp_path, settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 24  # a second sync watches
    (tmp_path / "tenants.yaml").write_text(yaml.safe_dump(TENANTS))
    run("apply_tenants", str(tmp_path / "tenants.yaml"))


def test_runtime_classes_are_listed_live_and_read_as_from_a_snapshot(tmp_path):
    snapshot = synced_from_snapshot(tmp_path, "edge-snapshot")
    with FakeKubeAPI(world()) as api:
        live = cluster_get_or_create(name="edge-live")
        synced = cluster_sync(cluster=live, source=live_source(api, tmp_path))
        listed = [r for r in api.requests if r.path == CLASSES]
    assert (synced.status, synced.warnings) == ("succeeded", [])
    assert len(listed) == 2  # paginated: a page per class at page_size 1
    assert (
        handlers(live)
        == handlers(snapshot)
        == {
            "shop/footfall": ("jetson-gpu", "nvidia"),
            "vendor/enclave": ("confidential", "kata-qemu-nvidia-gpu"),
        }
    )
    assert gpu_nodes(live) == gpu_nodes(snapshot)
    assert gpu_nodes(live)[ORIN][0] is True  # NVIDIA's handler shows the Jetson's GPUs
    assert "RuntimeClass jetson-gpu (handler nvidia)" in gpu_nodes(live)[ORIN][1]


def test_a_kata_pod_and_a_nvidia_class_pod_get_the_same_verdicts_live(tmp_path):
    synced_from_snapshot(tmp_path, "edge-snapshot")
    with FakeKubeAPI(world()) as api:
        cluster_sync(
            cluster=cluster_get_or_create(name="edge-live"), source=live_source(api, tmp_path)
        )
    live, snapshot = verdicts("edge-live"), verdicts("edge-snapshot")
    assert live == snapshot
    # The Kata pod's variable reaches no host GPU; the Jetson pod's reaches its node's.
    assert not any("enclave" in title for check, title in live if check == "POD-011")
    assert any("footfall" in title for check, title in live if check == "POD-011")


def test_a_watch_re_sync_keeps_the_handler_of_the_pods_it_rewrites(tmp_path):
    with FakeKubeAPI(world()) as api:
        cluster = cluster_get_or_create(name="edge-watch")
        assert cluster_sync(cluster=cluster, source=live_source(api, tmp_path)).mode == "full"
        changed = copy.deepcopy(world())
        enclave = next(o for o in changed if o["metadata"]["name"] == "enclave")
        enclave["metadata"]["labels"] = {"build": "2"}  # a pod update, its class unchanged
        # A new pod naming a class its stored pods name.
        changed.append(pod("vendor", "enclave-2", GPU, "confidential"))
        api.replace_objects(changed)
        cluster.refresh_from_db()
        watched = cluster_sync(cluster=cluster, source=live_source(api, tmp_path))
    assert (watched.status, watched.mode) == ("succeeded", "watch")
    assert handlers(cluster)["vendor/enclave"] == ("confidential", "kata-qemu-nvidia-gpu")
    assert handlers(cluster)["vendor/enclave-2"] == ("confidential", "kata-qemu-nvidia-gpu")
    (stored,) = [p for p in cluster_snapshot(cluster).pods if p.name == "enclave-2"]
    assert "handler kata-qemu-nvidia-gpu" in (vm_runtime(stored) or "")


@pytest.mark.parametrize(
    "change",
    [
        pytest.param("class", id="a class created"),
        pytest.param("pod", id="a pod naming a class no stored pod names"),
    ],
)
def test_a_class_the_stored_pods_do_not_give_is_read_by_a_full_list(tmp_path, change):
    sandboxed = runtime_class("sandboxed", "kata-clh")
    # A class the first list read with no pod naming it: no stored pod gives its handler.
    with FakeKubeAPI([*world(), sandboxed] if change == "pod" else world()) as api:
        cluster = cluster_get_or_create(name="edge-new-class")
        cluster_sync(cluster=cluster, source=live_source(api, tmp_path))
        changed = [*world(), sandboxed]
        if change == "pod":
            changed.append(pod("vendor", "sandbox", GPU, "sandboxed"))
        api.replace_objects(changed)
        cluster.refresh_from_db()
        again = cluster_sync(cluster=cluster, source=live_source(api, tmp_path))
    assert (again.status, again.mode) == ("succeeded", "full")
    assert any("listed everything" in w and "sandboxed" in w for w in again.warnings)
    if change == "pod":
        assert handlers(cluster)["vendor/sandbox"] == ("sandboxed", "kata-clh")


def test_an_account_that_may_not_list_runtime_classes_syncs_with_a_warning(tmp_path):
    with FakeKubeAPI(world()) as api:
        api.forbid(CLASSES)
        cluster = cluster_get_or_create(name="edge-no-grant")
        synced = cluster_sync(cluster=cluster, source=live_source(api, tmp_path))
    assert synced.status == "succeeded"
    (warning,) = synced.warnings
    assert "RuntimeClass could not be listed" in warning and "HTTP 403" in warning
    assert "runtimeclasses.node.k8s.io" in warning
    # Judged by the class name, and said so: the names here do not give the handlers.
    assert handlers(cluster)["vendor/enclave"] == ("confidential", None)
