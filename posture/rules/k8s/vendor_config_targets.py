"""What K8S-004 guards of other vendors' GPU stacks: the custom resources that set their
driver, device plugin and sharing for every node they manage. PURE.

AMD's GPU Operator is configured by its DeviceConfig (`deviceconfigs.amd.com`, namespaced, in
the operator's namespace; AMD GPU Operator docs, "Full Reference Config"): the driver image and
version, the device plugin's and node labeller's images and arguments, and GPU partitioning.
It is AMD's ClusterPolicy. Intel's Device Plugins Operator is configured by GpuDevicePlugin
(`gpudeviceplugins.deviceplugin.intel.com`, cluster-scoped; intel/intel-device-plugins-for-
kubernetes, deployments/operator): the GPU plugin's image and `sharedDevNum`, how many pods
time-share each card. A tenant that may write either turns whole GPUs into shared ones for
every tenant there, or runs an image of its choosing as a privileged plugin on every node.
NVIDIA's Network Operator is configured by its NicClusterPolicy (`nicclusterpolicies.
mellanox.com`, cluster-scoped; Mellanox/network-operator, api/v1alpha1): the DOCA/MOFED driver
image it loads as kernel modules on every GPU node it manages, and the RDMA shared device
plugin's config (how many pods share each RDMA device). Writing it runs a privileged image of
the writer's choosing beside every GPU, as writing the GPU Operator's ClusterPolicy does.

gpuposture does not read these resources: where the vendor's operator is seen running, they
exist (the operator does nothing without one) and a write to any of them is reported, marked
as not seen; where it is not, a rule naming them (or the API group) is still reported, low, as
for NVIDIA's ClusterPolicy (rbac_gpu_targets).
"""

from __future__ import annotations

from inventory.snapshot import ClusterSnapshot
from inventory.sources.images import other_vendor
from inventory.sources.stack_operators import (
    network_operator_namespaces,
    operator_deployment_namespaces,
)
from inventory.sources.vendor_stacks import vendor_role
from posture.rules.k8s.rbac_targets import Target

AMD_GROUP, AMD_RESOURCE, AMD_KIND = "amd.com", "deviceconfigs", "DeviceConfig"
INTEL_GROUP, INTEL_RESOURCE, INTEL_KIND = (
    "deviceplugin.intel.com",
    "gpudeviceplugins",
    "GpuDevicePlugin",
)
NIC_GROUP, NIC_RESOURCE, NIC_KIND = "mellanox.com", "nicclusterpolicies", "NicClusterPolicy"
NIC_OPERATOR = "NVIDIA's Network Operator"
# The only NicClusterPolicy the operator acts on (Mellanox/network-operator,
# consts.NicClusterPolicyResourceName): any other name is marked unsupported and ignored, so a
# grant limited by resourceNames to another name steers nothing.
NIC_POLICY_NAME = "nic-cluster-policy"
NOT_READ = (
    "{operator} runs in namespace {namespaces}; its {kind} objects are not read "
    "by gpuposture: any of them sets the driver, device plugin and sharing of its GPU nodes"
)
NO_OPERATOR = (
    "{operator} was not seen: the grant names {resource}.{group}, which takes effect "
    "wherever that operator is installed"
)


def vendor_config_targets(snapshot: ClusterSnapshot) -> list[Target]:
    """AMD's DeviceConfigs (in the AMD operator's namespaces), Intel's GpuDevicePlugins and
    NVIDIA's Network Operator's NicClusterPolicy."""
    return _amd(snapshot) + _intel(snapshot) + _nic_cluster_policy(snapshot)


def _operator(snapshot: ClusterSnapshot, vendor: str) -> frozenset[str]:
    """Namespaces of `vendor`'s GPU operator, placed by its image and RBAC or operands."""

    def theirs(image: str) -> bool:
        return other_vendor(image) == vendor

    return operator_deployment_namespaces(
        snapshot.workloads,
        snapshot.bindings,
        is_operator=lambda i: theirs(i) and vendor_role(i) == "gpu_operator",
        is_operand=lambda i: theirs(i) and vendor_role(i) not in (None, "gpu_operator"),
    )


def _amd(snapshot: ClusterSnapshot) -> list[Target]:
    found = sorted(_operator(snapshot, "AMD"))
    if not found:
        return [
            _unseen_operator(
                "AMD's operator", "amd_gpu_operator", AMD_KIND, AMD_GROUP, AMD_RESOURCE
            )
        ]
    said = NOT_READ.format(operator="AMD's operator", namespaces=", ".join(found), kind=AMD_KIND)
    purpose = "amd_gpu_operator"
    return [
        Target(AMD_KIND, AMD_GROUP, AMD_RESOURCE, ns, None, purpose, unseen=said, any_name=True)
        for ns in found
    ]


def _intel(snapshot: ClusterSnapshot) -> list[Target]:
    found = sorted(_operator(snapshot, "Intel"))
    if not found:
        return [
            _unseen_operator(
                "Intel's operator", "intel_gpu_operator", INTEL_KIND, INTEL_GROUP, INTEL_RESOURCE
            )
        ]
    said = NOT_READ.format(
        operator="Intel's operator", namespaces=", ".join(found), kind=INTEL_KIND
    )
    return [
        Target(
            INTEL_KIND,
            INTEL_GROUP,
            INTEL_RESOURCE,
            None,
            None,
            "intel_device_plugins_operator",
            unseen=said,
            any_name=True,
        )
    ]


def _nic_cluster_policy(snapshot: ClusterSnapshot) -> list[Target]:
    found = sorted(network_operator_namespaces(snapshot.workloads, snapshot.bindings))
    purpose = "nvidia_network_operator"
    if not found:
        return [_unseen_operator(NIC_OPERATOR, purpose, NIC_KIND, NIC_GROUP, NIC_RESOURCE)]
    said = (
        f"{NIC_OPERATOR} runs in namespace {', '.join(found)}; the {NIC_KIND} it acts on, "
        f"{NIC_POLICY_NAME}, is not read by gpuposture: it sets the network driver, the RDMA "
        "device plugins and their sharing on its GPU nodes"
    )
    return [Target(NIC_KIND, NIC_GROUP, NIC_RESOURCE, None, NIC_POLICY_NAME, purpose, unseen=said)]


def _unseen_operator(operator: str, purpose: str, kind: str, group: str, resource: str) -> Target:
    return Target(
        kind,
        group,
        resource,
        None,
        None,
        purpose,
        unseen=NO_OPERATOR.format(operator=operator, resource=resource, group=group),
        any_name=True,
        explicit=True,
        severity="low",
    )
