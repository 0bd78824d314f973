"""normalise(): raw Kubernetes objects -> ClusterSnapshot. Pure, no database."""

from __future__ import annotations

import random
from typing import Any

import pytest
import yaml

from inventory.snapshot import EnvVar, Subject, Taint, Volume, VolumeMount
from inventory.sources.normalise import (
    SnapshotError,
    image_version,
    normalise,
    pod_from_template,
)
from inventory.sources.snapshot_file import load_snapshot_objects
from tests.realworld import realworld

# --- small builders for our own objects ------------------------------------------------------


def node(name: str, labels: dict[str, str] | None = None, **status: Any) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": status.pop("taints", [])},
        "status": {"capacity": status.pop("capacity", {}), **status},
    }


def pod(
    namespace: str,
    name: str,
    *containers: dict[str, Any],
    node_name: str | None = None,
    phase: str = "Running",
    **spec: Any,
) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeName": node_name, "containers": list(containers), **spec},
        "status": {"phase": phase},
    }


def ctr(name: str, image: str = "registry.example.com/ml/trainer:2.1", **fields: Any) -> dict:
    return {"name": name, "image": image, **fields}


def configmap(namespace: str, name: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


def controller(kind: str, namespace: str, name: str, image: str, **meta: Any) -> dict:
    return {
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, **meta},
        "spec": {"template": {"spec": {"containers": [{"name": name, "image": image}]}}},
    }


def only_node(objects: list[dict[str, Any]]):
    (result,) = normalise(objects).nodes
    return result


TIME_SLICING = """\
version: v1
sharing:
  timeSlicing:
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 4
    - name: nvidia.com/mig-1g.10gb
      replicas: 2
"""

MPS = """\
version: v1
sharing:
  mps:
    renameByDefault: true
    resources:
    - name: nvidia.com/gpu
      replicas: 3
"""

# --- image_version -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("nvcr.io/nvidia/driver:550.90.07-ubuntu22.04", ("nvcr.io/nvidia/driver", "550.90.07")),
        ("nvcr.io/nvidia/driver:535.104.05-rhcos4.14", ("nvcr.io/nvidia/driver", "535.104.05")),
        (
            "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
            ("nvcr.io/nvidia/k8s-device-plugin", "0.17.0"),
        ),
        (
            "nvcr.io/nvidia/k8s-device-plugin:v0.14.5-ubi8",
            ("nvcr.io/nvidia/k8s-device-plugin", "0.14.5"),
        ),
        (
            "nvcr.io/nvidia/k8s/container-toolkit:v1.17.4-ubuntu20.04",
            ("nvcr.io/nvidia/k8s/container-toolkit", "1.17.4"),
        ),
        (
            "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04",
            ("nvcr.io/nvidia/k8s/dcgm-exporter", "3.3.9-3.6.1"),
        ),
        (
            "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless",
            ("nvcr.io/nvidia/k8s/dcgm-exporter", "4.6.0-4.8.3"),
        ),
        ("nvcr.io/nvidia/gpu-operator:v24.9.2", ("nvcr.io/nvidia/gpu-operator", "24.9.2")),
        (
            "mirror.example.com/nvidia/k8s-device-plugin:v0.18.0-rc.1",
            ("mirror.example.com/nvidia/k8s-device-plugin", "0.18.0-rc.1"),
        ),
        # Pinned only by digest: no tag, so no version.
        ("nvcr.io/nvidia/driver@sha256:" + "a" * 64, ("nvcr.io/nvidia/driver", None)),
        # Tag and digest: the tag still names the version.
        (
            "nvcr.io/nvidia/k8s-device-plugin:v0.17.0@sha256:" + "b" * 64,
            ("nvcr.io/nvidia/k8s-device-plugin", "0.17.0"),
        ),
        # Precompiled driver tags name only the branch and the kernel: not a driver version.
        (
            "nvcr.io/nvidia/driver:535-5.15.0-1048-nvidia-ubuntu22.04",
            ("nvcr.io/nvidia/driver", None),
        ),
        (
            "nvcr.io/nvidia/cloud-native/k8s-driver-manager:devel",
            ("nvcr.io/nvidia/cloud-native/k8s-driver-manager", None),
        ),
        (
            "registry.local:5000/nvidia/k8s-device-plugin",
            ("registry.local:5000/nvidia/k8s-device-plugin", None),
        ),
        (
            "registry.local:5000/nvidia/k8s-device-plugin:v0.16.2",
            ("registry.local:5000/nvidia/k8s-device-plugin", "0.16.2"),
        ),
        ("busybox", ("busybox", None)),
        ("busybox:latest", ("busybox", None)),
    ],
)
def test_image_version(image, expected):
    assert image_version(image) == expected


