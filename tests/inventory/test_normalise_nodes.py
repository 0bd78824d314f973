"""normalise(): nodes -- image versions, GPU model/count/capacity, driver and components."""

from __future__ import annotations

import pytest

from inventory.node_components import deployed_unknown
from inventory.snapshot import Taint
from inventory.sources.normalise import image_version, normalise
from tests.inventory.normalise_helpers import (
    PLATFORM,
    controller,
    ctr,
    node,
    only_node,
    platform_namespace,
    pod,
)

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
        # GFD writes the three together: without the revision label the set is partial and
        # names no version (580.159 could be 580.159.03; rtupgrade k49), the next source speaks.
        (
            {"nvidia.com/cuda.driver.major": "580", "nvidia.com/cuda.driver.minor": "159"},
            [],
            (None, None),
        ),
        (
            {"nvidia.com/cuda.driver.major": "580", "nvidia.com/cuda.driver.minor": "159"},
            [DRIVER_POD],
            ("525.85.03", "driver-pod"),
        ),
        (
            {
                "nvidia.com/cuda.driver-version.major": "580",
                "nvidia.com/cuda.driver-version.minor": "159",
            },
            [],
            (None, None),
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
        # A label that is no version is never read as one (a branch, N/A, a suffix): the
        # driver pod is asked next, else the driver is unknown.
        ({"nvidia.com/cuda.driver-version.full": "535"}, [], (None, None)),
        ({"nvidia.com/cuda.driver-version.full": "N/A"}, [], (None, None)),
        ({"nvidia.com/cuda.driver-version.full": "550.163.01-grid"}, [], (None, None)),
        (
            {"nvidia.com/cuda.driver-version.full": "N/A"},
            [
                pod(
                    "gpu-operator",
                    "drv",
                    ctr("d", "nvcr.io/nvidia/driver:550.163.01-ubuntu22.04"),
                    node_name="gpu-a100-01",
                )
            ],
            ("550.163.01", "driver-pod"),
        ),
        ({"nvidia.com/cuda.driver-version.full": " 418.87 "}, [], ("418.87", "gfd-label")),
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
    gpu, cpu = normalise(objects, **PLATFORM).nodes[::-1]
    assert gpu.name == "gpu-l40s-01"
    assert (gpu.device_plugin_version, gpu.container_toolkit_version) == ("0.14.5", "1.17.4")
    assert (gpu.dcgm_exporter_version, gpu.mig_manager_version) == ("3.3.9-3.6.1", "0.10.0")
    assert (cpu.device_plugin_version, cpu.container_toolkit_version) == (None, None)


def test_gpu_feature_discovery_in_the_plugins_image_is_not_the_device_plugin():
    """GFD runs from the k8s-device-plugin image; on a node whose plugin is HAMi's, GFD's tag is
    not an NVIDIA device plugin version (bulletins about the plugin must not reach the node)."""
    gfd_image = "nvcr.io/nvidia/k8s-device-plugin:v0.17.2"
    objects = [
        node("l40s-01", {"nvidia.com/gpu.count": "4"}),
        platform_namespace("nvidia-dp"),
        pod("gpu-operator", "gfd-a", ctr("gpu-feature-discovery", gfd_image), node_name="l40s-01"),
        pod(
            "nvidia-dp",
            "gfd-b",
            ctr("labeller", gfd_image, command=["/usr/bin/gpu-feature-discovery"]),
            node_name="l40s-01",
        ),
        pod(
            "kube-system",
            "hami-device-plugin-x",
            ctr("device-plugin", "docker.io/projecthami/hami:v2.6.1"),
            node_name="l40s-01",
        ),
    ]
    hami_node = only_node(objects)
    assert hami_node.device_plugin_version is None
    assert "HAMi runs the device plugin here" in hami_node.deployed["device_plugin"]
    # Its version is HAMi's image's: known, only not NVIDIA's. STACK-004 does not ask to make
    # it known (nothing would): the driver and toolkit on the host stay unknown here.
    assert deployed_unknown(hami_node) == ["driver", "container_toolkit"]
    # The plugin's own container in the same image is still the plugin.
    objects.append(
        pod("nvidia-dp", "plugin", ctr("nvidia-device-plugin-ctr", gfd_image), node_name="l40s-01")
    )
    assert only_node(objects).device_plugin_version == "0.17.2"


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


def test_a_driver_tag_naming_the_kernel_after_the_version_reads_the_driver_alone():
    # The GPU Operator on OpenShift tags the driver it builds against the node's kernel with
    # that kernel after the driver version; the kernel's numbers are not the driver's.
    image = "nvcr.io/nvidia/driver:535.216.01-4.18.0-513.24.1.el8_9.x86_64-rhcos4.13"
    objects = [
        node("gpu-ocp-01", {"nvidia.com/gpu.count": "1"}),
        platform_namespace("nvidia-gpu-operator"),
        pod(
            "nvidia-gpu-operator", "driver", ctr("nvidia-driver-ctr", image), node_name="gpu-ocp-01"
        ),
    ]
    found = only_node(objects)
    assert found.driver_version == "535.216.01"
    assert found.driver_version_source == "driver-pod"
