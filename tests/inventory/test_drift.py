"""Drift between two good syncs (pure) and its DRIFT- findings (through sync and score)."""

from __future__ import annotations

import copy
import json
from datetime import timedelta

import pytest
from django.utils import timezone

from inventory import snapshot as snap
from inventory.drift import ClusterState, detect_drift, is_gpu_component
from inventory.models import DriftEvent
from inventory.services import cluster_sync_from_snapshot
from posture.models import Finding
from posture.services import posture_evaluate
from tests.conftest import load_json


def gpu_node(**changes) -> snap.Node:
    base = snap.Node(
        name="gpu-1",
        gpu_count=4,
        gpu_model="NVIDIA-L40S",
        labels={"gpuposture.io/pool": "a", "nvidia.com/gfd.timestamp": "1700000000"},
        taints=(snap.Taint("gpuposture.io/trust-class", "internal", "NoSchedule"),),
        sharing_strategy="time_slicing",
        time_slicing_replicas=4,
        device_plugin_config="ts-4",
    )
    return snap.Node(**{**base.__dict__, **changes})


def ts_config(**changes) -> snap.SharingConfig:
    base = dict(
        namespace="gpu-operator", configmap="tsc", key="ts-4", mode="time_slicing", replicas=4
    )
    return snap.SharingConfig(**{**base, **changes})


def test_nothing_changed_no_drift():
    state = ClusterState(nodes=(gpu_node(),), sharing_configs=(ts_config(),))
    assert detect_drift(state, state) == []


def test_volatile_gfd_timestamp_is_not_drift():
    before = ClusterState(nodes=(gpu_node(),))
    after = ClusterState(
        nodes=(gpu_node(labels={**gpu_node().labels, "nvidia.com/gfd.timestamp": "1800000000"}),)
    )
    assert detect_drift(before, after) == []


def device_plugin(tag: str) -> snap.Workload:
    image = f"nvcr.io/nvidia/k8s-device-plugin:{tag}"
    name = "nvidia-device-plugin-daemonset"
    return snap.Workload("DaemonSet", "gpu-operator", name, images={"p": image}, spec_hash=tag)


def web(tag: str) -> snap.Workload:
    return snap.Workload(
        "Deployment", "shop", "web", images={"w": f"shop/web:{tag}"}, spec_hash=tag
    )


TAINT = "gpuposture.io/trust-class=internal:NoSchedule"
CASES = {
    "replicas": (
        ClusterState(sharing_configs=(ts_config(),)),
        ClusterState(sharing_configs=(ts_config(replicas=8),)),
        "DRIFT-001",
        {"replicas": 4},
        {"replicas": 8},
    ),
    "config-added": (
        ClusterState(),
        ClusterState(sharing_configs=(ts_config(),)),
        "DRIFT-001",
        {"present": False},
        {"mode": "time_slicing"},
    ),
    "node-replicas": (
        ClusterState(nodes=(gpu_node(),)),
        ClusterState(nodes=(gpu_node(time_slicing_replicas=8),)),
        "DRIFT-001",
        {"time_slicing_replicas": 4},
        {"time_slicing_replicas": 8},
    ),
    "taint-removed": (
        ClusterState(nodes=(gpu_node(),)),
        ClusterState(nodes=(gpu_node(taints=()),)),
        "DRIFT-003",
        {"taints": [TAINT]},
        {"taints": []},
    ),
    "pool-label": (
        ClusterState(nodes=(gpu_node(),)),
        ClusterState(nodes=(gpu_node(labels={"gpuposture.io/pool": "b"}),)),
        "DRIFT-003",
        {"labels": {"gpuposture.io/pool": "a"}},
        {"labels": {"gpuposture.io/pool": "b"}},
    ),
    "device-plugin-image": (
        ClusterState(workloads=(device_plugin("v0.17.0"),)),
        ClusterState(workloads=(device_plugin("v0.17.1"),)),
        "DRIFT-002",
        {"images": {"p": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}},
        {"images": {"p": "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"}},
    ),
}


@pytest.mark.parametrize(
    "before, after, check_id, expect_before, expect_after", CASES.values(), ids=CASES.keys()
)
def test_each_change_is_reported_with_before_and_after(
    before, after, check_id, expect_before, expect_after
):
    changes = detect_drift(before, after)
    assert [c.check_id for c in changes] == [check_id]
    assert expect_before.items() <= changes[0].before.items()
    assert expect_after.items() <= changes[0].after.items()


SUBSET = snap.SharingEntry("nvidia.com/gpu", "nvidia.com/gpu-ts", 4, devices=("0", "1"))


