"""normalise(): nodes that are not "N whole NVIDIA GPUs" -- NICs under nvidia.com/, GPU
Operator sandbox (VM) nodes, and GFD's MIG single-strategy overrides."""

from __future__ import annotations

import pytest

from inventory.sources.node_kinds import vm_device_kind
from inventory.sources.normalise import normalise
from tests.inventory.normalise_helpers import (
    PLATFORM,
    configmap,
    controller,
    ctr,
    node,
    only_node,
    pod,
)

# A time-slicing config every unlabelled GPU node falls back to (its only key).
SLICE_ALL = configmap(
    "gpu-operator",
    "time-slicing-config",
    {
        "any": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
        "    - name: nvidia.com/gpu\n      replicas: 4\n"
    },
)


@pytest.mark.parametrize(
    ("resource", "kind"),
    [
        ("nvidia.com/GH100_H100_SXM5_80GB", "passthrough"),
        ("nvidia.com/GA102GL_A10", "passthrough"),
        ("nvidia.com/TU104GL_TESLA_T4", "passthrough"),
        ("nvidia.com/NVIDIA_A10-12Q", "vgpu"),
        ("nvidia.com/GRID_T4-16Q", "vgpu"),
        ("nvidia.com/NVIDIA_A100-1-5C", "vgpu"),
        ("nvidia.com/gpu", None),
        ("nvidia.com/mig-1g.10gb", None),
        ("nvidia.com/hostdev", None),
        ("nvidia.com/sriov_rdma_vf", None),
    ],
)
def test_sandbox_device_plugin_names(resource, kind):
    assert vm_device_kind(resource) == kind


def test_network_operator_nics_do_not_make_a_gpu_node():
    # The NVIDIA Network Operator advertises SR-IOV VFs under nvidia.com/ on CPU nodes.
    capacity = {"nvidia.com/hostdev": 4, "nvidia.com/sriov_rdma_vf": 8, "cpu": "64"}
    result = only_node([node("cpu-rdma", {"kubernetes.io/os": "linux"}, capacity=capacity)])
    assert not result.is_gpu_node
    assert result.gpu_capacity == {}


