"""A device plugin given no config file and no config-manager (NVIDIA's static DaemonSet,
flags only) serves whole GPUs, or MIG devices by its MIG strategy, whatever the node's
`nvidia.com/device-plugin.config` label says: only config-manager reads that label. The shape:
the GPU Operator's ClusterPolicy still names a time-slicing ConfigMap (the Operator's own
plugin is off on this node), node g-1 runs the static plugin from kube-system and still wears
the label an earlier config-manager setup left."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from inventory.drift import ClusterState, detect_drift
from inventory.services import cluster_sync_from_snapshot
from inventory.sources.normalise import normalise
from inventory.sync import cluster_get_or_create
from posture.inputs import PostureInputs
from posture.models import Finding
from posture.rules.registry import CHECKS
from posture.services import posture_evaluate
from tests.conftest import api_client
from tests.inventory.normalise_helpers import (
    TIME_SLICING_LOOSE,
    configmap,
    controller,
    ctr,
    node,
    pod,
)
from tests.posture.builders import run, tenant

OPERATOR, NS = "gpu-operator", "kube-system"
IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
CONFIGS = "time-slicing-config"
LABEL = "nvidia.com/device-plugin.config"
TIME_SLICING = TIME_SLICING_LOOSE
# The same, renamed: the plugin would advertise nvidia.com/gpu.shared, so its nvidia.com/gpu
# capacity alone does not contradict the config.
RENAMED = TIME_SLICING.replace("  timeSlicing:\n", "  timeSlicing:\n    renameByDefault: true\n")
POLICY = {
    "apiVersion": "nvidia.com/v1",
    "kind": "ClusterPolicy",
    "metadata": {"name": "cluster-policy"},
    "spec": {"devicePlugin": {"config": {"name": CONFIGS, "default": ""}}},
}
TENANTS = (tenant("alpha", namespaces=("a",)), tenant("beta", namespaces=("b",)))


def _static_plugin(*args: str, manager: bool = False) -> list[dict[str, Any]]:
    """The static manifest's DaemonSet and its pod on g-1 (flags only, no config file); with
    `manager`, the same plugin beside a config-manager sidecar, which reads the label."""
    plugin = ctr("nvidia-device-plugin-ctr", IMAGE, args=list(args))
    plugin["volumeMounts"] = [{"name": "dp", "mountPath": "/var/lib/kubelet/device-plugins"}]
    volumes: list[dict[str, Any]] = [
        {"name": "dp", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}}
    ]
    containers = [plugin]
    if manager:
        sidecar = ctr("config-manager", IMAGE, command=["config-manager"])
        containers.append(sidecar)
    ds = controller("DaemonSet", NS, "nvidia-device-plugin-daemonset", IMAGE)
    ds["spec"]["template"]["spec"].update(containers=containers, volumes=volumes)
    running = pod(NS, "nvidia-device-plugin-daemonset-x1", *containers, node_name="g-1")
    running["spec"]["volumes"] = volumes
    running["metadata"]["ownerReferences"] = [
        {"kind": "DaemonSet", "name": "nvidia-device-plugin-daemonset"}
    ]
    return [ds, running]


def _tenant_pods() -> list[dict[str, Any]]:
    """One pod of each tenant on g-1, each holding one nvidia.com/gpu."""
    gpu = {"limits": {"nvidia.com/gpu": "1"}}
    return [pod(t, "train", ctr("train", resources=gpu), node_name="g-1") for t in ("a", "b")]


def _snapshot(*objects: dict[str, Any], label: str = "a100-ts", capacity: str = "4"):
    labels = {"nvidia.com/gpu.count": "4", **({LABEL: label} if label else {})}
    world = [
        node("g-1", labels, capacity={"nvidia.com/gpu": capacity}),
        controller("Deployment", OPERATOR, "gpu-operator", "nvcr.io/nvidia/gpu-operator:v24.9.0"),
        POLICY,
        configmap(
            OPERATOR,
            CONFIGS,
            {"a100-ts": TIME_SLICING, "a100-ts2": TIME_SLICING, "a100-shared": RENAMED},
        ),
        *_tenant_pods(),
        *objects,
    ]
    return normalise(world, configured_platform=(OPERATOR, NS))


def _g1(*objects: dict[str, Any], **kw: Any):
    return next(n for n in _snapshot(*objects, **kw).nodes if n.name == "g-1")


def _share_findings(snapshot) -> dict[str, int]:
    world = PostureInputs("c", snapshot, TENANTS)
    found = {c: len(run(c, world)) for c in sorted(CHECKS) if c.startswith("SHARE-")}
    return {c: n for c, n in found.items() if n}


@pytest.mark.parametrize("label", ["a100-ts", "a100-shared"])
def test_the_static_plugin_serves_whole_gpus_whatever_a_stale_label_says(label):
    """Before, the label's config made g-1 unknown (its capacity contradicts 4 replicas:
    STACK-007) or, renamed, time-sliced (SHARE-001 between alpha and beta)."""
    snapshot = _snapshot(*_static_plugin(), label=label)
    g1 = next(n for n in snapshot.nodes if n.name == "g-1")
    assert (g1.sharing_strategy, g1.time_slicing_replicas) == ("none", None)
    assert g1.device_plugin_config_used == ""  # no config in force
    assert g1.device_plugin_label_read is False
    assert g1.unreadable_configs == ()  # not unknown: no STACK-007
    assert g1.resource_sharing == ()
    # The node page and the API say which config is in force and why the label is ignored.
    assert "no device-plugin config in force" in g1.sharing_basis
    assert "kube-system/nvidia-device-plugin-daemonset-x1" in g1.sharing_basis
    assert f"ignores the node's label {LABEL}={label} " in g1.sharing_basis
    # Two tenants each holding a whole GPU of g-1 share none: no co-tenancy finding (before,
    # the unknown node gave SHARE-001, SHARE-003, SHARE-004); the ConfigMap's keys stay
    # SHARE-005, latent as no node reads them (at the catalogue's medium: DESIGN §5).
    world = PostureInputs("c", snapshot, TENANTS)
    assert set(_share_findings(snapshot)) == {"SHARE-005"}
    assert {(f.severity, tuple(f.evidence["nodes_using_it"])) for f in run("SHARE-005", world)} == {
        ("", ())
    }
    assert run("STACK-007", world) == []


def test_the_static_plugin_with_a_mig_strategy_serves_mig_devices_by_its_flag():
    g1 = _g1(*_static_plugin("--mig-strategy=single"))
    assert (g1.sharing_strategy, g1.mig_strategy) == ("none", "single")
    assert "MIG devices by its MIG strategy single" in g1.sharing_basis


def test_only_the_daemonset_in_the_snapshot_its_template_decides():
    ds, _ = _static_plugin()
    g1 = _g1(ds)
    assert (g1.sharing_strategy, g1.device_plugin_label_read) == ("none", False)
    assert "DaemonSet kube-system/nvidia-device-plugin-daemonset" in g1.sharing_basis


def test_with_config_manager_the_label_is_read_as_before():
    # Regression guard: a config-manager reads the label, so its config is in force.
    g1 = _g1(*_static_plugin(manager=True), capacity="16")
    assert (g1.sharing_strategy, g1.time_slicing_replicas) == ("time_slicing", 4)
    assert g1.device_plugin_config_used == f"{OPERATOR}/{CONFIGS}:a100-ts"
    assert g1.device_plugin_label_read is True
    assert g1.sharing_basis == ""


def test_with_no_plugin_in_the_snapshot_the_label_decides_and_the_basis_says_so():
    """Nothing shows which plugin runs on g-1: the label's config is taken as before (fail
    closed), and the basis says it is not known to be in force."""
    snapshot = _snapshot(capacity="16")
    g1 = next(n for n in snapshot.nodes if n.name == "g-1")
    assert (g1.sharing_strategy, g1.time_slicing_replicas) == ("time_slicing", 4)
    assert g1.device_plugin_label_read is None
    assert g1.sharing_basis.startswith(f"config {OPERATOR}/{CONFIGS}:a100-ts taken as in force")
    assert "the node's device plugin is not in the snapshot" in g1.sharing_basis
    assert "SHARE-001" in _share_findings(snapshot)


def test_an_unlabelled_node_under_the_static_plugin_has_no_basis_to_give():
    g1 = _g1(*_static_plugin(), label="")
    assert (g1.sharing_strategy, g1.sharing_basis) == ("none", "")


def _state(snapshot) -> ClusterState:
    return ClusterState(nodes=snapshot.nodes, sharing_configs=snapshot.sharing_configs)


def test_a_flip_of_the_unread_label_is_no_drift001_but_a_label_change():
    before = _state(_snapshot(*_static_plugin()))
    after = _state(_snapshot(*_static_plugin(), label="a100-ts2"))
    changes = detect_drift(before, after)
    assert [c for c in changes if c.check_id == "DRIFT-001"] == []
    (label,) = [c for c in changes if c.check_id == "DRIFT-003"]
    assert label.before["labels"] == {LABEL: "a100-ts"}
    assert label.after["labels"] == {LABEL: "a100-ts2"}
    assert "does not read" in label.after["note"]


def test_under_config_manager_the_label_flip_is_drift001_of_the_config_in_force():
    plugin = _static_plugin(manager=True)
    before = _state(_snapshot(*plugin, capacity="16"))
    after = _state(_snapshot(*plugin, label="a100-ts2", capacity="16"))
    changes = detect_drift(before, after)
    (sharing,) = [c for c in changes if c.check_id == "DRIFT-001"]
    assert sharing.before == {"device_plugin_config": f"{OPERATOR}/{CONFIGS}:a100-ts"}
    assert sharing.after == {"device_plugin_config": f"{OPERATOR}/{CONFIGS}:a100-ts2"}
    assert [c for c in changes if c.check_id == "DRIFT-003"] == []


def test_under_config_manager_a_flip_between_two_missing_keys_is_still_drift001():
    plugin = _static_plugin(manager=True)
    before = _state(_snapshot(*plugin, label="gone-1"))
    after = _state(_snapshot(*plugin, label="gone-2"))
    (sharing,) = [c for c in detect_drift(before, after) if c.check_id == "DRIFT-001"]
    assert sharing.before == {"device_plugin_config_label": "gone-1"}
    assert sharing.after == {"device_plugin_config_label": "gone-2"}


def test_a_node_stored_before_the_config_in_force_was_recorded_compares_labels():
    """One side without the config in force recorded: the labels are compared (as before),
    not a label with a config reference, which would differ on every node once."""
    snapshot = _snapshot(*_static_plugin(manager=True), capacity="16")
    legacy = tuple(
        replace(n, device_plugin_config_used=None, device_plugin_label_read=None)
        for n in snapshot.nodes
    )
    changes = detect_drift(ClusterState(nodes=legacy), _state(snapshot))
    assert [c for c in changes if c.check_id == "DRIFT-001" and c.subject_kind == "Node"] == []


def test_where_the_nodes_capacity_shows_sharing_the_plugins_reading_is_not_trusted():
    """More nvidia.com/gpu than GPUs: the plugin runs with something the snapshot does not show
    (a pod spec cut short), so the label semantics stand and no basis claims whole GPUs."""
    g1 = _g1(*_static_plugin(), capacity="16")
    assert (g1.sharing_strategy, g1.time_slicing_replicas) == ("time_slicing", 4)
    assert g1.device_plugin_label_read is None
    assert g1.device_plugin_config_used == f"{OPERATOR}/{CONFIGS}:a100-ts"
    assert g1.sharing_basis == ""


def _world_file(tmp_path, name: str, label: str):
    world = [
        node("g-1", {"nvidia.com/gpu.count": "4", LABEL: label}, capacity={"nvidia.com/gpu": "4"}),
        controller("Deployment", OPERATOR, "gpu-operator", "nvcr.io/nvidia/gpu-operator:v24.9.0"),
        POLICY,
        configmap(OPERATOR, CONFIGS, {"a100-ts": TIME_SLICING, "a100-ts2": TIME_SLICING}),
        *_static_plugin(),
    ]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"kind": "List", "items": world}))
    return path


@pytest.mark.django_db
def test_synced_a_stale_label_flip_is_no_drift001_and_the_api_says_why(
    tmp_path, settings, personas
):
    settings.GPUPOSTURE_PLATFORM_NAMESPACES = [OPERATOR, NS]
    cluster = cluster_get_or_create(name="static")
    for version, label in (("v1", "a100-ts"), ("v2", "a100-ts2")):
        path = _world_file(tmp_path, version, label)
        assert cluster_sync_from_snapshot(cluster=cluster, paths=[path]).status == "succeeded"
    posture_evaluate()
    assert not Finding.objects.filter(check_id="DRIFT-001", subject_name="g-1").exists()
    (label_change,) = Finding.objects.filter(check_id="DRIFT-003", subject_name="g-1")
    assert label_change.evidence["after"]["labels"] == {LABEL: "a100-ts2"}
    (g1,) = (
        api_client(personas["security_lead"]).get("/api/v1/nodes/?cluster=static").json()["results"]
    )
    assert (g1["sharing_strategy"], g1["time_slicing_replicas"]) == ("none", None)
    assert g1["sharing_basis"].startswith("no device-plugin config in force: device-plugin pod")
    assert f"ignores the node's label {LABEL}=a100-ts2" in g1["sharing_basis"]