def test_a_changed_device_subset_is_drift():
    before = ClusterState(sharing_configs=(ts_config(entries=(SUBSET,)),))
    wider = snap.SharingEntry("nvidia.com/gpu", "nvidia.com/gpu-ts", 4, devices=("0", "1", "2"))
    (change,) = detect_drift(before, ClusterState(sharing_configs=(ts_config(entries=(wider,)),)))
    assert change.check_id == "DRIFT-001" and "entries" in change.summary
    assert change.after["entries"][0]["devices"] == ["0", "1", "2"]


def test_a_config_stored_before_entries_were_kept_is_no_drift():
    """The first sync after the upgrade reads entries the stored copy never had."""
    before = ClusterState(sharing_configs=(ts_config(),))
    after = ClusterState(sharing_configs=(ts_config(entries=(SUBSET,)),))
    assert detect_drift(before, after) == []


def test_an_unrelated_application_is_not_a_gpu_component():
    assert (
        detect_drift(ClusterState(workloads=(web("1"),)), ClusterState(workloads=(web("2"),))) == []
    )


# --- through sync and score -----------------------------------------------------------------


def write(tmp_path, objects, name):
    path = tmp_path / name
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    return path


@pytest.mark.django_db
def test_drift_events_and_findings_after_a_changed_sync(small_world, tmp_path):
    assert not DriftEvent.objects.exists()  # a first sync has nothing to compare with
    objects = copy.deepcopy(load_json("small-cluster.json")["items"])
    for obj in objects:
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == "time-slicing-config":
            obj["data"]["ts-4"] = obj["data"]["ts-4"].replace("replicas: 4", "replicas: 8")
        if obj["kind"] == "Node" and obj["metadata"]["name"] == "gpu-ts-1":
            obj["spec"]["taints"] = [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]
        if obj["kind"] == "Deployment":
            obj["spec"]["template"]["spec"]["containers"][0]["image"] = (
                "nvcr.io/nvidia/gpu-operator:v24.9.3"
            )
    run = cluster_sync_from_snapshot(
        cluster=small_world, paths=[write(tmp_path, objects, "v2.json")]
    )
    assert run.changes["drift_events"] == 3
    assert set(DriftEvent.objects.values_list("check_id", flat=True)) == {
        "DRIFT-001",
        "DRIFT-002",
        "DRIFT-003",
    }
    posture_evaluate()
    drift = Finding.objects.filter(check_id__startswith="DRIFT-", status="open")
    by_check = {f.check_id: f for f in drift}
    assert by_check["DRIFT-001"].evidence["before"]["replicas"] == 4
    assert by_check["DRIFT-001"].evidence["after"]["replicas"] == 8
    assert by_check["DRIFT-003"].evidence["after"]["taints"] == ["dedicated=ml:NoSchedule"]
    assert "v24.9.3" in json.dumps(by_check["DRIFT-002"].evidence["after"])
    # Node and config drift affect the tenants on the node (one finding per change);
    # component drift those on the nodes its operands run on: this snapshot holds no operand
    # DaemonSet, so no node is known and no tenant named (tests/inventory/
    # test_drift_component_nodes.py has them).
    (node_drift,) = drift.filter(check_id="DRIFT-003")
    assert set(node_drift.tenants.values_list("slug", flat=True)) == {"alpha", "beta"}
    assert not drift.get(check_id="DRIFT-002").tenants.exists()
    # A quiet re-sync records no new drift, and the window keeps the findings open.
    cluster_sync_from_snapshot(cluster=small_world, paths=[write(tmp_path, objects, "v2.json")])
    posture_evaluate()
    assert DriftEvent.objects.count() == 3
    assert (
        Finding.objects.filter(check_id__startswith="DRIFT-", status="open").count()
        == drift.count()
    )


@pytest.mark.django_db
def test_drift_findings_resolve_after_the_drift_window(small_world, tmp_path, settings):
    import time_machine

    objects = copy.deepcopy(load_json("small-cluster.json")["items"])
    for obj in objects:
        if obj["kind"] == "Node" and obj["metadata"]["name"] == "gpu-ts-1":
            obj["spec"]["taints"] = [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]
    path = write(tmp_path, objects, "v2.json")
    cluster_sync_from_snapshot(cluster=small_world, paths=[path])
    posture_evaluate()
    assert Finding.objects.filter(check_id="DRIFT-003", status="open").count() == 1
    days = settings.GPUPOSTURE_DRIFT_WINDOW_DAYS + 1
    with time_machine.travel(timezone.now() + timedelta(days=days), tick=False):
        posture_evaluate()
    assert not Finding.objects.filter(check_id="DRIFT-003", status="open").exists()
    assert Finding.objects.filter(check_id="DRIFT-003", status="resolved").count() == 1