def test_nics_on_a_gpu_node_do_not_hide_its_gpus():
    labels = {"nvidia.com/gpu.count": "8", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    capacity = {"nvidia.com/gpu": 8, "nvidia.com/hostdev": 8}
    result = only_node([node("dgx", labels, capacity=capacity)])
    assert result.is_gpu_node and result.gpu_count == 8
    # The NICs are no GPU capacity either, as they are no pod's GPU holding.
    assert result.gpu_capacity == {"nvidia.com/gpu": 8}


def test_a_passthrough_node_takes_no_sharing_from_the_device_plugin_config():
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.workload.config": "vm-passthrough"}
    capacity = {"nvidia.com/GH100_H100_SXM5_80GB": 8}
    result = only_node([SLICE_ALL, node("vm-pt", labels, capacity=capacity)])
    assert result.is_gpu_node
    assert result.sharing_strategy == "none"
    assert result.time_slicing_replicas is None
    assert result.resource_sharing == ()
    # vfio-pci holds the GPUs: no host driver and no toolkit, rather than "unknown".
    assert set(result.not_installed) >= {"driver", "container_toolkit"}


def test_a_passthrough_node_counts_its_gpus_from_the_sandbox_plugins_capacity():
    # No GFD on sandbox nodes, so no nvidia.com/gpu.count: before, gpu_count stayed None.
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.workload.config": "vm-passthrough"}
    capacity = {"nvidia.com/GA100_A100_PCIE_40GB": 4, "nvidia.com/TU104GL_TESLA_T4": 2}
    result = only_node([node("vm-pt", labels, capacity=capacity)])
    assert result.gpu_count == 6
    assert "nvidia.com/GA100_A100_PCIE_40GB=4" in result.gpu_count_basis
    # GFD's label, where it runs, is the count, and the basis names it.
    counted = only_node([node("vm-pt", {**labels, "nvidia.com/gpu.count": "4"}, capacity=capacity)])
    assert counted.gpu_count == 4
    assert counted.gpu_count_basis.startswith("label nvidia.com/gpu.count=4 (GPU Feature")


VGPU_HOST = {
    "nvidia.com/gpu.present": "true",
    "nvidia.com/gpu.workload.config": "vm-vgpu",
    # What vgpu-device-manager labels a vm-vgpu node with: the config it applied, no count.
    "nvidia.com/vgpu.config": "A10-12Q",
    "nvidia.com/vgpu.config.state": "success",
}


def test_a_vgpu_hosts_gpu_count_is_unknown_and_says_why():
    """A vm-vgpu node's capacity counts vGPUs (2 A10s of 24 GB hold 4 A10-12Q): it is never
    taken for GPUs, nor divided by a per-GPU guess; the basis says why the count is unknown."""
    host = only_node([node("vm-vgpu", VGPU_HOST, capacity={"nvidia.com/NVIDIA_A10-12Q": 4})])
    assert host.gpu_count is None
    assert host.gpu_count_basis.startswith(
        "the capacity nvidia.com/NVIDIA_A10-12Q=4 counts vGPUs; "
        "nvidia.com/vgpu.config=A10-12Q names the vGPU type, not a number of GPUs"
    )


def test_a_vgpu_hosts_gpu_count_where_an_input_states_it():
    capacity = {"nvidia.com/NVIDIA_A10-12Q": 4}
    labelled = {**VGPU_HOST, "nvidia.com/gpu.count": "2"}
    host = only_node([node("vm-vgpu", labelled, capacity=capacity)])
    assert host.gpu_count == 2
    assert host.gpu_count_basis.startswith("label nvidia.com/gpu.count=2 (GPU Feature Discovery)")
    # A cloud instance type whose GPUs are known (AWS g5.12xlarge: 4 A10G) states it too.
    typed = {**VGPU_HOST, "node.kubernetes.io/instance-type": "g5.12xlarge"}
    cloud = only_node([node("vm-vgpu", typed, capacity=capacity)])
    assert cloud.gpu_count == 4
    assert cloud.gpu_count_basis.startswith("the cloud's GPU count label or instance type")


def test_a_vgpu_host_is_a_vgpu_node_with_a_host_driver_still_to_find():
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.workload.config": "vm-vgpu"}
    result = only_node(
        [SLICE_ALL, node("vm-vgpu", labels, capacity={"nvidia.com/NVIDIA_A10-12Q": 4})]
    )
    assert result.sharing_strategy == "vgpu"
    assert result.time_slicing_replicas is None
    assert "container_toolkit" in result.not_installed
    assert "driver" not in result.not_installed  # the vGPU Manager is the host's driver


VGPU_MANAGER = "registry.example.com/nvidia/vgpu-manager:550.127.06-ubuntu22.04"


def test_the_vgpu_manager_is_the_host_driver_of_a_vgpu_node():
    # Before: no `vgpu-manager` component, so driver_version stayed None and STACK-004 fired.
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.workload.config": "vm-vgpu"}
    manager = pod(
        "gpu-operator",
        "nvidia-vgpu-manager-daemonset-x1",
        ctr("nvidia-vgpu-manager-ctr", VGPU_MANAGER),
        node_name="vm-vgpu",
    )
    host = node("vm-vgpu", labels, capacity={"nvidia.com/NVIDIA_A100-4C": 10})
    result = only_node([host, manager])
    assert (result.driver_version, result.driver_version_source) == (
        "550.127.06",
        "vgpu-manager-pod",
    )
    assert "driver" not in result.not_installed


def test_the_sandbox_device_plugin_is_said_to_serve_a_sandbox_node():
    # Before: "no pod of it on the node", though the sandbox plugin runs there.
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.workload.config": "vm-vgpu"}
    plugin = controller(
        "DaemonSet",
        "gpu-operator",
        "nvidia-device-plugin-daemonset",
        "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
    )
    plugin["spec"]["template"]["spec"]["nodeSelector"] = {
        "nvidia.com/gpu.deploy.device-plugin": "true"
    }
    sandbox = pod(
        "gpu-operator",
        "nvidia-sandbox-device-plugin-daemonset-x1",
        ctr(
            "nvidia-sandbox-device-plugin-ctr", "nvcr.io/nvidia/kubevirt-gpu-device-plugin:v1.2.10"
        ),
        node_name="vm-vgpu",
    )
    host = node("vm-vgpu", labels, capacity={"nvidia.com/NVIDIA_A100-4C": 10})
    result = only_node([host, plugin, sandbox])
    why = result.not_installed["device_plugin"]  # NVIDIA's plugin: never judged by its bulletins
    assert "sandbox device plugin" in why and "kubevirt-gpu-device-plugin:v1.2.10" in why
    assert result.device_plugin_version is None


def test_a_container_node_beside_them_still_reads_the_config():
    labels = {"nvidia.com/gpu.count": "2", "nvidia.com/gpu.workload.config": "container"}
    result = only_node([SLICE_ALL, node("ctr", labels, capacity={"nvidia.com/gpu": 8})])
    assert result.sharing_strategy == "time_slicing"


def test_mig_single_strategy_counts_and_product_are_not_the_physical_gpus():
    # GFD with the single strategy overwrites the count with MIG devices and names the profile.
    labels = {
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/mig.config": "all-1g.10gb",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb",
        "nvidia.com/gpu.count": "56",
    }
    result = only_node([node("a100", labels, capacity={"nvidia.com/gpu": 56})])
    assert result.gpu_model == "NVIDIA-A100-SXM4-80GB"
    # 56 MIG devices, not 56 GPUs: 8 A100s of 7 each (tests/inventory/test_mig_single_count.py)
    assert result.gpu_count == 8
    assert result.is_gpu_node and result.sharing_strategy == "mig"


def test_mig_single_strategy_time_sliced_keeps_its_model():
    labels = {
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb-SHARED",
        "nvidia.com/gpu.count": "16",
        "nvidia.com/gpu.replicas": "2",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
    }
    result = only_node([node("h100", labels, capacity={"nvidia.com/gpu": 32})])
    assert result.gpu_model == "NVIDIA-H100-80GB-HBM3"
    assert result.sharing_strategy == "time_slicing"


def test_vm_pods_on_a_sandbox_node_keep_their_gpu_resources():
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.workload.config": "vm-vgpu"}
    launcher = {
        "name": "compute",
        "image": "quay.io/kubevirt/virt-launcher:v1.3.0",
        "resources": {"limits": {"nvidia.com/NVIDIA_A10-12Q": "1"}},
    }
    snapshot = normalise(
        [
            node("vm-vgpu", labels, capacity={"nvidia.com/NVIDIA_A10-12Q": 4}),
            pod("alpha", "virt-launcher-vm-abcde", launcher, node_name="vm-vgpu"),
        ],
        **PLATFORM,
    )
    assert snapshot.pods[0].gpu_resources == {"nvidia.com/NVIDIA_A10-12Q": 1}


def test_other_vendors_accelerators_are_said_not_judged():
    snapshot = normalise(
        [
            node("mi300", {"amd.com/gpu.family": "AI"}, capacity={"amd.com/gpu": 8}),
            node("gaudi", {}, capacity={"habana.ai/gaudi": 8}),
            node("tpu", {}, capacity={"google.com/tpu": 4}),
            node("cpu", {}, capacity={"cpu": "64"}),
        ],
        **PLATFORM,
    )
    (warning,) = [w for w in snapshot.warnings if "does not judge" in w]
    assert "3 node(s)" in warning
    assert "mi300 (amd.com/gpu)" in warning and "gaudi (habana.ai/gaudi)" in warning
    assert "not safe" in warning
    assert "model, driver stack and telemetry are not read" in warning
    # SHARE-001/003/007 and LEAK-002 judge AMD's sharing; Gaudi's and TPU's are not judged.
    judged, _, unjudged = warning.partition("The sharing of ")
    assert "judged from the node's labels and capacity for amd.com/gpu" in judged
    assert "google.com/tpu, habana.ai/gaudi is not judged" in unjudged
    assert "amd.com/gpu" not in unjudged.split("is not judged")[0]
    # Nothing NVIDIA is claimed of them: no GPU node, so no stack or sharing verdict.
    assert not any(n.is_gpu_node for n in snapshot.nodes)


def test_intel_and_amd_sharing_is_not_said_to_be_in_no_sharing_check():
    snapshot = normalise(
        [
            node("flex", {}, capacity={"gpu.intel.com/i915": 4}),
            node("mi300", {}, capacity={"amd.com/cpx_nps4": 64}),
        ],
        **PLATFORM,
    )
    (warning,) = [w for w in snapshot.warnings if "does not judge" in w]
    assert "appear in no sharing check" not in warning
    assert "amd.com/cpx_nps4, gpu.intel.com/i915" in warning and "SHARE-001" in warning


def test_an_eks_amd_gpu_instance_is_not_an_nvidia_gpu_node():
    # g4ad: Karpenter labels the AMD GPU like an NVIDIA one; the AMD device plugin advertises it.
    labels = {
        "karpenter.k8s.aws/instance-gpu-name": "radeon-pro-v520",
        "karpenter.k8s.aws/instance-gpu-manufacturer": "amd",
        "karpenter.k8s.aws/instance-gpu-count": "1",
    }
    snapshot = normalise([node("g4ad", labels, capacity={"amd.com/gpu": 1})], **PLATFORM)
    (result,) = snapshot.nodes
    assert not result.is_gpu_node
    assert (result.gpu_model, result.gpu_count) == (None, None)
    assert any("g4ad (amd.com/gpu)" in w for w in snapshot.warnings)


def _policy(sandbox: dict) -> dict:
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": {
            "sandboxWorkloads": sandbox,
            "devicePlugin": {"config": {"name": "time-slicing-config", "default": "any"}},
        },
    }