# --- nodes: model, count, capacity -------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "capacity", "model", "count", "gpu_capacity"),
    [
        # Time-slicing advertises 10 x 4 = 40; the physical count is the label's 4.
        (
            {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-SHARED", "nvidia.com/gpu.count": "4"},
            {"cpu": "96", "nvidia.com/gpu": "40"},
            "NVIDIA-H100-80GB-HBM3",
            4,
            {"nvidia.com/gpu": 40},
        ),
        # No count label: unknown, never taken from capacity.
        (
            {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
            {"nvidia.com/gpu": "8"},
            "NVIDIA-A100-SXM4-80GB",
            None,
            {"nvidia.com/gpu": 8},
        ),
        # MIG mixed strategy replaces nvidia.com/gpu with MIG resources.
        (
            {"nvidia.com/gpu.count": "1"},
            {"nvidia.com/mig-1g.10gb": "2", "nvidia.com/mig-3g.40gb": "1", "memory": "1Ti"},
            None,
            1,
            {"nvidia.com/mig-1g.10gb": 2, "nvidia.com/mig-3g.40gb": 1},
        ),
        ({"nvidia.com/gpu.count": "eight"}, {}, None, None, {}),
        ({}, {"cpu": "16"}, None, None, {}),
    ],
)
def test_node_gpu_model_count_and_capacity(labels, capacity, model, count, gpu_capacity):
    result = only_node([node("gpu-node-01", labels, capacity=capacity)])
    assert (result.gpu_model, result.gpu_count, result.gpu_capacity) == (model, count, gpu_capacity)


def test_node_taints_and_node_info():
    raw = node(
        "gpu-h100-01",
        taints=[
            {"key": "tenant-class", "value": "external", "effect": "NoSchedule"},
            {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
        ],
        nodeInfo={
            "osImage": "Ubuntu 22.04.4 LTS",
            "kernelVersion": "5.15.0-105-generic",
            "containerRuntimeVersion": "containerd://1.7.13",
            "kubeletVersion": "v1.29.4",
        },
    )
    result = only_node([raw])
    assert result.taints == (
        Taint("nvidia.com/gpu", "", "NoSchedule"),
        Taint("tenant-class", "external", "NoSchedule"),
    )
    assert (result.os_image, result.kernel_version) == ("Ubuntu 22.04.4 LTS", "5.15.0-105-generic")
    assert (result.container_runtime, result.kubelet_version) == ("containerd://1.7.13", "v1.29.4")
    assert result.firmware_version is None


# --- nodes: driver and component versions ------------------------------------------------------

DRIVER_POD = pod(
    "gpu-operator",
    "nvidia-driver-daemonset-x7k2p",
    ctr("nvidia-driver-ctr", "nvcr.io/nvidia/driver:525.85.03-ubuntu22.04"),
    node_name="gpu-a100-01",
)


@pytest.mark.parametrize(
    ("labels", "pods", "expected"),
    [
        ({"nvidia.com/cuda.driver-version.full": "550.90.07"}, [], ("550.90.07", "gfd-label")),
        (
            {
                "nvidia.com/cuda.driver-version.full": "550.90.07",
                "nvidia.com/cuda.driver-version.major": "550",
                "nvidia.com/cuda.driver.major": "470",
                "nvidia.com/cuda.driver.minor": "57",
            },
            [DRIVER_POD],
            ("550.90.07", "gfd-label"),
        ),
        (
            {
                "nvidia.com/cuda.driver-version.major": "535",
                "nvidia.com/cuda.driver-version.minor": "104",
                "nvidia.com/cuda.driver-version.revision": "05",
            },
            [],
            ("535.104.05", "gfd-label"),
        ),
        (
            {
                "nvidia.com/cuda.driver.major": "470",
                "nvidia.com/cuda.driver.minor": "57",
                "nvidia.com/cuda.driver.rev": "02",
            },
            [DRIVER_POD],
            ("470.57.02", "gfd-label-legacy"),
        ),
        (
            {
                "nvidia.com/cuda.driver.major": "470",
                "nvidia.com/cuda.driver.minor": "57",
                "nvidia.com/cuda.driver.rev": "",
            },
            [],
            ("470.57", "gfd-label-legacy"),
        ),
        ({}, [DRIVER_POD], ("525.85.03", "driver-pod")),
        # The driver pod of another node says nothing about this one.
        (
            {},
            [{**DRIVER_POD, "spec": {**DRIVER_POD["spec"], "nodeName": "gpu-a100-02"}}],
            (None, None),
        ),
        ({}, [{**DRIVER_POD, "status": {"phase": "Failed"}}], (None, None)),
        (
            {},
            [
                pod(
                    "gpu-operator",
                    "drv",
                    ctr("d", "nvcr.io/nvidia/driver@sha256:" + "c" * 64),
                    node_name="gpu-a100-01",
                )
            ],
            (None, None),
        ),
        (
            {},
            [
                pod(
                    "gpu-operator",
                    "drv",
                    ctr("d", "nvcr.io/nvidia/driver:535-5.15.0-1048-nvidia-ubuntu22.04"),
                    node_name="gpu-a100-01",
                )
            ],
            (None, None),
        ),
        ({"nvidia.com/cuda.driver.major": "470"}, [], (None, None)),
    ],
)
def test_driver_version_and_source(labels, pods, expected):
    result = only_node([node("gpu-a100-01", {"nvidia.com/gpu.count": "8", **labels}), *pods])
    assert (result.driver_version, result.driver_version_source) == expected


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"nvidia.com/cuda.runtime-version.full": "12.4"}, "12.4"),
        ({"nvidia.com/cuda.runtime.major": "12", "nvidia.com/cuda.runtime.minor": "2"}, "12.2"),
        ({"nvidia.com/cuda.runtime.major": "12"}, None),
    ],
)
def test_cuda_driver_version(labels, expected):
    assert only_node([node("gpu-l4-01", labels)]).cuda_driver_version == expected


