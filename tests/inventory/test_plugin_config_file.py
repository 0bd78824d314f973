"""A device plugin deployed without config-manager reads one mounted file (`CONFIG_FILE` or
`--config-file`), never the node's `nvidia.com/device-plugin.config` label: only config-manager
reads that label. The EKS shape: NVIDIA's chart given a single config on the g5 node group
(no `config.map`), and a g5 node still wearing a label from an earlier config-manager setup."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from inventory.drift import ClusterState, detect_drift
from inventory.services import cluster_sync_from_snapshot
from inventory.snapshot import LABEL_KIND
from inventory.sources.normalise import normalise
from inventory.sync import cluster_get_or_create
from posture.inputs import PostureInputs
from posture.models import Finding
from posture.services import posture_evaluate
from tests.inventory.normalise_helpers import configmap, controller, ctr, node, pod
from tests.posture.builders import inputs, run, tenant
from tests.posture.builders import pod as gpu_pod

NS = "kube-system"
IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
CONFIGS = "nvdp-ts-nvidia-device-plugin-configs"
G5 = {
    "eks.amazonaws.com/nodegroup": "gpu-g5-shared",
    "karpenter.k8s.aws/instance-gpu-count": "1",
    "nvidia.com/device-plugin.config": "a10g-ts",  # stale: no plugin here reads it
}
TIME_SLICING = """\
version: v1
flags:
  migStrategy: none
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
"""


def _plugin(
    *, config_file: str = "/config/config.yaml", items: list | None = None, manager: bool = False
) -> list[dict[str, Any]]:
    """The chart's DaemonSet and its pod on g5-a: the plugin with CONFIG_FILE in the ConfigMap
    mounted at /config; with `manager`, the chart's config.map shape (config-manager sidecar,
    the ConfigMap at /available-configs, the file on an emptyDir)."""
    env = [{"name": "CONFIG_FILE", "value": config_file}]
    plugin = ctr("nvidia-device-plugin-ctr", IMAGE, command=["nvidia-device-plugin"], env=env)
    plugin["volumeMounts"] = [{"name": "config", "mountPath": "/config"}]
    volume: dict[str, Any] = {"name": CONFIGS}
    if items is not None:
        volume["items"] = items
    volumes = [{"name": "config", "configMap": volume}]
    containers = [plugin]
    if manager:
        volumes = [
            {"name": "available-configs", "configMap": {"name": CONFIGS}},
            {"name": "config", "emptyDir": {}},
        ]
        sidecar = ctr(
            "nvidia-device-plugin-sidecar",
            IMAGE,
            command=["config-manager"],
            env=[{"name": "NODE_LABEL", "value": "nvidia.com/device-plugin.config"}],
        )
        sidecar["volumeMounts"] = [{"name": "available-configs", "mountPath": "/available-configs"}]
        containers = [sidecar, plugin]
    ds = controller("DaemonSet", NS, "nvdp-ts-nvidia-device-plugin", IMAGE)
    spec = ds["spec"]["template"]["spec"]
    spec.update(
        containers=containers,
        volumes=volumes,
        nodeSelector={"eks.amazonaws.com/nodegroup": "gpu-g5-shared"},
    )
    running = pod(NS, "nvdp-x1", *containers, node_name="g5-a", volumes=volumes)
    running["metadata"]["ownerReferences"] = [
        {"kind": "DaemonSet", "name": "nvdp-ts-nvidia-device-plugin"}
    ]
    return [ds, running]


def _snapshot(*objects: dict[str, Any], data: dict[str, str] | None = None):
    world = [
        node("g5-a", G5, capacity={"nvidia.com/gpu": "4"}),
        configmap(NS, CONFIGS, data if data is not None else {"config.yaml": TIME_SLICING}),
        *objects,
    ]
    return normalise(world, configured_platform=(NS,))


def _g5(*objects: dict[str, Any], **kw: Any):
    return next(n for n in _snapshot(*objects, **kw).nodes if n.name == "g5-a")


def test_a_stale_label_is_not_read_by_a_plugin_with_no_config_manager():
    g5 = _g5(*_plugin())
    assert (g5.sharing_strategy, g5.time_slicing_replicas) == ("time_slicing", 4)
    assert g5.unreadable_configs == ()  # no STACK-007
    assert g5.device_plugin_config_used == f"{NS}/{CONFIGS}:config.yaml"
    # The plugin sets no strategy and its config none: its default, envvar (not unknown).
    assert g5.device_list_strategy == "envvar"


def test_with_only_the_daemonset_in_the_snapshot_its_template_decides():
    ds, _ = _plugin()
    g5 = _g5(ds)
    assert (g5.sharing_strategy, g5.time_slicing_replicas, g5.unreadable_configs) == (
        "time_slicing",
        4,
        (),
    )


def test_the_config_file_flag_and_configmap_items_name_the_key():
    objects = _plugin(config_file="", items=[{"key": "a10g", "path": "plugin.yaml"}])
    for obj in objects:
        spec = obj["spec"]["template"]["spec"] if obj["kind"] == "DaemonSet" else obj["spec"]
        spec["containers"][0]["env"] = []
        spec["containers"][0]["args"] = ["--config-file=/config/plugin.yaml"]
    data = {"a10g": TIME_SLICING, "exclusive": "version: v1\n"}
    g5 = _g5(*objects, data=data)
    assert g5.device_plugin_config_used == f"{NS}/{CONFIGS}:a10g"
    assert (g5.sharing_strategy, g5.time_slicing_replicas, g5.unreadable_configs) == (
        "time_slicing",
        4,
        (),
    )


def test_a_file_the_configmap_lacks_leaves_the_node_unknown_and_names_the_configmap():
    g5 = _g5(*_plugin(config_file="/config/other.yaml"))
    assert g5.sharing_strategy == "unknown"
    (problem,) = g5.unreadable_configs
    assert (problem.kind, problem.name, problem.key) == ("ConfigMap", CONFIGS, "other.yaml")
    assert "/config/other.yaml" in problem.error


def test_with_config_manager_a_label_naming_no_key_is_still_stack007():
    # Regression guard: where config-manager runs, the label is what it reads; a key the
    # ConfigMap lacks leaves the node unknown (config-manager refuses it).
    g5 = _g5(*_plugin(manager=True))
    assert g5.sharing_strategy == "unknown"
    (problem,) = g5.unreadable_configs
    assert (problem.kind, problem.name) == (LABEL_KIND, "nvidia.com/device-plugin.config")
    snapshot = _snapshot(*_plugin(manager=True))
    (finding,) = run("STACK-007", PostureInputs("c", snapshot, ()))
    assert finding.subject_name == "g5-a"


def test_no_stack007_and_share005_names_the_node_for_the_stale_label():
    snapshot = _snapshot(*_plugin())
    inputs = PostureInputs("c", snapshot, ())
    assert run("STACK-007", inputs) == []
    (share,) = run("SHARE-005", inputs)
    assert share.evidence["nodes_using_it"] == ["g5-a"]
    assert share.severity == ""  # the check's own (medium): in force on a node


def test_stack008_of_a_node_synced_before_its_strategy_was_resolved_reads_the_config_in_force():
    """A node stored before the sync resolved its device-list strategy: STACK-008 reads the
    config the sync found in force on it, not the one its stale label names (none here)."""
    plugin = "flags:\n  plugin:\n    deviceListStrategy: volume-mounts\n"
    strategy = TIME_SLICING.replace("flags:\n", plugin)
    snapshot = _snapshot(*_plugin(), data={"config.yaml": strategy})
    legacy = tuple(
        replace(n, device_list_strategy=None, device_list_strategy_source="")
        for n in snapshot.nodes
    )
    inputs = PostureInputs("c", replace(snapshot, nodes=legacy), ())
    # volume-mounts, and no toolkit setting visible: unverified, not shouted.
    assert run("STACK-008", inputs) == []
    assert run("STACK-008", PostureInputs("c", _snapshot(*_plugin()), ()))  # envvar: shouted


def _world(data: dict[str, str]) -> list[dict[str, Any]]:
    return [
        node("g5-a", G5, capacity={"nvidia.com/gpu": "4"}),
        configmap(NS, CONFIGS, data),
        *_plugin(),
    ]


@pytest.mark.django_db
def test_drift001_names_the_node_a_config_is_in_force_on_not_the_one_its_stale_label_names(
    tmp_path, settings
):
    """The ConfigMap still holds the key the stale label names (a10g-ts) beside the file the
    plugin mounts (config.yaml): a change to config.yaml reaches g5-a, one to a10g-ts none."""
    settings.GPUPOSTURE_PLATFORM_NAMESPACES = [NS]
    cluster = cluster_get_or_create(name="eks")
    stale_key = TIME_SLICING.replace("replicas: 4", "replicas: 2")
    for version, replicas in (("v1", "4"), ("v2", "8")):
        path = tmp_path / f"{version}.json"
        in_force = TIME_SLICING.replace("replicas: 4", f"replicas: {replicas}")
        data = {"config.yaml": in_force, "a10g-ts": stale_key}
        if version == "v2":
            data["a10g-ts"] = stale_key.replace("replicas: 2", "replicas: 3")
        path.write_text(json.dumps({"kind": "List", "items": _world(data)}))
        assert cluster_sync_from_snapshot(cluster=cluster, paths=[path]).status == "succeeded"
    posture_evaluate()
    drift = Finding.objects.filter(check_id="DRIFT-001", subject_kind="ConfigMap")
    reach = {f.evidence["after"]["key"]: f.evidence["nodes_affected"] for f in drift}
    assert reach == {"config.yaml": ["g5-a"], "a10g-ts": []}


def test_drift_of_a_removed_config_names_the_nodes_that_used_it_and_legacy_nodes_by_label():
    """A config removed names the nodes it was in force on at the last sync (they lost it); a
    node stored before the config in force was recorded is matched by its label."""
    snapshot = _snapshot(*_plugin())
    legacy = replace(snapshot.nodes[0], name="g5-old", device_plugin_config_used=None)
    before = ClusterState(nodes=(*snapshot.nodes, legacy), sharing_configs=snapshot.sharing_configs)
    after = ClusterState(nodes=(legacy,))
    (removed,) = [c for c in detect_drift(before, after) if c.subject_kind == "ConfigMap"]
    assert removed.after == {"key": "config.yaml", "present": False}
    assert removed.nodes == ("g5-a",)
    relabelled = replace(legacy, device_plugin_config="config.yaml")
    (added,) = [
        c
        for c in detect_drift(ClusterState(), replace(before, nodes=(relabelled,)))
        if c.subject_kind == "ConfigMap"
    ]
    assert added.nodes == ("g5-old",)


def test_cotenancy_evidence_shows_the_config_in_force_not_the_stale_label():
    """Two tenants time-slice g5-a: the finding's node entry names the config the plugin reads
    (config.yaml), not the key the stale label names; a node stored before the config in force
    was recorded still shows its label."""
    g5 = _g5(*_plugin())
    pods = tuple(gpu_pod(t, "p", node="g5-a", gpu={"nvidia.com/gpu": 1}) for t in ("alpha", "beta"))
    tenants = (tenant("alpha", namespaces=("alpha",)), tenant("beta", namespaces=("beta",)))
    for g5_node, shown in (
        (g5, f"{NS}/{CONFIGS}:config.yaml"),
        (replace(g5, device_plugin_config_used=None), "a10g-ts"),
        (replace(g5, device_plugin_config_used=""), None),  # the sync found none in force
    ):
        (pair,) = run("SHARE-001", inputs(nodes=(g5_node,), pods=pods, tenants=tenants))
        (entry,) = pair.evidence["nodes"]
        assert entry["device_plugin_config"] == shown
