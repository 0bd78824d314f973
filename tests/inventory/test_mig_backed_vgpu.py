"""A MIG-backed vGPU (`<gpu>-<GPU-instance slices>-<framebuffer>C`) of a GPU Operator vm-vgpu
node: its own MIG GPU instance where the GPU gives each such vGPU one, never best-effort vGPU;
where the type name cannot say whether the instance is time-sliced between VMs, the mode is
the shared vGPU one and the basis says the sharing is unknown."""

from __future__ import annotations

import json

import pytest

import posture.rules  # noqa: F401  (registers the existing checks)
import posture.rules.share  # noqa: F401
from inventory.resource_modes import resource_mode
from inventory.snapshot import Node
from inventory.sources.node_kinds import vm_device_kind
from tests.posture.builders import gpu_node, inputs, pod, run, tenant

ACME = tenant("acme", "external", namespaces=("acme-vms",))
GLOBEX = tenant("globex", "external", namespaces=("globex-vms",))


def vgpu_node(resource: str) -> Node:
    return gpu_node(
        "vgpu-1",
        gpu_count=None,
        gpu_model=None,
        gpu_capacity={resource: 2},
        labels={"nvidia.com/gpu.workload.config": "vm-vgpu"},
        sharing_strategy="vgpu",
    )


def _world(resource: str):
    node = vgpu_node(resource)
    pods = (
        pod("acme-vms", "virt-launcher-a", node=node.name, gpu={resource: 1}),
        pod("globex-vms", "virt-launcher-b", node=node.name, gpu={resource: 1}),
    )
    return inputs(nodes=(node,), pods=pods, tenants=(ACME, GLOBEX))


@pytest.mark.parametrize(
    "resource",
    [
        "nvidia.com/NVIDIA_A100-3-20C",  # A100 40GB, MIG 3g.20gb
        "nvidia.com/NVIDIA_A100-1-5C",
        "nvidia.com/NVIDIA_A100D-7-80C",  # A100 80GB
        "nvidia.com/NVIDIA_A30-2-12C",
        "nvidia.com/NVIDIA_H100XM-1-10C",  # H100 SXM5
        "nvidia.com/NVIDIA_H200X-1-18C",
        "nvidia.com/NVIDIA_A100-1-5CME",  # with the media extensions
    ],
)
def test_a_mig_backed_vgpu_of_ampere_or_hopper_is_its_own_gpu_instance(resource):
    assert vm_device_kind(resource) == "vgpu"
    mode, why = resource_mode(vgpu_node(resource), resource)
    assert mode == "mig_gi"
    assert "MIG-backed vGPU" in why and "GPU instance to itself" in why


def test_external_vms_on_mig_backed_vgpus_do_not_share_by_best_effort():
    world = _world("nvidia.com/NVIDIA_A100-3-20C")
    assert run("SHARE-003", world) == []
    assert run("SHARE-001", world) == []
    # Each VM has its GPU instance to itself: no vGPU scheduler shares it with another VM.
    assert run("SHARE-008", world) == []


def test_share008_names_only_the_tenants_on_best_effort_vgpus():
    """SHARE-008 reads each vGPU type's mode, not the node's strategy (`vgpu` for both): the
    tenant on a MIG-backed A100 vGPU (its own GPU instance) is not named, the one on a
    time-sliced vGPU of the same host is."""
    own, sliced = "nvidia.com/NVIDIA_A100-3-20C", "nvidia.com/NVIDIA_A100-20C"
    node = gpu_node(
        "vgpu-1",
        gpu_count=None,
        gpu_model=None,
        gpu_capacity={own: 2, sliced: 2},
        labels={"nvidia.com/gpu.workload.config": "vm-vgpu"},
        sharing_strategy="vgpu",
    )
    pods = (
        pod("acme-vms", "virt-launcher-a", node=node.name, gpu={own: 1}),
        pod("globex-vms", "virt-launcher-b", node=node.name, gpu={sliced: 1}),
    )
    (draft,) = run("SHARE-008", inputs(nodes=(node,), pods=pods, tenants=(ACME, GLOBEX)))
    assert draft.tenants == ("globex",)
    (entry,) = draft.evidence["tenants"]
    assert [p["resource"] for p in entry["pods"]] == [sliced]