def test_component_versions_come_from_pods_on_that_node():
    on_node = {"node_name": "gpu-l40s-01"}
    objects = [
        node("gpu-l40s-01", {"nvidia.com/gpu.count": "4"}),
        node("cpu-01", {}),
        pod(
            "gpu-operator",
            "plugin",
            ctr("p", "nvcr.io/nvidia/k8s-device-plugin:v0.14.5-ubi8"),
            **on_node,
        ),
        pod(
            "gpu-operator",
            "toolkit",
            ctr("t", "nvcr.io/nvidia/k8s/container-toolkit:v1.17.4-ubuntu20.04"),
            initContainers=[
                ctr("init", "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.9.2")
            ],
            **on_node,
        ),
        pod(
            "gpu-operator",
            "dcgm",
            ctr("e", "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04"),
            **on_node,
        ),
        pod(
            "gpu-operator",
            "mig",
            ctr("m", "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.10.0-ubuntu20.04"),
            **on_node,
        ),
        # Plugin pod of another node, with a newer version.
        pod(
            "gpu-operator",
            "plugin-2",
            ctr("p", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"),
            node_name="gpu-l40s-02",
        ),
    ]
    gpu, cpu = normalise(objects).nodes[::-1]
    assert gpu.name == "gpu-l40s-01"
    assert (gpu.device_plugin_version, gpu.container_toolkit_version) == ("0.14.5", "1.17.4")
    assert (gpu.dcgm_exporter_version, gpu.mig_manager_version) == ("3.3.9-3.6.1", "0.10.0")
    assert (cpu.device_plugin_version, cpu.container_toolkit_version) == (None, None)


def test_rolling_upgrade_reports_the_older_component_still_running():
    objects = [
        node("gpu-a10-01", {"nvidia.com/gpu.count": "1"}),
        pod(
            "kube-system",
            "plugin-new",
            ctr("p", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"),
            node_name="gpu-a10-01",
        ),
        pod(
            "kube-system",
            "plugin-old",
            ctr("p", "nvcr.io/nvidia/k8s-device-plugin:v0.9.0"),
            node_name="gpu-a10-01",
        ),
    ]
    assert only_node(objects).device_plugin_version == "0.9.0"


@pytest.mark.parametrize(
    ("workloads", "expected"),
    [
        (
            [
                controller(
                    "Deployment",
                    "gpu-operator",
                    "gpu-operator",
                    "nvcr.io/nvidia/gpu-operator:v24.9.2",
                )
            ],
            "24.9.2",
        ),
        (
            [
                controller(
                    "Deployment",
                    "gpu-operator",
                    "gpu-operator",
                    "nvcr.io/nvidia/gpu-operator@sha256:" + "d" * 64,
                    labels={"app.kubernetes.io/version": "v24.6.1"},
                )
            ],
            "24.6.1",
        ),
        # A DaemonSet running the operator image is not the operator Deployment.
        (
            [controller("DaemonSet", "gpu-operator", "odd", "nvcr.io/nvidia/gpu-operator:v23.9.0")],
            None,
        ),
        ([], None),
    ],
)
def test_gpu_operator_version_on_every_gpu_node(workloads, expected):
    snapshot = normalise([node("gpu-1", {"nvidia.com/gpu.count": "2"}), node("cpu-1"), *workloads])
    assert [n.gpu_operator_version for n in snapshot.nodes] == [None, expected]


# --- nodes: sharing ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "capacity", "strategy", "replicas"),
    [
        (
            {"nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.replicas": "4"},
            {},
            "time_slicing",
            4,
        ),
        (
            {"nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.replicas": "10"},
            {},
            "mps",
            10,
        ),
        ({"nvidia.com/gpu.replicas": "8"}, {}, "time_slicing", 8),
        ({"nvidia.com/gpu.replicas": "1"}, {}, "none", 1),
        ({"nvidia.com/gpu.product": "Tesla-T4-SHARED"}, {}, "time_slicing", None),
        (
            {"nvidia.com/mig.strategy": "single", "nvidia.com/mig.config": "all-1g.10gb"},
            {},
            "mig",
            None,
        ),
        (
            {"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.config": "all-disabled"},
            {},
            "none",
            None,
        ),
        ({"nvidia.com/mig.strategy": "mixed"}, {"nvidia.com/mig-3g.40gb": "2"}, "mig", None),
        # The operator labels every node with the cluster's strategy: that alone is not MIG.
        ({"nvidia.com/mig.strategy": "single"}, {"nvidia.com/gpu": "8"}, "none", None),
        (
            {"nvidia.com/mig.strategy": "none", "nvidia.com/mig.config": "all-balanced"},
            {},
            "none",
            None,
        ),
        ({"nvidia.com/vgpu.present": "true"}, {}, "vgpu", None),
        ({}, {"nvidia.com/gpu": "8"}, "none", None),
    ],
)
def test_sharing_strategy_from_labels(labels, capacity, strategy, replicas):
    result = only_node(
        [node("gpu-node", {"nvidia.com/gpu.count": "8", **labels}, capacity=capacity)]
    )
    assert (result.sharing_strategy, result.time_slicing_replicas) == (strategy, replicas)


def test_mig_labels_are_kept():
    labels = {
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig.config": "all-balanced",
        "nvidia.com/mig.config.state": "success",
        "nvidia.com/device-plugin.config": "a100-80gb",
    }
    result = only_node([node("gpu-a100-01", labels)])
    assert (result.mig_strategy, result.mig_config) == ("mixed", "all-balanced")
    assert (result.mig_config_state, result.device_plugin_config) == ("success", "a100-80gb")


def _plugin_configmap(name: str = "time-slicing-config", **data: str) -> dict[str, Any]:
    return configmap("gpu-operator", name, data)


@pytest.mark.parametrize(
    ("label", "configmaps", "strategy", "replicas"),
    [
        # The node names a key of the plugin config.
        (
            "tesla-t4",
            [
                _plugin_configmap(
                    **{
                        "tesla-t4": TIME_SLICING,
                        "a100": "version: v1\nflags:\n  migStrategy: mixed\n",
                    }
                )
            ],
            "time_slicing",
            4,
        ),
        (
            "a100",
            [
                _plugin_configmap(
                    **{
                        "tesla-t4": TIME_SLICING,
                        "a100": "version: v1\nflags:\n  migStrategy: mixed\n",
                    }
                )
            ],
            "none",
            None,
        ),
        ("missing-key", [_plugin_configmap(any=TIME_SLICING)], "none", None),
        # No label: the plugin falls back to the only config, or to the one named "default".
        (None, [_plugin_configmap(any=TIME_SLICING)], "time_slicing", 4),
        (
            None,
            [
                _plugin_configmap(
                    default=TIME_SLICING, other="version: v1\nflags:\n  migStrategy: none\n"
                )
            ],
            "time_slicing",
            4,
        ),
        (None, [_plugin_configmap(one=TIME_SLICING, two=TIME_SLICING)], "none", None),
        # Two plugin ConfigMaps: which one the plugin reads is not in the snapshot.
        (
            None,
            [_plugin_configmap(any=TIME_SLICING), _plugin_configmap("second", any=TIME_SLICING)],
            "none",
            None,
        ),
    ],
)
def test_sharing_strategy_from_device_plugin_config(label, configmaps, strategy, replicas):
    labels = {"nvidia.com/gpu.count": "1"} | (
        {"nvidia.com/device-plugin.config": label} if label else {}
    )
    result = only_node([node("gpu-t4-01", labels), *configmaps])
    assert (result.sharing_strategy, result.time_slicing_replicas) == (strategy, replicas)


def test_config_fallback_does_not_apply_to_cpu_nodes_or_against_gfd():
    objects = [
        node("cpu-01", {}),
        node("gpu-01", {"nvidia.com/gpu.count": "1", "nvidia.com/gpu.sharing-strategy": "none"}),
        _plugin_configmap(any=TIME_SLICING),
    ]
    assert [n.sharing_strategy for n in normalise(objects).nodes] == ["none", "none"]


def test_a_config_key_defined_two_ways_is_a_warning_not_a_guess():
    objects = [
        node("gpu-01", {"nvidia.com/gpu.count": "1", "nvidia.com/device-plugin.config": "shared"}),
        _plugin_configmap("plugin-a", shared=TIME_SLICING),
        _plugin_configmap("plugin-b", shared="version: v1\nsharing:\n  timeSlicing: {}\n"),
    ]
    snapshot = normalise(objects)
    assert snapshot.nodes[0].sharing_strategy == "none"
    assert any("'shared' is defined differently" in w for w in snapshot.warnings)


# --- pods --------------------------------------------------------------------------------------


def test_pod_fields():
    raw = pod(
        "team-alpha",
        "trainer-7d9f-abcde",
        ctr(
            "trainer",
            securityContext={
                "privileged": True,
                "allowPrivilegeEscalation": True,
                "capabilities": {"add": ["cap_sys_admin", "NET_RAW"], "drop": ["ALL"]},
            },
            resources={
                "requests": {"cpu": "4", "nvidia.com/gpu": 1},
                "limits": {"memory": "64Gi", "nvidia.com/gpu": "1"},
            },
            env=[
                {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                {"name": "EMPTY"},
                {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
                {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            ],
            volumeMounts=[{"name": "caps", "mountPath": "/dev/nvidia-caps", "readOnly": True}],
            ports=[{"containerPort": 8888}, {"containerPort": "http"}],
            command=["python", "-m", "train"],
            args=["--epochs", 3],
        ),
        node_name="gpu-h100-01",
        initContainers=[ctr("fetch", "registry.example.com/ml/fetch:1.0")],
        securityContext={"runAsNonRoot": True},
        serviceAccountName="alpha-runner",
        hostPID=True,
        hostNetwork=True,
        nodeSelector={"tenant-class": "internal"},
        tolerations=[
            {
                "key": "nvidia.com/gpu",
                "operator": "Exists",
                "effect": "NoSchedule",
                "tolerationSeconds": 30,
            }
        ],
        volumes=[
            {"name": "caps", "hostPath": {"path": "/dev/nvidia-caps"}},
            {"name": "scratch", "emptyDir": {}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "alpha-data"}},
        ],
    )
    raw["metadata"]["labels"] = {"app": "trainer"}
    raw["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "trainer-7d9f"}]
    (result,) = normalise([raw]).pods
    init, main = result.containers
    assert (init.name, init.init, init.run_as_non_root) == ("fetch", True, True)
    assert (main.privileged, main.allow_privilege_escalation) == (True, True)
    assert (main.capabilities_add, main.capabilities_drop) == (("SYS_ADMIN", "NET_RAW"), ("ALL",))
    assert (main.gpu_requests, main.gpu_limits) == (
        {"nvidia.com/gpu": "1"},
        {"nvidia.com/gpu": "1"},
    )
    assert main.env == (
        EnvVar("NVIDIA_VISIBLE_DEVICES", "all"),
        EnvVar("EMPTY", ""),
        EnvVar("TOKEN", None, "secretKeyRef"),
        EnvVar("NODE", None, "fieldRef"),
    )
    assert main.volume_mounts == (VolumeMount("caps", "/dev/nvidia-caps", True),)
    assert (main.ports, main.command, main.args) == (
        (8888,),
        ("python", "-m", "train"),
        ("--epochs", "3"),
    )
    assert result.volumes == (
        Volume("caps", "/dev/nvidia-caps", "hostPath"),
        Volume("scratch", None, "emptyDir"),
        Volume("data", None, "persistentVolumeClaim"),
    )
    assert (result.node_name, result.phase, result.service_account) == (
        "gpu-h100-01",
        "Running",
        "alpha-runner",
    )
    assert (result.host_pid, result.host_ipc, result.host_network) == (True, False, True)
    assert (result.owner_kind, result.owner_name) == ("ReplicaSet", "trainer-7d9f")
    assert result.labels == {"app": "trainer"}
    assert result.node_selector == {"tenant-class": "internal"}
    assert result.tolerations == (
        {
            "key": "nvidia.com/gpu",
            "operator": "Exists",
            "effect": "NoSchedule",
            "tolerationSeconds": "30",
        },
    )
    assert result.gpu_resources == {"nvidia.com/gpu": 1}


def test_pod_defaults():
    raw = {"kind": "Pod", "metadata": {"name": "bare", "namespace": "team-beta"}}
    (result,) = normalise([raw]).pods
    assert (result.phase, result.service_account, result.node_name) == ("Unknown", "default", None)
    assert (result.containers, result.volumes, result.owner_kind) == ((), (), None)


@pytest.mark.parametrize(
    "spec",
    [
        {"containers": None},
        {"containers": "trainer"},
        {"containers": [None, "x", {"name": "c", "securityContext": ["privileged"]}]},
        {"containers": [{"name": "c", "securityContext": {"capabilities": "SYS_ADMIN"}}]},
        {"containers": [{"name": "c", "resources": "lots", "env": {"A": "1"}, "ports": None}]},
        {"containers": [{"name": "c", "resources": {"limits": ["nvidia.com/gpu"]}}]},
        {"containers": [{"name": "c", "env": [{"name": "A", "valueFrom": "secret"}]}]},
        {
            "volumes": [{"name": "v", "hostPath": None}, None],
            "tolerations": "all",
            "nodeSelector": [],
        },
        {"securityContext": "strict", "initContainers": {"name": "x"}},
    ],
)
def test_malformed_pod_subfields_are_tolerated(spec):
    (result,) = normalise(
        [{"kind": "Pod", "metadata": {"name": "odd", "namespace": "ns"}, "spec": spec}]
    ).pods
    for container in result.containers:
        assert (container.privileged, container.capabilities_add, container.gpu_limits) == (
            False,
            (),
            {},
        )


def test_run_as_non_root_container_overrides_pod():
    raw = pod(
        "team-alpha",
        "p",
        ctr("a", securityContext={"runAsNonRoot": False}),
        ctr("b"),
        securityContext={"runAsNonRoot": True},
    )
    (result,) = normalise([raw]).pods
    assert [c.run_as_non_root for c in result.containers] == [False, True]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            {
                "kind": "CronJob",
                "metadata": {"name": "nightly-eval", "namespace": "team-alpha"},
                "spec": {
                    "jobTemplate": {
                        "spec": {
                            "template": {"spec": {"hostIPC": True, "containers": [ctr("eval")]}}
                        }
                    }
                },
            },
            ("team-alpha", "nightly-eval", "CronJob", ("eval",), True),
        ),
        (
            {
                "kind": "StatefulSet",
                "metadata": {"name": "notebook"},
                "spec": {
                    "template": {
                        "metadata": {"labels": {"app": "nb"}},
                        "spec": {"containers": [ctr("jupyter")]},
                    }
                },
            },
            ("default", "notebook", "StatefulSet", ("jupyter",), False),
        ),
    ],
)
def test_pod_from_template(obj, expected):
    result = pod_from_template(obj)
    assert result is not None
    names = tuple(c.name for c in result.containers)
    assert (result.namespace, result.name, result.owner_kind, names, result.host_ipc) == expected
    assert result.owner_name == result.name


@pytest.mark.parametrize(
    "obj",
    [
        {"kind": "Deployment", "metadata": {"name": "empty"}, "spec": {}},
        {"kind": "CronJob", "metadata": {"name": "c"}, "spec": {"jobTemplate": None}},
        {"kind": "Service", "metadata": {"name": "s"}, "spec": {"template": {"spec": {}}}},
        {"kind": "Job", "metadata": {"name": "j"}, "spec": {"template": {"spec": None}}},
    ],
)
def test_pod_from_template_without_pod_spec(obj):
    assert pod_from_template(obj) is None


# --- ConfigMaps and sharing configs ------------------------------------------------------------


def test_device_plugin_configmap_gives_one_sharing_config_per_key():
    data = {
        "h100-shared": TIME_SLICING,
        "l4-mps": MPS,
        "a100-exclusive": "version: v1\nflags:\n  migStrategy: mixed\n",
        "README": "Edit with care: the plugin reloads on change.",
    }
    snapshot = normalise([configmap("gpu-operator", "plugin-config", data)])
    (cm,) = snapshot.configmaps
    assert (cm.purpose, cm.keys) == (
        "device_plugin",
        ("README", "a100-exclusive", "h100-shared", "l4-mps"),
    )
    exclusive, shared, mps = snapshot.sharing_configs
    assert (exclusive.key, exclusive.mode, exclusive.mig_strategy, exclusive.replicas) == (
        "a100-exclusive",
        "none",
        "mixed",
        None,
    )
    assert (shared.mode, shared.replicas, shared.fail_requests_greater_than_one) == (
        "time_slicing",
        4,
        True,
    )
    assert shared.resources == ("nvidia.com/gpu", "nvidia.com/mig-1g.10gb")
    assert (mps.mode, mps.replicas, mps.rename_by_default, mps.resources) == (
        "mps",
        3,
        True,
        ("nvidia.com/gpu",),
    )


def test_other_configmaps_are_dropped_and_counted():
    objects = [
        configmap(
            "team-alpha",
            "app-settings",
            {"DATABASE_URL": "postgres://u:pw@db/app", "debug": "true"},
        ),
        configmap("kube-system", "coredns", {"Corefile": ".:53 {\n    errors\n}\n"}),
        configmap("team-alpha", "empty", None),
    ]
    snapshot = normalise(objects)
    assert (snapshot.configmaps, snapshot.sharing_configs, snapshot.warnings) == ((), (), ())
    assert snapshot.counts == {"ConfigMap": 3}


def test_mig_parted_configmap():
    data = {
        "config.yaml": (
            "version: v1\nmig-configs:\n"
            "  all-disabled:\n    - devices: all\n      mig-enabled: false\n"
        )
    }
    (cm,) = normalise([configmap("gpu-operator", "custom-mig-config", data)]).configmaps
    assert (cm.purpose, cm.keys) == ("mig_parted", ("config.yaml",))


def test_data_hash_ignores_key_order_and_sees_changes():
    a = configmap(
        "gpu-operator", "ts", {"a": TIME_SLICING, "b": "version: v1\nflags:\n  migStrategy: none\n"}
    )
    b = configmap(
        "gpu-operator", "ts", {"b": "version: v1\nflags:\n  migStrategy: none\n", "a": TIME_SLICING}
    )
    c = configmap("gpu-operator", "ts", {"a": TIME_SLICING.replace("replicas: 4", "replicas: 5")})
    hashes = [normalise([x]).configmaps[0].data_hash for x in (a, b, c)]
    assert hashes[0] == hashes[1] != hashes[2]
    assert len(hashes[0]) == 64


@pytest.mark.parametrize(
    ("value", "warned"),
    [
        ("version: v1\nsharing:\n  timeSlicing:\n    resources: [\n", True),
        ('#!/bin/sh\necho "status: $x"\nif [ -f a ]; then\n  echo "ready: yes"\nfi\n', False),
    ],
)
def test_unparseable_configmap_is_dropped_with_a_warning_only_when_it_looks_like_config(
    value, warned
):
    snapshot = normalise([configmap("gpu-operator", "broken", {"config.yaml": value})])
    assert snapshot.configmaps == ()
    assert bool(snapshot.warnings) is warned
    if warned:
        assert "gpu-operator/broken" in snapshot.warnings[0]


@pytest.mark.parametrize(
    ("sample", "mode", "replicas", "fail_gt_one", "rename", "mig_strategy"),
    [
        ("gpu-operator-tests-plugin-config.yaml", "time_slicing", 10, False, False, None),
        ("readme-L412-timeslicing-replicas10.yaml", "time_slicing", 10, False, False, None),
        ("readme-L436-timeslicing-rename-replicas10.yaml", "time_slicing", 10, False, True, None),
        ("readme-L551-mps-replicas10.yaml", "mps", 10, False, False, None),
        ("readme-L575-mps-rename-replicas10.yaml", "mps", 10, False, True, None),
        # Flags only, no sharing section: exclusive GPUs.
        ("readme-L231-flags-config.yaml", "none", None, False, False, "none"),
    ],
)
def test_realworld_device_plugin_configs(sample, mode, replicas, fail_gt_one, rename, mig_strategy):
    text = realworld("device-plugin", sample).read_text()
    snapshot = normalise([configmap("gpu-operator", "plugin-config", {"any": text})])
    (config,) = snapshot.sharing_configs
    assert (config.mode, config.replicas) == (mode, replicas)
    assert (config.fail_requests_greater_than_one, config.rename_by_default) == (
        fail_gt_one,
        rename,
    )
    assert config.mig_strategy == mig_strategy
    assert config.resources == (("nvidia.com/gpu",) if mode != "none" else ())


def test_realworld_helm_values_are_not_a_sharing_config():
    text = realworld("device-plugin", "helm-values.yaml").read_text()
    snapshot = normalise([configmap("nvidia-device-plugin", "values", {"values.yaml": text})])
    assert (snapshot.configmaps, snapshot.sharing_configs) == ((), ())


def test_realworld_mig_parted_configmap_embedded_as_text():
    objects = load_snapshot_objects(
        [realworld("mig", "gpu-operator-default-mig-parted-config-configmap.yaml")]
    )
    (cm,) = normalise(objects).configmaps
    assert (cm.namespace, cm.name, cm.purpose) == (
        "FILLED BY THE OPERATOR",
        "default-mig-parted-config",
        "mig_parted",
    )


# --- workloads, services, RBAC, namespaces, quotas ---------------------------------------------


def test_workload_images_labels_and_spec_hash():
    ds = {
        "kind": "DaemonSet",
        "metadata": {
            "name": "nvidia-device-plugin-daemonset",
            "namespace": "gpu-operator",
            "labels": {"app": "nvidia-device-plugin-daemonset"},
        },
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {
                    "initContainers": [
                        {
                            "name": "toolkit-validation",
                            "image": "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.9.2",
                        }
                    ],
                    "containers": [
                        {
                            "name": "nvidia-device-plugin",
                            "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
                        }
                    ],
                },
            }
        },
    }
    (workload,) = normalise([ds]).workloads
    assert workload.kind == "DaemonSet"
    assert workload.labels == {"app": "nvidia-device-plugin-daemonset"}
    assert workload.images == {
        "toolkit-validation": "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.9.2",
        "nvidia-device-plugin": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
    }
    # Template metadata is outside spec.template.spec: relabelling pods is not drift.
    relabelled = yaml.safe_load(yaml.safe_dump(ds))
    relabelled["spec"]["template"]["metadata"]["labels"] = {"app": "y"}
    upgraded = yaml.safe_load(yaml.safe_dump(ds))
    upgraded["spec"]["template"]["spec"]["containers"][0]["image"] = (
        "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"
    )
    assert normalise([relabelled]).workloads[0].spec_hash == workload.spec_hash
    assert normalise([upgraded]).workloads[0].spec_hash != workload.spec_hash


