"""A device-plugin DaemonSet shows which config the plugin reads only on the nodes it reaches.

The shape (red-team rtholdout4 k10, minimised): the GPU Operator (its Deployment, no
ClusterPolicy or plugin DaemonSet in the export) with ConfigMap gpu-operator/device-plugin-config
whose key l40s-loose time-slices without failRequestsGreaterThanOne; node n1 labelled for that key,
with GFD's time-slicing labels and 16 nvidia.com/gpu for 4 GPUs; one tenant pod on it. Beside it,
as clusters that keep a legacy node group do, a standalone plugin DaemonSet in kube-system whose
nodeSelector (gpu-type=v100) picks other nodes. Before, that DaemonSet, naming no ConfigMap, made
the whole cluster "show" its device-plugin config: the Operator's ConfigMap was never read, so no
SHARE-005, no config in force on n1, and no DRIFT-001 when the key changed.
"""

from __future__ import annotations

from typing import Any

from inventory.drift import ClusterState, detect_drift
from inventory.sources.normalise import normalise
from posture.inputs import PostureInputs
from tests.inventory.normalise_helpers import (
    TIME_SLICING_LOOSE,
    configmap,
    controller,
    ctr,
    node,
    pod,
    with_config_volumes,
)
from tests.posture.builders import run, tenant

OPERATOR, LEGACY_NS = "gpu-operator", "kube-system"
CONFIGS, KEY = "device-plugin-config", "l40s-loose"
USED = f"{OPERATOR}/{CONFIGS}:{KEY}"
L40S = {
    "nvidia.com/gpu.product": "NVIDIA-L40S-SHARED",
    "nvidia.com/gpu.count": "4",
    "nvidia.com/gpu.replicas": "4",
    "nvidia.com/gpu.sharing-strategy": "time-slicing",
    "nvidia.com/device-plugin.config": KEY,
}
TENANTS = (tenant("alpha", namespaces=("a",)),)


def _legacy_plugin(node_selector: dict[str, str]) -> dict[str, Any]:
    """The standalone plugin's DaemonSet: no config file, no config-manager."""
    ds = controller(
        "DaemonSet",
        LEGACY_NS,
        "nvidia-device-plugin-legacy",
        "nvcr.io/nvidia/k8s-device-plugin:v0.14.5",
    )
    ds["spec"]["template"]["spec"]["nodeSelector"] = node_selector
    return ds


def _snapshot(*objects: dict[str, Any], config: str = TIME_SLICING_LOOSE):
    given = {o["metadata"]["name"] for o in objects if o["kind"] == "Node"}
    world = [
        *([] if "n1" in given else [node("n1", L40S, capacity={"nvidia.com/gpu": "16"})]),
        controller("Deployment", OPERATOR, "gpu-operator", "nvcr.io/nvidia/gpu-operator:v24.9.2"),
        configmap(OPERATOR, CONFIGS, {KEY: config}),
        pod(
            "a",
            "train",
            ctr("train", resources={"limits": {"nvidia.com/gpu": "1"}}),
            node_name="n1",
        ),
        *objects,
    ]
    return normalise(world, configured_platform=(OPERATOR, LEGACY_NS))


def _node(snapshot, name: str):
    return next(n for n in snapshot.nodes if n.name == name)


def _share005(snapshot) -> list[tuple[str, str, str, tuple[str, ...]]]:
    drafts = run("SHARE-005", PostureInputs("c", snapshot, TENANTS))
    # A draft's severity "" is the check's own (medium); a latent config's is lowered to low.
    return [
        (d.subject_name, d.evidence["key"], d.severity or "medium", tuple(sorted(d.tenants)))
        for d in drafts
    ]


