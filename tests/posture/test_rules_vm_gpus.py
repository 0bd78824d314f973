"""KubeVirt VMs on GPU Operator sandbox nodes: a vGPU is shared by vGPU, a passthrough GPU is
whole, and no container-side check (CDI) is judged where GPUs go to VMs."""

from __future__ import annotations

import dataclasses

import posture.rules  # noqa: F401  (registers the existing checks)
import posture.rules.share  # noqa: F401
from inventory.snapshot import GpuOperatorPolicy, Node
from posture.rules.common import gpu_holdings
from tests.posture.builders import gpu_node, inputs, pod, run, tenant

EXT = tenant("ext", "external")
TEAM = tenant("team", namespaces=("team-a",))
VGPU = "nvidia.com/NVIDIA_A10-12Q"
PASSTHROUGH = "nvidia.com/GH100_H100_SXM5_80GB"


def sandbox_node(workload: str, resource: str, strategy: str) -> Node:
    return gpu_node(
        "vm-1",
        gpu_count=None,
        gpu_model=None,
        gpu_capacity={resource: 4},
        labels={"nvidia.com/gpu.workload.config": workload},
        sharing_strategy=strategy,
    )


def _world(node: Node, resource: str, **snapshot):
    pods = (
        pod("ext", "virt-launcher-a", node=node.name, gpu={resource: 1}),
        pod("team-a", "virt-launcher-b", node=node.name, gpu={resource: 1}),
    )
    return inputs(nodes=(node,), pods=pods, tenants=(EXT, TEAM), **snapshot)


def test_vms_of_two_tenants_on_vgpus_of_one_host_share_by_vgpu():
    world = _world(sandbox_node("vm-vgpu", VGPU, "vgpu"), VGPU)
    (draft,) = run("SHARE-003", world)
    assert draft.tenants == ("ext", "team")
    assert "vgpu_best_effort" in draft.title
    (perf,) = run("SHARE-008", world)
    # internal is allowed only the predictable vGPU schedulers (vgpu_fixed, vgpu_equal)
    assert perf.tenants == ("ext", "team")


def test_passthrough_gpus_are_whole_gpus():
    world = _world(sandbox_node("vm-passthrough", PASSTHROUGH, "none"), PASSTHROUGH)
    assert run("SHARE-003", world) == []
    assert run("SHARE-001", world) == []


def test_no_cdi_finding_where_gpus_go_to_vms():
    policy = GpuOperatorPolicy("cluster-policy", spec={"cdi_enabled": False, "cdi_default": None})
    for node, resource in (
        (sandbox_node("vm-vgpu", VGPU, "vgpu"), VGPU),
        (sandbox_node("vm-passthrough", PASSTHROUGH, "none"), PASSTHROUGH),
    ):
        assert run("STACK-006", _world(node, resource, gpu_operator_policies=(policy,))) == []


# --- MIG devices GFD says are time-sliced, with no config to read ----------------------------

MIG = "nvidia.com/mig-1g.10gb"


def _mig_world(labels: dict[str, str], resource: str = MIG, strategy: str = "mig"):
    node = gpu_node(
        "mig-1",
        gpu_count=8,
        gpu_capacity={resource: 224},
        sharing_strategy=strategy,
        mig_strategy="mixed",
        labels={
            "nvidia.com/mig.strategy": "mixed",
            "nvidia.com/mig.config": "all-1g.10gb",
            **labels,
        },
    )
    pods = (
        pod("ext", "a", node="mig-1", gpu={resource: 1}),
        pod("team-a", "b", node="mig-1", gpu={resource: 1}),
    )
    return inputs(nodes=(node,), pods=pods, tenants=(EXT, TEAM))


def test_gfd_label_of_a_time_sliced_mig_resource_is_read():
    labels = {f"{MIG}.sharing-strategy": "time-slicing", f"{MIG}.replicas": "4"}
    (draft,) = run("SHARE-001", _mig_world(labels))
    assert draft.tenants == ("ext", "team")


def test_a_shared_mig_resource_is_time_sliced():
    (draft,) = run("SHARE-001", _mig_world({}, MIG + ".shared"))
    assert draft.tenants == ("ext", "team")


def test_mig_instances_gfd_calls_unshared_stay_instances():
    labels = {f"{MIG}.sharing-strategy": "none", f"{MIG}.replicas": "1"}
    assert run("SHARE-001", _mig_world(labels)) == []
    assert run("SHARE-003", _mig_world(labels)) == []


def test_mig_instances_gfd_calls_unshared_beside_a_time_sliced_gpu_label():
    # The cluster-wide config time-slices nvidia.com/gpu (GFD labels the node so), but the
    # mixed strategy's MIG devices are other resources, which GFD labels unshared.
    labels = {
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/gpu.replicas": "4",
        f"{MIG}.sharing-strategy": "none",
        f"{MIG}.replicas": "1",
    }
    world = _mig_world(labels, strategy="time_slicing")  # as nodes.py reads the labels
    assert run("SHARE-001", world) == []
    assert run("SHARE-003", world) == []


def test_vgpus_are_not_counted_as_physical_gpus():
    (draft,) = run("SHARE-003", _world(sandbox_node("vm-vgpu", VGPU, "vgpu"), VGPU))
    (entry,) = draft.evidence["nodes"]
    assert entry["co_residence_reason"] == (
        f"the number of physical GPUs behind {VGPU} on vm-1 is unknown"
    )


def test_no_cdi_finding_on_unlabelled_nodes_of_a_vm_only_cluster():
    policy = GpuOperatorPolicy(
        "cluster-policy",
        spec={
            "cdi_enabled": False,
            "sandbox_workloads_enabled": True,
            "sandbox_workloads_default": "vm-passthrough",
        },
    )
    node = gpu_node("vm-1", gpu_capacity={PASSTHROUGH: 4})
    assert run("STACK-006", _world(node, PASSTHROUGH, gpu_operator_policies=(policy,))) == []


def test_a_garbled_mig_sharing_label_is_unknown_not_an_instance():
    labels = {f"{MIG}.sharing-strategy": "sliced-ish"}
    world = _mig_world(labels)
    holdings = gpu_holdings(world, world.snapshot.nodes[0])
    assert {h.mode for h in holdings} == {"unknown"}


def test_the_evidence_says_why_a_vgpu_hosts_gpu_count_is_unknown():
    """The count is null (unknown) in the evidence, never 0, and the evidence says why."""
    why = f"the capacity {VGPU}=4 counts vGPUs; no input states the physical GPUs"
    node = sandbox_node("vm-vgpu", VGPU, "vgpu")
    node = dataclasses.replace(node, gpu_count_basis=why, taints=())
    world = _world(node, VGPU)
    (taint,) = run("K8S-002", world)
    assert (taint.evidence["gpu_count"], taint.evidence["gpu_count_basis"]) == (None, why)
    (share,) = run("SHARE-003", world)
    (entry,) = share.evidence["nodes"]
    assert (entry["gpu_count"], entry["gpu_count_basis"]) == (None, why)
