"""normalise() against hostile or broken objects, and which ConfigMaps are GPU configuration
(issue 16 items 1 and 2). Pure: no database."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.sources import objects as readers
from inventory.sources.normalise import normalise
from tenants.mapping import platform_namespaces
from tenants.policy import node_sharing_mode
from tests.inventory.normalise_helpers import (
    PLATFORM,
    TIME_SLICING,
    configmap,
    controller,
    node,
    with_config_volumes,
)

DEEP = "sharing:\n  timeSlicing: " + "[" * 2_000 + "]" * 2_000 + "\n"
MPS = (
    "version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 8\n"
)
OPERATOR = controller(
    "Deployment", "gpu-operator", "gpu-operator", "nvcr.io/nvidia/gpu-operator:v24.9.2"
)
PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"


def gpu_node(name: str = "gpu-1", config: str | None = "ts-4", **labels: str) -> dict[str, Any]:
    extra = {"nvidia.com/device-plugin.config": config} if config else {}
    return node(name, {"nvidia.com/gpu.count": "1", **extra, **labels})


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def policy(**device_plugin: Any) -> dict[str, Any]:
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": {"devicePlugin": {"config": device_plugin}},
    }


# --- item 1: an object we cannot read is skipped, and said so --------------------------------


def test_a_2000_level_value_in_a_tenant_configmap_is_never_even_parsed():
    objects = [
        OPERATOR,
        gpu_node(),
        configmap("gpu-operator", "time-slicing-config", {"ts-4": TIME_SLICING}),
        configmap("team-alpha", "hostile", {"ts-4": DEEP}),
    ]
    snapshot = normalise(objects, tenant_namespaces={"team-alpha"})
    (n,) = snapshot.nodes
    assert (n.sharing_strategy, n.time_slicing_replicas, n.unreadable_configs) == (
        "time_slicing",
        4,
        (),
    )
    assert [c.namespace for c in snapshot.configmaps] == ["gpu-operator"]
    assert snapshot.warnings == ()


def test_an_unreadable_platform_config_is_recorded_on_the_nodes_using_it():
    objects = [
        OPERATOR,
        gpu_node("gpu-1", "ts-4"),
        gpu_node("gpu-2", "exclusive"),
        node("cpu-1"),
        configmap(
            "gpu-operator",
            "time-slicing-config",
            {"ts-4": DEEP, "exclusive": "version: v1\nflags:\n  migStrategy: none\n"},
        ),
    ]
    snapshot = normalise(objects)
    (cm,) = snapshot.configmaps
    assert cm.unreadable == {"ts-4": "nested deeper than 64 levels (line 2)"}
    cpu, gpu_1, gpu_2 = sorted(snapshot.nodes, key=lambda n: n.name)
    (problem,) = gpu_1.unreadable_configs
    assert (problem.kind, problem.namespace, problem.name, problem.key, problem.purpose) == (
        "ConfigMap",
        "gpu-operator",
        "time-slicing-config",
        "ts-4",
        "device_plugin",
    )
    assert "nested deeper than 64 levels" in problem.error
    # Its sharing is unknown, never silently "none"; the checks judge it as time-sliced.
    assert (gpu_1.sharing_strategy, gpu_1.time_slicing_replicas) == ("unknown", None)
    assert node_sharing_mode(gpu_1.sharing_strategy, "nvidia.com/gpu") == "time_slicing"
    assert (gpu_2.sharing_strategy, gpu_2.unreadable_configs) == ("none", ())
    assert cpu.unreadable_configs == ()
    assert any("time-slicing-config key 'ts-4'" in w for w in snapshot.warnings)


def test_gfd_labels_still_speak_for_a_node_whose_config_is_unreadable():
    labels = {"nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.replicas": "4"}
    objects = [
        OPERATOR,
        gpu_node(**labels),
        configmap("gpu-operator", "cfg", {"ts-4": DEEP}),
    ]
    (n,) = normalise(objects).nodes
    assert (n.sharing_strategy, n.time_slicing_replicas) == ("time_slicing", 4)
    assert [p.key for p in n.unreadable_configs] == ["ts-4"]


def test_an_object_a_reader_cannot_read_is_skipped_with_a_warning(monkeypatch):
    def boom(obj: dict[str, Any], namespace: str) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(readers, "quota_from", boom)
    objects = [
        {"kind": "ResourceQuota", "metadata": {"name": "gpu-quota", "namespace": "team-alpha"}},
        {"kind": "Namespace", "metadata": {"name": "team-alpha"}},
    ]
    snapshot = normalise(objects)
    assert snapshot.quotas == ()
    assert [ns.name for ns in snapshot.namespaces] == ["team-alpha"]
    assert snapshot.warnings == (
        "ResourceQuota team-alpha/gpu-quota could not be read and was skipped: "
        "RecursionError: maximum recursion depth exceeded",
    )


def test_an_unreadable_cluster_policy_is_recorded_on_every_gpu_node(monkeypatch):
    def boom(obj: dict[str, Any]) -> Any:
        raise RecursionError("maximum recursion depth exceeded while encoding a JSON object")

    monkeypatch.setattr(readers, "gpu_operator_policy_from", boom)
    snapshot = normalise([OPERATOR, gpu_node(config=None), node("cpu-1"), policy(name="x")])
    (kept,) = snapshot.gpu_operator_policies
    assert (kept.name, kept.spec) == ("cluster-policy", {})
    assert "RecursionError" in kept.error
    gpu, cpu = sorted(snapshot.nodes, key=lambda n: n.name, reverse=True)
    assert [(p.kind, p.name, p.purpose) for p in gpu.unreadable_configs] == [
        ("ClusterPolicy", "cluster-policy", "gpu_operator")
    ]
    assert cpu.unreadable_configs == ()
    assert any(w.startswith("ClusterPolicy cluster-policy could not") for w in snapshot.warnings)


def test_an_unreadable_mig_parted_config_concerns_nodes_mig_manager_configures():
    deep = "version: v1\nmig-configs: " + "[" * 100 + "]" * 100 + "\n"
    objects = [
        OPERATOR,
        gpu_node("a100", None, **{"nvidia.com/mig.config": "all-1g.10gb"}),
        gpu_node("l4", None),
        configmap("gpu-operator", "default-mig-parted-config", {"config.yaml": deep}),
    ]
    by_name = {n.name: n for n in normalise(objects).nodes}
    assert [p.purpose for p in by_name["a100"].unreadable_configs] == ["mig_parted"]
    assert by_name["l4"].unreadable_configs == ()


# --- item 2: only the GPU stack's own configuration counts ------------------------------------


def test_a_tenant_configmap_with_the_real_key_changes_nothing():
    real = configmap("gpu-operator", "time-slicing-config", {"ts-4": TIME_SLICING})
    base = [OPERATOR, gpu_node(), real, namespace("team-alpha"), namespace("gpu-operator")]
    before = normalise(base, tenant_namespaces={"team-alpha"})
    tenant = configmap("team-alpha", "mine", {"ts-4": MPS})
    after = normalise([*base, tenant], tenant_namespaces={"team-alpha"})
    assert after.nodes == before.nodes
    assert after.sharing_configs == before.sharing_configs
    assert [(c.namespace, c.name) for c in after.configmaps] == [
        ("gpu-operator", "time-slicing-config")
    ]
    assert after.warnings == before.warnings == ()


@pytest.mark.parametrize(
    ("where", "labels", "tenants"),
    [
        ("team-alpha", {}, {"team-alpha"}),  # a tenant's, by the registry
        ("beta-prod", {"gpuposture.io/tenant": "beta"}, set()),  # a tenant's, by its label
        # A tenant's namespace stays one, whatever label it carries.
        ("team-alpha", {"gpuposture.io/platform": "true"}, {"team-alpha"}),
    ],
)
def test_a_configmap_outside_the_platform_namespaces_is_never_gpu_configuration(
    where, labels, tenants
):
    objects = [gpu_node(), namespace(where, **labels), configmap(where, "cfg", {"ts-4": MPS})]
    snapshot = normalise(objects, tenant_namespaces=tenants)
    assert (snapshot.configmaps, snapshot.sharing_configs) == ((), ())
    assert snapshot.nodes[0].sharing_strategy == "none"


def test_an_unmounted_sharing_configmap_a_node_label_selects_is_kept_for_who_may_write_it():
    """Unclassified `scratch` holds the key ts-4 the node's label selects, MPS, and the snapshot
    shows no device plugin and no ClusterPolicy: the plugin's DaemonSet may just be missing, so
    the ConfigMap is kept as the plugin's (K8S-004 judges who may write it), with a warning
    saying why. It still decides nothing about the node: no sharing config, no sharing mode."""
    objects = [gpu_node(), namespace("scratch"), configmap("scratch", "cfg", {"ts-4": MPS})]
    snapshot = normalise(objects)
    assert [(c.namespace, c.name, c.purpose) for c in snapshot.configmaps] == [
        ("scratch", "cfg", "device_plugin")
    ]
    assert snapshot.sharing_configs == ()
    assert snapshot.nodes[0].sharing_strategy == "none"
    assert any("scratch/cfg is taken as the device plugin's config" in w for w in snapshot.warnings)


@pytest.mark.parametrize(
    "objects",
    [
        # A device plugin is seen, mounting another ConfigMap: that one is its config.
        [
            gpu_node(),
            with_config_volumes(
                controller("DaemonSet", "kube-system", "nvidia-device-plugin", PLUGIN_IMAGE),
                "plugin-configs",
            ),
            configmap("kube-system", "plugin-configs", {"ts-4": TIME_SLICING}),
            configmap("scratch", "cfg", {"ts-4": MPS}),
        ],
        # No node's label selects the key.
        [gpu_node(config=None), configmap("scratch", "cfg", {"ts-4": MPS})],
        [gpu_node(config="other"), configmap("scratch", "cfg", {"ts-4": MPS})],
        # The key shares nothing (`version: v1` alone: whole GPUs).
        [gpu_node(), configmap("scratch", "cfg", {"ts-4": "version: v1\n"})],
    ],
)
def test_an_unmounted_configmap_is_not_kept_otherwise(objects):
    kept = [(c.namespace, c.name) for c in normalise(objects).configmaps]
    assert ("scratch", "cfg") not in kept


@pytest.mark.parametrize(
    ("extra", "kwargs"),
    [
        ([OPERATOR], {}),  # the operator's namespace, as found from its Deployment
        ([namespace("gpu-operator", **{"gpuposture.io/platform": "true"})], {}),
        ([], {"configured_platform": {"gpu-operator"}}),  # GPUPOSTURE_PLATFORM_NAMESPACES
    ],
)
def test_a_platform_namespace_config_counts_where_the_stack_names_none(extra, kwargs):
    objects = [gpu_node(), configmap("gpu-operator", "cfg", {"ts-4": MPS}), *extra]
    (n,) = normalise(objects, **kwargs).nodes
    assert (n.sharing_strategy, n.time_slicing_replicas) == ("mps", 8)


def test_the_cluster_policy_decides_which_platform_configmap_is_the_plugins():
    objects = [
        OPERATOR,
        gpu_node(),
        policy(name="time-slicing-config"),
        configmap("gpu-operator", "time-slicing-config", {"ts-4": TIME_SLICING}),
        # In a platform namespace and shaped like a config, but not the one the policy names.
        configmap("kube-system", "leftover", {"ts-4": MPS}),
    ]
    snapshot = normalise(objects)
    assert [(c.namespace, c.configmap) for c in snapshot.sharing_configs] == [
        ("gpu-operator", "time-slicing-config")
    ]
    assert snapshot.nodes[0].sharing_strategy == "time_slicing"


def test_a_policy_named_config_anywhere_else_is_not_taken():
    # The policy names "cfg", but only the operator's own namespace holds the real one.
    objects = [
        OPERATOR,
        gpu_node(),
        policy(name="cfg"),
        configmap("kube-system", "cfg", {"ts-4": MPS}),
        configmap("team-alpha", "cfg", {"ts-4": MPS}),
    ]
    snapshot = normalise(objects)
    assert snapshot.sharing_configs == ()
    (warning,) = [w for w in snapshot.warnings if "names device-plugin config ConfigMap 'cfg'" in w]
    assert "only in kube-system, team-alpha, which is not where the operator reads it" in warning


def test_a_policy_named_config_the_snapshot_does_not_hold_is_said_absent():
    snapshot = normalise([OPERATOR, gpu_node(), policy(name="cfg")])
    (warning,) = [w for w in snapshot.warnings if "names device-plugin config ConfigMap 'cfg'" in w]
    assert "the snapshot holds no ConfigMap of that name (not exported, or not created)" in warning


def test_the_device_plugin_daemonset_decides_which_configmap_it_reads():
    plugin = controller("DaemonSet", "kube-system", "nvidia-device-plugin", PLUGIN_IMAGE)
    objects = [
        gpu_node(),
        with_config_volumes(plugin, "plugin-configs"),
        configmap("kube-system", "plugin-configs", {"ts-4": TIME_SLICING}),
        configmap("kube-system", "old-configs", {"ts-4": MPS}),
    ]
    snapshot = normalise(objects)
    assert [c.configmap for c in snapshot.sharing_configs] == ["plugin-configs"]
    (workload,) = snapshot.workloads
    assert workload.config_refs == ("plugin-configs",)


def test_a_device_plugin_daemonset_of_a_tenant_names_nothing():
    # A tenant running the plugin's image in its own namespace is not the GPU stack.
    plugin = controller("DaemonSet", "team-alpha", "nvidia-device-plugin", PLUGIN_IMAGE)
    objects = [
        OPERATOR,
        gpu_node(),
        with_config_volumes(plugin, "mine"),
        configmap("team-alpha", "mine", {"ts-4": MPS}),
        configmap("gpu-operator", "time-slicing-config", {"ts-4": TIME_SLICING}),
    ]
    snapshot = normalise(objects, tenant_namespaces={"team-alpha"})
    assert [c.configmap for c in snapshot.sharing_configs] == ["time-slicing-config"]
    assert any(
        w.startswith("DaemonSet team-alpha/nvidia-device-plugin runs") for w in snapshot.warnings
    )


def test_platform_namespaces_fail_closed():
    labels = {
        "gpu-operator": {},
        "ops": {"gpuposture.io/platform": "true"},
        "team-alpha": {"gpuposture.io/platform": "true"},
        "beta-prod": {"gpuposture.io/tenant": "beta"},
        "scratch": {},
    }
    found = platform_namespaces(
        namespace_labels=labels,
        operator_namespaces={"gpu-operator", "beta-prod"},
        configured={"monitoring", "kube-system"},
        tenant_namespaces={"team-alpha"},
    )
    assert found == {
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "gpu-operator",
        "ops",
        "monitoring",
    }


def test_the_realworld_plugin_config_still_reads_in_a_platform_namespace():
    snapshot = normalise([gpu_node(config="any"), configmap("gpu-operator", "c", {"any": MPS})])
    assert snapshot.sharing_configs == ()  # gpu-operator is no platform namespace by itself
    snapshot = normalise(
        [gpu_node(config="any"), configmap("gpu-operator", "c", {"any": MPS})], **PLATFORM
    )
    assert [c.mode for c in snapshot.sharing_configs] == ["mps"]