MIG_PARTED = (
    "version: v1\nmig-configs:\n  all-disabled:\n    - devices: all\n      mig-enabled: false\n"
    "  all-1g.10gb:\n    - devices: all\n      mig-enabled: true\n"
    '      mig-devices:\n        "1g.10gb": 7\n'
)


def mig_configmap(text: str) -> snap.ConfigMap:
    from inventory.sources.raw import canonical_hash

    data = {"config.yaml": text}
    return snap.ConfigMap(
        "gpu-operator",
        "default-mig-parted-config",
        "mig_parted",
        keys=("config.yaml",),
        data_hash=canonical_hash(data),
        data=data,
    )


def test_mig_parted_config_rewritten_with_the_same_meaning_is_not_drift():
    """A comment, key order and flow style change the bytes of the ConfigMap, not one
    partition: the GPU Operator's own default config is rewritten like this on upgrades."""
    rewritten = (
        "# managed by the GPU Operator\nversion: v1\nmig-configs:\n"
        '  all-1g.10gb:\n  - devices: all\n    mig-enabled: true\n    mig-devices: {"1g.10gb": 7}\n'
        "  all-disabled:\n  - devices: all\n    mig-enabled: false\n"
    )
    before = ClusterState(configmaps=(mig_configmap(MIG_PARTED),))
    after = ClusterState(configmaps=(mig_configmap(rewritten),))
    assert detect_drift(before, after) == []


def test_mig_parted_layout_changed_is_drift():
    before = ClusterState(configmaps=(mig_configmap(MIG_PARTED),))
    after = ClusterState(configmaps=(mig_configmap(MIG_PARTED.replace(": 7", ": 3")),))
    [change] = detect_drift(before, after)
    assert change.check_id == "DRIFT-001"
    assert change.subject_name == "default-mig-parted-config"


def test_driver_upgrade_and_cordon_on_a_gpu_node_is_not_drift():
    """A driver upgrade through the GPU Operator cordons and drains each node, GFD and NFD
    relabel it with the new driver and kernel, and a newer GFD adds labels: nothing that
    steers tenants moved (the driver change itself is DRIFT-002 on its DaemonSet)."""
    labels = {
        **gpu_node().labels,
        "nvidia.com/cuda.driver.minor": "90",
        "nvidia.com/cuda.driver-version.full": "550.90.07",
        "feature.node.kubernetes.io/kernel-version.full": "5.15.0-105-generic",
        "nvidia.com/gpu-driver-upgrade-state": "upgrade-done",
        "nvidia.com/gpu.deploy.device-plugin": "true",
    }
    upgraded = {
        **labels,
        "nvidia.com/cuda.driver.minor": "127",
        "nvidia.com/cuda.driver-version.full": "550.127.05",
        "feature.node.kubernetes.io/kernel-version.full": "5.15.0-125-generic",
        "nvidia.com/gpu-driver-upgrade-state": "pod-restart-required",
        "nvidia.com/gpu.deploy.device-plugin": "paused-for-mig-change",
        "nvidia.com/mps.capable": "false",
        "nvidia.com/gpu.mode": "compute",
    }
    cordoned = (
        *gpu_node().taints,
        snap.Taint("node.kubernetes.io/unschedulable", "", "NoSchedule"),
        snap.Taint("karpenter.sh/disrupted", "", "NoSchedule"),
        snap.Taint("ToBeDeletedByClusterAutoscaler", "1733400000", "NoSchedule"),
    )
    before = ClusterState(nodes=(gpu_node(labels=labels),))
    after = ClusterState(nodes=(gpu_node(labels=upgraded, taints=cordoned),))
    assert detect_drift(before, after) == []


def test_class_taint_removed_during_a_cordon_is_still_drift():
    before = ClusterState(nodes=(gpu_node(),))
    after = ClusterState(
        nodes=(
            gpu_node(
                labels={**gpu_node().labels, "nvidia.com/gpu.deploy.device-plugin": "false"},
                taints=(snap.Taint("node.kubernetes.io/unschedulable", "", "NoSchedule"),),
            ),
        )
    )
    [change] = detect_drift(before, after)
    assert change.check_id == "DRIFT-003"
    assert change.before["taints"] == ["gpuposture.io/trust-class=internal:NoSchedule"]
    assert change.after["taints"] == []
    assert change.after["labels"] == {"nvidia.com/gpu.deploy.device-plugin": "false"}


