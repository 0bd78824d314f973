"""A tenant's pod never speaks for the node's GPU stack settings (docs/clusters.md, "A tenant's
pods are never the node's stack"): one running the container toolkit's or the device plugin's
image, with whatever env, sets neither the toolkit's acceptance of NVIDIA_VISIBLE_DEVICES from
unprivileged pods nor the plugin's device-list strategy; STACK-008 reads them from the
platform's pods only, and a re-sync concludes what a fresh sync of the same snapshot does
(rtmanaged2 k13, k14, k46, k47)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from inventory.sources.normalise import normalise

TENANT_NS = "ml-team"
TENANTS = f"""
tenants:
  - slug: ml
    name: ML Team
    trust_class: external
    namespaces: [{TENANT_NS}]
"""
ACCEPT = "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED"
TOOLKIT_IMAGE = "nvcr.io/nvidia/k8s/container-toolkit:v1.17.8-ubuntu20.04"
PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"


def _node(name: str) -> dict[str, Any]:
    labels = {"nvidia.com/gpu.count": "1", "nvidia.com/gpu.product": "NVIDIA-L4"}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {"capacity": {"nvidia.com/gpu": "1"}},
    }


def _pod(namespace: str, name: str, node: str, image: str, env: list | None = None) -> dict:
    container = {"name": name, "image": image, "env": env or []}
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeName": node, "containers": [container]},
        "status": {"phase": "Running"},
    }


def _namespace(name: str) -> dict[str, Any]:
    return {"kind": "Namespace", "metadata": {"name": name}}


def _world(*, tenant_toolkit: bool) -> list[dict[str, Any]]:
    """gpu-a: the platform's device plugin (its default strategy, envvar) and a toolkit on the
    host; gpu-b: nothing of the platform's, the tenant's look-alikes of the toolkit and plugin.
    `tenant_toolkit`: the tenant also runs a toolkit image on gpu-a saying it refuses the
    variable."""
    objects = [
        _namespace("kube-system"),
        _namespace(TENANT_NS),
        _node("gpu-a"),
        _node("gpu-b"),
        _pod("kube-system", "nvidia-device-plugin-a1", "gpu-a", PLUGIN_IMAGE),
        _pod(TENANT_NS, "toolkit-look-alike", "gpu-b", TOOLKIT_IMAGE),
        _pod(TENANT_NS, "plugin-look-alike", "gpu-b", PLUGIN_IMAGE),
    ]
    if tenant_toolkit:
        refuses = [{"name": ACCEPT, "value": "false"}]
        objects.append(_pod(TENANT_NS, "quiet-toolkit", "gpu-a", TOOLKIT_IMAGE, refuses))
    return objects


def test_a_tenants_plugin_image_sets_no_device_list_strategy_of_the_node():
    nodes = {
        n.name: n
        for n in normalise(_world(tenant_toolkit=True), tenant_namespaces=(TENANT_NS,)).nodes
    }
    assert nodes["gpu-a"].device_list_strategy == "envvar"
    assert "kube-system/nvidia-device-plugin-a1" in nodes["gpu-a"].device_list_strategy_source
    # Only the tenant's look-alike runs there: unknown, as where no plugin pod is seen.
    assert nodes["gpu-b"].device_list_strategy is None
    assert TENANT_NS not in nodes["gpu-b"].device_list_strategy_source


def _sync(tmp_path: Path, cluster: str, objects: list[dict[str, Any]]) -> None:
    path = tmp_path / f"{cluster}-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    call_command(
        "sync_cluster",
        "--cluster",
        cluster,
        "--snapshot",
        str(path),
        stdout=StringIO(),
        stderr=StringIO(),
    )
    call_command("score", stdout=StringIO(), stderr=StringIO())


def _open_findings(cluster: str) -> list[dict[str, Any]]:
    out = StringIO()
    call_command(
        "export_findings",
        "--format",
        "json",
        "--status",
        "open",
        "--cluster",
        cluster,
        stdout=out,
        stderr=StringIO(),
    )
    found = json.loads(out.getvalue())
    return found if isinstance(found, list) else found["findings"]


def _stack_008(cluster: str) -> dict[str, dict[str, Any]]:
    """Each STACK-008 finding's evidence, by the node(s) it names."""
    return {
        json.dumps(f["evidence"].get("nodes") or f["subject_name"]): f["evidence"]
        for f in _open_findings(cluster)
        if f["check"] == "STACK-008"
    }


@pytest.fixture
def tenants(db, tmp_path: Path) -> None:
    (tmp_path / "tenants.yaml").write_text(TENANTS)
    call_command("apply_tenants", str(tmp_path / "tenants.yaml"), stdout=StringIO())
    (tmp_path / "tenants.yaml").unlink()


def test_a_tenants_toolkit_image_neither_silences_nor_raises_stack_008(tenants, tmp_path):
    _sync(tmp_path, "c1", _world(tenant_toolkit=True))
    found = _stack_008("c1")
    # gpu-a: the platform's plugin hands GPUs by envvar and the host toolkit's setting is not
    # visible: STACK-008 fires, whatever the tenant's toolkit image says.
    (on_a,) = [ev for where, ev in found.items() if "gpu-a" in where]
    assert on_a["toolkit_accept_envvar_when_unprivileged"]["value"] is None
    # gpu-b: nothing of the platform's states either setting: no finding from the tenant's.
    assert not [where for where in found if "gpu-b" in where]
    assert TENANT_NS not in json.dumps(found)


def test_a_re_sync_concludes_what_a_fresh_sync_of_the_same_snapshot_does(tenants, tmp_path):
    # The snapshots read no ConfigMap, so STACK-008 keeps a finding it no longer reports
    # (posture.judged): one the tenant's toolkit image silenced was kept open on a re-sync,
    # while a fresh sync never raised it.
    _sync(tmp_path, "clu-fresh", _world(tenant_toolkit=True))
    _sync(tmp_path, "clu-hist", _world(tenant_toolkit=False))
    _sync(tmp_path, "clu-hist", _world(tenant_toolkit=True))

    def conclusions(cluster: str) -> list[tuple[str, str, str, str]]:
        return sorted(
            (f["check"], f["subject_kind"], f["subject_namespace"] or "", f["subject_name"])
            for f in _open_findings(cluster)
            if f["check"].startswith(("STACK-", "POD-011"))
        )

    fresh = conclusions("clu-fresh")
    assert ("STACK-008", "Node", "", "gpu-a") in fresh
    assert conclusions("clu-hist") == fresh
    assert _stack_008("clu-hist").keys() == _stack_008("clu-fresh").keys()