def test_a_legacy_plugin_on_no_node_here_leaves_the_operators_config_in_force():
    snapshot = _snapshot(_legacy_plugin({"gpu-type": "v100"}))
    assert [(c.configmap, c.key) for c in snapshot.sharing_configs] == [(CONFIGS, KEY)]
    n1 = _node(snapshot, "n1")
    assert (n1.sharing_strategy, n1.device_plugin_config_used) == ("time_slicing", USED)
    # As with no plugin DaemonSet in the snapshot at all: SHARE-005 names the config, medium.
    assert _share005(snapshot) == _share005(_snapshot())
    assert _share005(snapshot) == [(CONFIGS, KEY, "medium", ("alpha",))]
    # The sync says why the ConfigMap was read although a plugin DaemonSet names none.
    (said,) = [w for w in snapshot.warnings if "nvidia-device-plugin-legacy" in w]
    assert "runs the NVIDIA device plugin but not on GPU node n1 " in said


def test_mixed_with_legacy_nodes_each_node_reads_its_own_plugins_config():
    """The legacy plugin serves v1 (whole GPUs, it reads no config); n1, which it does not
    reach, still reads the Operator's config."""
    v100 = node(
        "v1", {"gpu-type": "v100", "nvidia.com/gpu.count": "1"}, capacity={"nvidia.com/gpu": "1"}
    )
    snapshot = _snapshot(_legacy_plugin({"gpu-type": "v100"}), v100)
    assert _node(snapshot, "n1").device_plugin_config_used == USED
    v1 = _node(snapshot, "v1")
    assert (v1.sharing_strategy, v1.device_plugin_config_used) == ("none", "")
    assert v1.device_plugin_label_read is False
    assert _share005(snapshot) == [(CONFIGS, KEY, "medium", ("alpha",))]


def test_a_legacy_plugin_that_reaches_the_node_keeps_todays_reading():
    """Regression guard: the standalone plugin runs on n1 and names no ConfigMap, so it shows
    that no ConfigMap is its config; the node's own labels and capacity say time-slicing."""
    snapshot = _snapshot(_legacy_plugin({"nvidia.com/gpu.count": "4"}))
    assert snapshot.sharing_configs == ()
    n1 = _node(snapshot, "n1")
    assert (n1.sharing_strategy, n1.device_plugin_config_used) == ("time_slicing", "")
    assert _share005(snapshot) == []
    assert not [w for w in snapshot.warnings if "nvidia-device-plugin-legacy" in w]


def test_two_plugins_on_one_node_the_operators_reads_the_label_as_before():
    """Regression guard: where the legacy plugin and the Operator's (which mounts its config)
    both run on n1, the Operator's plugin reads the node's label, so its config is in force."""
    deploy = {"nvidia.com/gpu.deploy.device-plugin": "true"}
    operator_plugin = with_config_volumes(
        controller(
            "DaemonSet",
            OPERATOR,
            "nvidia-device-plugin-daemonset",
            "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
        ),
        CONFIGS,
    )
    operator_plugin["spec"]["template"]["spec"]["nodeSelector"] = deploy
    n1 = node("n1", {**L40S, **deploy}, capacity={"nvidia.com/gpu": "16"})
    snapshot = _snapshot(n1, operator_plugin, _legacy_plugin({"nvidia.com/gpu.count": "4"}))
    n1 = _node(snapshot, "n1")
    assert (n1.device_plugin_config_used, n1.device_plugin_label_read) == (USED, True)
    assert _share005(snapshot) == [(CONFIGS, KEY, "medium", ("alpha",))]


def _drift001(before, after) -> list[tuple[str, str]]:
    changes = detect_drift(
        ClusterState(nodes=before.nodes, sharing_configs=before.sharing_configs),
        ClusterState(nodes=after.nodes, sharing_configs=after.sharing_configs),
    )
    return sorted((c.subject_kind, c.subject_name) for c in changes if c.check_id == "DRIFT-001")


def test_drift001_sees_the_operators_config_change_beside_a_legacy_plugin():
    legacy = _legacy_plugin({"gpu-type": "v100"})
    before = _snapshot(legacy)
    after = _snapshot(legacy, config=TIME_SLICING_LOOSE.replace("replicas: 4", "replicas: 8"))
    assert _drift001(before, after) != []
    # Deploying the legacy plugin elsewhere changes no node's config: no DRIFT-001.
    assert _drift001(_snapshot(), before) == []