def pool_node(name: str, pool: str = "gpu-a", **changes) -> snap.Node:
    labels = {"cloud.google.com/gke-nodepool": pool, "nvidia.com/gfd.timestamp": "1"}
    return gpu_node(name=name, labels=labels, **changes)


def test_autoscaler_replacing_a_pool_with_another_sharing_config_is_drift():
    """The pool template now names ts-8: old nodes drain, new ones join under new names, and
    the GPUs are shared 8 ways though no node was ever relabelled."""
    before = ClusterState(nodes=(pool_node("gke-a-1"), pool_node("gke-a-2")))
    after = ClusterState(
        nodes=(
            pool_node("gke-a-3", time_slicing_replicas=8, device_plugin_config="ts-8"),
            pool_node("gke-b-1", pool="gpu-b", time_slicing_replicas=8),  # a pool with no past
        )
    )
    [change] = detect_drift(before, after)
    assert (change.check_id, change.subject_name) == ("DRIFT-001", "gke-a-3")
    assert change.before == {
        "node_pool": "gpu-a",
        "device_plugin_config": "ts-4",
        "time_slicing_replicas": 4,
    }
    assert change.after["time_slicing_replicas"] == 8


def test_autoscaler_replacing_a_pool_alike_or_a_node_not_labelled_yet_is_no_drift():
    before = ClusterState(nodes=(pool_node("gke-a-1"),))
    after = ClusterState(
        nodes=(
            pool_node("gke-a-2"),
            pool_node(
                "gke-a-3",
                sharing_strategy="none",
                time_slicing_replicas=None,
                device_plugin_config=None,
            ),
            pool_node("gke-a-4", sharing_strategy="unknown", time_slicing_replicas=None),
        )
    )
    assert detect_drift(before, after) == []


def test_a_tenant_deployment_named_nvidia_is_not_the_gpu_stack():
    """Triton behind a Deployment called `nvidia-triton-server` in a tenant namespace: its
    rollout is the tenant's release, not DRIFT-002, and its namespace's service accounts are
    not the GPU stack's (DRIFT-006)."""

    def triton(tag: str) -> snap.Workload:
        image = f"nvcr.io/nvidia/tritonserver:{tag}-py3"
        return snap.Workload(
            "Deployment", "team-a", "nvidia-triton-server", images={"t": image}, spec_hash=tag
        )

    binding = snap.RoleBinding(
        kind="RoleBinding",
        namespace="team-a",
        name="triton-view",
        role_kind="ClusterRole",
        role_name="view",
        subjects=(snap.Subject("ServiceAccount", "triton", "team-a"),),
    )
    before = ClusterState(workloads=(triton("24.08"),))
    after = ClusterState(workloads=(triton("24.09"),), bindings=(binding,))
    assert detect_drift(before, after) == []
    # The operator's operands are DaemonSets named nvidia-*, whatever image they run.
    validator = snap.Workload(
        "DaemonSet", "gpu-operator", "nvidia-sandbox-validator", images={"v": "x/y:1"}
    )
    assert is_gpu_component(validator)


def test_device_plugin_resources_reordered_is_not_drift():
    """The plugin takes each resource's entry by its name: listing them in another order (a
    Helm values rewrite) shares no GPU differently."""
    gpu = snap.SharingEntry("nvidia.com/gpu", replicas=4)
    mig = snap.SharingEntry("nvidia.com/mig-1g.10gb", replicas=2)
    config = ts_config(resources=("nvidia.com/gpu", "nvidia.com/mig-1g.10gb"), entries=(gpu, mig))
    swapped = ts_config(resources=("nvidia.com/mig-1g.10gb", "nvidia.com/gpu"), entries=(mig, gpu))
    assert (
        detect_drift(
            ClusterState(sharing_configs=(config,)), ClusterState(sharing_configs=(swapped,))
        )
        == []
    )


def test_device_list_strategy_switched_to_envvar_is_drift():
    """volume-mounts -> envvar: containers may again name GPUs through NVIDIA_VISIBLE_DEVICES.
    Unset and `envvar` are the same (the plugin's default)."""
    mounts = ts_config(device_list_strategy="volume-mounts")
    [change] = detect_drift(
        ClusterState(sharing_configs=(mounts,)), ClusterState(sharing_configs=(ts_config(),))
    )
    assert change.check_id == "DRIFT-001"
    assert (change.before["device_list_strategy"], change.after["device_list_strategy"]) == (
        "volume-mounts",
        "envvar",
    )
    explicit = ts_config(device_list_strategy="envvar")
    assert (
        detect_drift(
            ClusterState(sharing_configs=(ts_config(),)), ClusterState(sharing_configs=(explicit,))
        )
        == []
    )