def test_service_ports_type_and_selector():
    svc = {
        "kind": "Service",
        "metadata": {"name": "jupyter", "namespace": "team-alpha"},
        "spec": {
            "type": "NodePort",
            "selector": {"app": "jupyter"},
            "ports": [
                {"port": 80, "targetPort": 8888},
                {"port": 443, "targetPort": "https"},
                {"name": "x"},
            ],
        },
    }
    malformed = {**svc, "metadata": {"name": "plain", "namespace": "team-alpha"}, "spec": None}
    result, plain = normalise([svc, malformed]).services
    assert (result.name, result.type, result.selector) == (
        "jupyter",
        "NodePort",
        {"app": "jupyter"},
    )
    # A named targetPort resolves only against the pod, so the service port stands in.
    assert result.ports == (8888, 443)
    assert (plain.type, plain.selector, plain.ports) == ("ClusterIP", {}, ())


def test_roles_and_bindings():
    objects = [
        {
            "kind": "ClusterRole",
            "metadata": {
                "name": "gpu-config-editor",
                "labels": {"rbac.example.com/aggregate-to-edit": "true"},
            },
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "verbs": ["update", "patch"],
                    "resourceNames": ["time-slicing-config"],
                }
            ],
            "aggregationRule": {
                "clusterRoleSelectors": [
                    {"matchLabels": {"rbac.example.com/aggregate-to-gpu": "true"}}
                ]
            },
        },
        {
            "kind": "RoleBinding",
            "metadata": {"name": "alpha-can-edit", "namespace": "gpu-operator"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "gpu-config-editor",
            },
            "subjects": [
                {"kind": "Group", "name": "alpha-devs"},
                {"kind": "ServiceAccount", "name": "alpha-runner"},
                {"kind": "ServiceAccount", "name": "ci", "namespace": "team-alpha"},
            ],
        },
        {
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "alpha-nodes"},
            "roleRef": {"kind": "ClusterRole", "name": "node-labeler"},
            "subjects": [{"kind": "ServiceAccount", "name": "orphan"}],
        },
    ]
    snapshot = normalise(objects)
    (role,) = snapshot.roles
    assert (role.kind, role.namespace, role.labels) == (
        "ClusterRole",
        None,
        {"rbac.example.com/aggregate-to-edit": "true"},
    )
    assert role.rules[0].resource_names == ("time-slicing-config",)
    assert role.rules[0].verbs == ("update", "patch")
    assert role.aggregation_labels == ({"rbac.example.com/aggregate-to-gpu": "true"},)
    cluster_binding, binding = snapshot.bindings
    assert (binding.role_kind, binding.role_name, binding.namespace) == (
        "ClusterRole",
        "gpu-config-editor",
        "gpu-operator",
    )
    assert binding.subjects == (
        Subject("Group", "alpha-devs", None),
        Subject("ServiceAccount", "alpha-runner", "gpu-operator"),
        Subject("ServiceAccount", "ci", "team-alpha"),
    )
    assert cluster_binding.subjects == (Subject("ServiceAccount", "orphan", None),)