@pytest.mark.parametrize(
    "resource",
    [
        "nvidia.com/NVIDIA_DC-2-8C",  # RTX PRO Blackwell: time-sliced MIG-backed types exist
        "nvidia.com/NVIDIA_B200X-1-23C",  # not known to give each vGPU an instance of its own
    ],
)
def test_a_mig_backed_vgpu_whose_instance_may_be_time_sliced_says_unknown(resource):
    mode, why = resource_mode(vgpu_node(resource), resource)
    assert mode == "vgpu_best_effort"  # judged as shared, never as an instance of its own
    assert "is unknown" in why and "type name does not say" in why
    (draft,) = run("SHARE-003", _world(resource))
    assert "vgpu_best_effort" in draft.title
    assert "time-slicing is unknown" in json.dumps(draft.evidence)
    # Judged as shared under the host's scheduler: best effort, as far as anyone can tell.
    (perf,) = run("SHARE-008", _world(resource))
    assert perf.tenants == ("acme", "globex")


@pytest.mark.parametrize(
    "resource",
    ["nvidia.com/NVIDIA_A10-12Q", "nvidia.com/NVIDIA_H100XM-40C", "nvidia.com/GRID_T4-16Q"],
)
def test_a_time_sliced_vgpu_stays_best_effort(resource):
    mode, _ = resource_mode(vgpu_node(resource), resource)
    assert mode == "vgpu_best_effort"
    (draft,) = run("SHARE-003", _world(resource))
    assert "vgpu_best_effort" in draft.title


# --- a vGPU guest VM: GFD's product label names its vGPU type (rtholdout3 observation) --------

HEALTH = tenant("health", "sensitive", namespaces=("health-ai",))


def guest_world(product: str):
    """A vGPU guest VM (GFD: vgpu.present, the vGPU type as the product) whose one vGPU a
    sensitive tenant's pod holds, as the device plugin in the guest hands it out."""
    node = gpu_node(
        "vgpu-w2",
        gpu_count=1,
        gpu_model=product,
        gpu_capacity={"nvidia.com/gpu": 1},
        labels={"nvidia.com/vgpu.present": "true", "nvidia.com/gpu.product": product},
        sharing_strategy="vgpu",
    )
    held = pod("health-ai", "train-0", node=node.name, gpu={"nvidia.com/gpu": 1})
    return node, inputs(nodes=(node,), pods=(held,), tenants=(HEALTH,))


@pytest.mark.parametrize("product", ["NVIDIA-A100-4-20C", "NVIDIA-H100XM-1-10C", "GRID-A30-2-12C"])
def test_a_guest_on_a_mig_backed_vgpu_of_ampere_or_hopper_has_its_own_gpu_instance(product):
    """Before: the guest's nvidia.com/gpu was vgpu_best_effort whatever its type, so SHARE-008
    and SHARE-004 said it used vgpu_best_effort on a vGPU that no other VM shares."""
    node, world = guest_world(product)
    assert run("SHARE-008", world) == []
    # The mode it uses is a MIG GPU instance, approved (or not) as MIG is, never best effort.
    (use,) = run("SHARE-004", world)
    assert "health uses mig_gi" in use.title
    mode, why = resource_mode(node, "nvidia.com/gpu")
    assert mode == "mig_gi"
    assert f"MIG-backed vGPU ({product}" in why and "for this node's VM" in why


@pytest.mark.parametrize("product", ["GRID-A100-40C", "NVIDIA-A100-20C", "NVIDIA-A10-12Q"])
def test_a_guest_on_a_time_sliced_vgpu_stays_best_effort(product):
    node, world = guest_world(product)
    assert resource_mode(node, "nvidia.com/gpu") == ("vgpu_best_effort", "")
    (draft,) = run("SHARE-008", world)
    assert draft.tenants == ("health",)


def test_a_guest_whose_mig_backed_instance_may_be_time_sliced_says_unknown():
    node, world = guest_world("NVIDIA-DC-2-8C")  # RTX PRO Blackwell: may time-slice instances
    mode, why = resource_mode(node, "nvidia.com/gpu")
    assert mode == "vgpu_best_effort" and "is unknown" in why
    (draft,) = run("SHARE-008", world)
    assert draft.tenants == ("health",)