VM_ONLY = {"nvidia.com/GH100_H100_SXM5_80GB": 4}  # the sandbox device plugin's alone
# Mid-move: the sandbox plugin's resource beside the container plugin's, which still serves.
BOTH = {"nvidia.com/gpu": 4, "nvidia.com/GH100_H100_SXM5_80GB": 4}


@pytest.mark.parametrize(
    ("sandbox", "labels", "capacity", "strategy"),
    [
        ({"enabled": True, "defaultWorkload": "vm-passthrough"}, {}, VM_ONLY, "none"),
        ({"enabled": True, "defaultWorkload": "vm-vgpu"}, {}, VM_ONLY, "vgpu"),
        # The node's own label wins over the default.
        (
            {"enabled": True, "defaultWorkload": "vm-passthrough"},
            {"nvidia.com/gpu.workload.config": "container"},
            BOTH,
            "time_slicing",
        ),
        # Sandbox workloads disabled: the default means nothing.
        ({"enabled": False, "defaultWorkload": "vm-passthrough"}, {}, BOTH, "time_slicing"),
        # The Operator has not moved the node yet: it still serves containers.
        ({"enabled": True, "defaultWorkload": "vm-passthrough"}, {}, BOTH, "time_slicing"),
    ],
)
def test_the_clusterpolicy_default_workload(sandbox, labels, capacity, strategy):
    gpu = node("gpu", {"nvidia.com/gpu.present": "true", **labels}, capacity=capacity)
    cpu = node("cpu", {}, capacity={"cpu": "8"})
    snapshot = normalise([SLICE_ALL, _policy(sandbox), gpu, cpu], **PLATFORM)
    by_name = {n.name: n for n in snapshot.nodes}
    assert by_name["gpu"].sharing_strategy == strategy
    assert by_name["cpu"].sharing_strategy == "none" and not by_name["cpu"].is_gpu_node