def test_namespaces_and_quotas():
    objects = [
        {
            "kind": "Namespace",
            "metadata": {"name": "team-alpha", "labels": {"gpuposture.io/tenant": "alpha"}},
        },
        {
            "kind": "ResourceQuota",
            "metadata": {"name": "gpu-quota", "namespace": "team-alpha"},
            "spec": {"hard": {"requests.nvidia.com/gpu": 4, "limits.memory": "256Gi"}},
        },
    ]
    snapshot = normalise(objects)
    assert snapshot.namespaces[0].labels == {"gpuposture.io/tenant": "alpha"}
    assert snapshot.quotas[0].hard == {"requests.nvidia.com/gpu": "4", "limits.memory": "256Gi"}


# --- validation, Secrets, counts, determinism --------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (["Pod"], "items[1] is a list"),
        ({"metadata": {"name": "x"}}, "items[1] has no kind"),
        ({"kind": "Node"}, "items[1] (Node) has no metadata"),
        ({"kind": "Node", "metadata": ["gpu-1"]}, "items[1] (Node) has no metadata"),
        (
            {"kind": "Namespace", "metadata": {"namespace": "x"}},
            "items[1] (Namespace) has no metadata.name",
        ),
        (
            {"kind": "Pod", "metadata": {"name": "trainer"}},
            "items[1] (Pod 'trainer') has no metadata.namespace",
        ),
        (
            {"kind": "RoleBinding", "metadata": {"name": "rb", "namespace": ""}},
            "items[1] (RoleBinding 'rb')",
        ),
    ],
)
def test_malformed_objects_raise_naming_index_and_kind(bad, message):
    good = {"kind": "Namespace", "metadata": {"name": "team-alpha"}}
    with pytest.raises(SnapshotError) as excinfo:
        normalise([good, bad])
    assert message in str(excinfo.value)
    assert isinstance(excinfo.value, ValueError)


