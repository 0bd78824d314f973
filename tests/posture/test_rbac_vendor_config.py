"""K8S-004 for other vendors' stack configuration: AMD's DeviceConfig (amd.com, its GPU
Operator's ClusterPolicy: driver, plugin images, partitioning) and Intel's GpuDevicePlugin
(deviceplugin.intel.com: the plugin's image and sharedDevNum). A tenant that may write them
steers every node of that vendor, as one writing NVIDIA's ClusterPolicy (rtamd k42, k52); so
does NVIDIA's Network Operator's NicClusterPolicy (mellanox.com: the DOCA/MOFED driver image on
every GPU node, the RDMA shared device plugin's sharing). Not
read by gpuposture: said as not seen; with no operator of the vendor seen, only a rule naming
them is reported, low."""

from __future__ import annotations

from dataclasses import replace

import pytest

from inventory.snapshot import Workload
from posture.rules.registry import run_checks
from tests.posture.test_rules_rbac import DEVS, cluster_role, crb, rule, sa, world

AMD_NS, INTEL_NS, NIC_NS = "kube-amd-gpu", "inteldeviceplugins-system", "nvidia-network-operator"
AMD_OPERATOR = Workload(
    "Deployment", AMD_NS, "amd-gpu-operator", images={"m": "docker.io/rocm/gpu-operator:v1.2.0"}
)
INTEL_OPERATOR = Workload(
    "Deployment",
    INTEL_NS,
    "inteldeviceplugins-controller-manager",
    images={"m": "intel/intel-deviceplugin-operator:0.31.1"},
)
NIC_OPERATOR = Workload(
    "Deployment",
    NIC_NS,
    "network-operator",
    images={"m": "nvcr.io/nvidia/cloud-native/network-operator:v25.4.0"},
)
OPERATOR_RBAC = (
    crb("amd-op", "amd-op", sa(AMD_NS, "amd-gpu-operator")),
    crb("intel-op", "intel-op", sa(INTEL_NS, "inteldeviceplugins-controller-manager")),
    crb("nic-op", "nic-op", sa(NIC_NS, "network-operator")),
)


def _k8s004(role, workloads=(AMD_OPERATOR, INTEL_OPERATOR, NIC_OPERATOR)):
    inputs = world([role], [crb("devs", "r", DEVS), *OPERATOR_RBAC])
    snapshot = replace(inputs.snapshot, workloads=tuple(workloads), configmaps=())
    return run_checks(replace(inputs, snapshot=snapshot), only=["K8S-004"])


@pytest.mark.parametrize(
    ("group", "resource", "kind"),
    [
        ("amd.com", "deviceconfigs", f"any DeviceConfig in namespace {AMD_NS}"),
        ("deviceplugin.intel.com", "gpudeviceplugins", "any GpuDevicePlugin"),
        ("mellanox.com", "nicclusterpolicies", "NicClusterPolicy nic-cluster-policy"),
    ],
)
def test_a_tenant_that_may_patch_another_vendors_stack_config(group, resource, kind):
    (draft,) = _k8s004(cluster_role("r", rule((group,), (resource,), ("update", "patch"))))
    assert draft.severity == ""  # the check's: high, the operator runs
    assert draft.evidence["target_seen"] is False
    (reached,) = draft.evidence["objects"]
    assert reached["object"] == kind and reached["seen"] is False


def test_reading_them_is_no_finding():
    role = cluster_role("r", rule(("amd.com",), ("deviceconfigs",), ("get", "list", "watch")))
    assert not _k8s004(role)


def test_no_operator_seen_a_rule_naming_them_is_low():
    role = cluster_role("r", rule(("amd.com",), ("deviceconfigs",), ("patch",)))
    (draft,) = _k8s004(role, workloads=())
    assert draft.severity == "low"
    assert "AMD's operator was not seen" in draft.evidence["target_unseen"]


def test_a_tenant_that_may_write_the_network_operators_policy_is_told_why():
    role = cluster_role("r", rule(("mellanox.com",), ("*",), ("create", "update")))
    (draft,) = _k8s004(role)
    assert draft.severity == ""  # the check's own: high
    assert draft.evidence["target_unseen"] == (
        f"NVIDIA's Network Operator runs in namespace {NIC_NS}; the NicClusterPolicy it acts "
        "on, nic-cluster-policy, is not read by gpuposture: it sets the network driver, the "
        "RDMA device plugins and their sharing on its GPU nodes"
    )


def test_a_grant_limited_to_another_policy_name_steers_nothing():
    """The operator acts on `nic-cluster-policy` alone (rtself10 k53); a rule naming another
    cannot create (resourceNames never grants create) nor change the one in force."""
    verbs = ("create", "update", "patch")
    other = rule(("mellanox.com",), ("nicclusterpolicies",), verbs, names=("scratch-policy",))
    assert not _k8s004(cluster_role("r", other))
    named = rule(("mellanox.com",), ("nicclusterpolicies",), verbs, names=("nic-cluster-policy",))
    (draft,) = _k8s004(cluster_role("r", named))
    assert draft.severity == ""


def test_no_network_operator_seen_a_rule_naming_its_policy_is_low():
    role = cluster_role("r", rule(("mellanox.com",), ("nicclusterpolicies",), ("patch",)))
    (draft,) = _k8s004(role, workloads=(AMD_OPERATOR,))
    assert draft.severity == "low"
    assert "NVIDIA's Network Operator was not seen" in draft.evidence["target_unseen"]