def test_kata_passthrough_gpu():
    assert vm_device_kind("nvidia.com/pgpu") == "passthrough"


MIG_ONLY = configmap(
    "gpu-operator",
    "time-slicing-config",
    {
        "any": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
        "    - name: nvidia.com/mig-1g.10gb\n      replicas: 4\n"
    },
)


def test_a_config_that_slices_only_mig_devices_leaves_a_node_without_them_unshared():
    whole = node(
        "a100",
        {"nvidia.com/gpu.count": "8", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
        capacity={"nvidia.com/gpu": 8},
    )
    mig = node(
        "h100",
        {"nvidia.com/gpu.count": "8", "nvidia.com/mig.strategy": "mixed"},
        capacity={"nvidia.com/gpu": 0, "nvidia.com/mig-1g.10gb": 224},
    )
    nodes = {n.name: n for n in normalise([MIG_ONLY, whole, mig], **PLATFORM).nodes}
    assert (nodes["a100"].sharing_strategy, nodes["a100"].time_slicing_replicas) == ("none", None)
    # The MIG node's devices are time-sliced (its holdings say so per resource).
    assert nodes["h100"].time_slicing_replicas == 4
    assert [r.name for r in nodes["h100"].resource_sharing] == ["nvidia.com/mig-1g.10gb"]


def test_a_renamed_resource_of_any_config_is_a_gpu_without_gfd():
    # Two device-plugin ConfigMaps (no fallback applies) and no GFD labels on the node.
    renamed = configmap(
        "gpu-operator",
        "plugin-a",
        {
            "ts": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
            "    - name: nvidia.com/gpu\n      rename: nvidia.com/gpu-ts\n      replicas: 4\n"
        },
    )
    snapshot = normalise(
        [renamed, MIG_ONLY, node("n", {}, capacity={"nvidia.com/gpu-ts": 16})], **PLATFORM
    )
    assert snapshot.nodes[0].is_gpu_node


def test_a_garbled_mig_sharing_label_is_unreadable():
    labels = {
        "nvidia.com/gpu.count": "8",
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig-1g.10gb.sharing-strategy": "sliced-ish",
        "nvidia.com/mig-2g.20gb.sharing-strategy": "none",
    }
    result = only_node([node("h100", labels, capacity={"nvidia.com/mig-1g.10gb": 8})])
    assert [p.name for p in result.unreadable_configs] == [
        "nvidia.com/mig-1g.10gb.sharing-strategy"
    ]