def test_cluster_scoped_kinds_need_no_namespace():
    objects = [
        {"kind": "ClusterRole", "metadata": {"name": "view-nodes", "namespace": "stray"}},
        {
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "b"},
            "roleRef": {"kind": "ClusterRole", "name": "view-nodes"},
        },
        {"kind": "Namespace", "metadata": {"name": "team-alpha"}},
    ]
    snapshot = normalise(objects)
    assert (snapshot.roles[0].namespace, snapshot.bindings[0].namespace) == (None, None)


def test_secrets_are_counted_and_never_kept():
    secret = {
        "kind": "Secret",
        "metadata": {"name": "hf-token", "namespace": "team-alpha"},
        "data": {"token": "aGZfc2VjcmV0"},
    }
    snapshot = normalise(
        [secret, {"kind": "Secret"}, {"kind": "Namespace", "metadata": {"name": "team-alpha"}}]
    )
    assert snapshot.counts == {"Namespace": 1, "Secret": 2}
    assert snapshot.warnings == (
        "Secret objects in the snapshot were ignored: gpuposture never reads Secrets",
    )
    assert "aGZfc2VjcmV0" not in repr(snapshot) and "hf-token" not in repr(snapshot)


def test_other_kinds_are_counted_and_ignored():
    objects = [
        {"kind": kind, "metadata": {"name": "x", "namespace": "team-alpha"}}
        for kind in ("Job", "CronJob", "StatefulSet", "ReplicaSet", "Ingress", "NetworkPolicy")
    ] + [
        {
            "kind": "ClusterPolicy",
            "apiVersion": "nvidia.com/v1",
            "metadata": {"name": "cluster-policy"},
        }
    ]
    snapshot = normalise(objects)
    assert snapshot.counts == {
        k: 1
        for k in (
            "ClusterPolicy",
            "CronJob",
            "Ingress",
            "Job",
            "NetworkPolicy",
            "ReplicaSet",
            "StatefulSet",
        )
    }
    assert (snapshot.pods, snapshot.workloads) == ((), ())


def test_duplicate_objects_are_kept_once_with_a_warning():
    ns = {"kind": "Namespace", "metadata": {"name": "team-alpha"}}
    snapshot = normalise([ns, ns])
    assert len(snapshot.namespaces) == 1
    assert snapshot.counts == {"Namespace": 2}
    assert snapshot.warnings == (
        "Namespace team-alpha appears more than once in the snapshot; the first copy was kept",
    )


def _mixed_cluster() -> list[dict[str, Any]]:
    return [
        node("gpu-b", {"nvidia.com/gpu.count": "2"}),
        node("gpu-a", {"nvidia.com/gpu.count": "4", "nvidia.com/device-plugin.config": "ts"}),
        pod("team-beta", "p2", ctr("c"), node_name="gpu-b"),
        pod("team-alpha", "p9", ctr("c"), node_name="gpu-a"),
        pod("team-alpha", "p1", ctr("c"), node_name="gpu-a"),
        pod(
            "gpu-operator",
            "plugin",
            ctr("p", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"),
            node_name="gpu-a",
        ),
        {"kind": "Namespace", "metadata": {"name": "team-beta"}},
        {"kind": "Namespace", "metadata": {"name": "team-alpha"}},
        configmap(
            "gpu-operator",
            "plugin-config",
            {"ts": TIME_SLICING, "none": "version: v1\nflags:\n  migStrategy: none\n"},
        ),
        configmap("gpu-operator", "mig", {"config.yaml": "version: v1\nmig-configs: {}\n"}),
        controller(
            "Deployment", "gpu-operator", "gpu-operator", "nvcr.io/nvidia/gpu-operator:v24.9.2"
        ),
        controller(
            "DaemonSet",
            "gpu-operator",
            "nvidia-device-plugin",
            "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
        ),
        {"kind": "Role", "metadata": {"name": "r", "namespace": "team-beta"}},
        {"kind": "Role", "metadata": {"name": "r", "namespace": "team-alpha"}},
        {"kind": "ClusterRole", "metadata": {"name": "r"}},
        {"kind": "Secret", "metadata": {"name": "s", "namespace": "team-alpha"}},
        configmap("gpu-operator", "broken", {"c": "sharing: [\n"}),
        {"kind": "Job", "metadata": {"name": "j", "namespace": "team-alpha"}},
    ]


def test_determinism_shuffled_input_gives_an_equal_snapshot():
    expected = normalise(_mixed_cluster())
    for seed in range(5):
        shuffled = _mixed_cluster()
        random.Random(seed).shuffle(shuffled)
        assert normalise(shuffled) == expected
    assert [p.name for p in expected.pods] == ["plugin", "p1", "p9", "p2"]
    assert [n.name for n in expected.nodes] == ["gpu-a", "gpu-b"]
    assert list(expected.counts) == sorted(expected.counts)
    gpu_a = expected.nodes[0]
    assert (gpu_a.sharing_strategy, gpu_a.time_slicing_replicas) == ("time_slicing", 4)
    assert (gpu_a.device_plugin_version, gpu_a.gpu_operator_version) == ("0.17.0", "24.9.2")


# --- real third-party samples ------------------------------------------------------------------


def _sample(name: str) -> list[dict[str, Any]]:
    return load_snapshot_objects([realworld("k8s-manifests", name)])


def test_realworld_checkov_pod_with_null_containers():
    (obj,) = _sample("checkov-AllowedCapabilitiesSysAdmin__pod-FAILED2.yaml")
    result = pod_from_template(obj)
    assert result is not None
    assert (result.name, result.containers) == ("security-context-demo-1", ())
    # normalise() tolerates it too once the namespace a live API would report is there.
    obj["metadata"]["namespace"] = "default"
    assert normalise([obj]).pods[0].containers == ()


def test_realworld_gpu_operator_driver_daemonset():
    objects = _sample("gpu-operator-golden-driver-minimal.yaml")
    snapshot = normalise(objects)
    (workload,) = snapshot.workloads
    assert (workload.kind, workload.namespace, workload.name) == (
        "DaemonSet",
        "test-operator",
        "nvidia-gpu-driver-ubuntu22.04-7c6d7bd86b",
    )
    assert workload.images["nvidia-driver-ctr"] == "nvcr.io/nvidia/driver:525.85.03-ubuntu22.04"
    # The startup-probe ConfigMap is a shell script: dropped, and no warning for it.
    assert (snapshot.configmaps, snapshot.warnings) == ((), ())
    assert snapshot.counts["ServiceAccount"] == 1
    (daemonset,) = [o for o in objects if o["kind"] == "DaemonSet"]
    result = pod_from_template(daemonset)
    assert result is not None
    assert result.host_pid is True
    by_name = {c.name: c for c in result.containers}
    assert by_name["k8s-driver-manager"].privileged and by_name["k8s-driver-manager"].init
    assert by_name["nvidia-driver-ctr"].privileged
    host_paths = {v.host_path for v in result.volumes if v.kind == "hostPath"}
    assert len(host_paths) == 14
    assert {"/", "/sys", "/dev/log", "/run/nvidia"} <= host_paths


def test_realworld_driver_pod_gives_the_node_driver_version():
    (daemonset,) = [
        o for o in _sample("gpu-operator-golden-driver-minimal.yaml") if o["kind"] == "DaemonSet"
    ]
    driver_pod = {
        "kind": "Pod",
        "metadata": {
            "name": "nvidia-gpu-driver-ubuntu22.04-7c6d7bd86b-q2x9z",
            "namespace": "test-operator",
        },
        "spec": {**daemonset["spec"]["template"]["spec"], "nodeName": "gpu-a10-01"},
        "status": {"phase": "Running"},
    }
    result = only_node([node("gpu-a10-01", {"nvidia.com/gpu.count": "1"}), driver_pod])
    assert (result.driver_version, result.driver_version_source) == ("525.85.03", "driver-pod")


def test_realworld_device_plugin_job_limits():
    (job,) = _sample("device-plugin-testdata-job-1.yaml")
    result = pod_from_template(job)
    assert result is not None
    (container,) = result.containers
    assert (container.gpu_limits, container.gpu_requests) == ({"nvidia.com/gpu": "1"}, {})
    assert result.gpu_resources == {"nvidia.com/gpu": 1}
    assert (result.owner_kind, result.name) == ("Job", "j-e2e-1")
    assert result.tolerations == (
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    )


def test_realworld_gpu_pod_integer_limit():
    (obj,) = _sample("gpu-operator-tests-gpu-pod.yaml")
    result = pod_from_template(obj)
    assert result is not None
    assert result.containers[0].gpu_limits == {"nvidia.com/gpu": "1"}


def test_realworld_shared_t4_deployment_and_node():
    (deployment,) = _sample("gpu-operator-tests-plugin-test-deployment.yaml")
    result = pod_from_template(deployment)
    assert result is not None
    assert result.node_selector == {"nvidia.com/gpu.product": "Tesla-T4-SHARED"}
    assert result.containers[0].allow_privilege_escalation is False
    # A node carrying that product label: a T4 whose GPU is shared.
    t4 = only_node([node("gpu-t4-01", result.node_selector, capacity={"nvidia.com/gpu": "4"})])
    assert (t4.gpu_model, t4.sharing_strategy, t4.gpu_count) == ("Tesla-T4", "time_slicing", None)


def test_realworld_static_device_plugin():
    (ds,) = _sample("device-plugin-static-daemonset.yml")
    result = pod_from_template(ds)
    assert result is not None
    (container,) = result.containers
    assert (
        container.privileged,
        container.allow_privilege_escalation,
        container.capabilities_drop,
    ) == (False, False, ("ALL",))
    assert result.volumes == (
        Volume("kubelet-device-plugins-dir", "/var/lib/kubelet/device-plugins", "hostPath"),
    )
    assert result.namespace == "kube-system"


def test_realworld_privileged_device_plugin_with_service_account():
    snapshot = normalise(_sample("device-plugin-privileged-with-service-account.yml"))
    (ns,) = snapshot.namespaces
    assert ns.labels == {"pod-security.kubernetes.io/enforce": "privileged"}
    (role,) = snapshot.roles
    assert role.rules[1].verbs == ("use",) and role.rules[1].resource_names == ("privileged",)
    (binding,) = snapshot.bindings
    assert binding.subjects == (
        Subject("ServiceAccount", "nvidia-device-plugin", "nvidia-device-plugin"),
    )
    assert snapshot.workloads[0].images == {
        "nvidia-device-plugin-ctr": "nvcr.io/nvidia/k8s-device-plugin:v0.19.1"
    }


@pytest.mark.parametrize(
    ("sample", "container", "added"),
    [
        (
            "kubescape-rule-privileged-container__pod__input_pod.yaml",
            "test-container",
            ("NET_ADMIN", "SYS_ADMIN"),
        ),
        (
            "kubescape-insecure-capabilities__workloads__input_deployment.yaml",
            "php",
            ("MAC_OVERRIDE", "AUDIT_CONTROL"),
        ),
        ("checkov-AllowedCapabilitiesSysAdmin__pod-FAILED.yaml", "sec-ctx-1", ("SYS_ADMIN",)),
    ],
)
def test_realworld_added_capabilities(sample, container, added):
    (obj,) = _sample(sample)
    result = pod_from_template(obj)
    assert result is not None
    assert {c.name: c.capabilities_add for c in result.containers}[container] == added


@pytest.mark.parametrize(
    ("sample", "host_pid", "host_ipc"),
    [
        ("checkov-ShareHost__cronjob-hostresources-FAILED.yaml", True, True),
        ("checkov-ShareHost__privilegedPod-PASS.yaml", False, False),
        ("kubescape-host-pid-ipc-privileges__workload__input_deployment.yaml", True, True),
    ],
)
def test_realworld_host_namespaces(sample, host_pid, host_ipc):
    (obj,) = _sample(sample)
    result = pod_from_template(obj)
    assert result is not None
    assert (result.host_pid, result.host_ipc) == (host_pid, host_ipc)
