"""A vGPU guest VM whose driver the GPU Operator installs from NVIDIA AI Enterprise's pre-built
guest driver image (`nvcr.io/nvaie/vgpu-guest-driver-<N>:<version>-<os>`): that pod is the
node's driver, its tag the guest driver's version (never the host's vGPU Manager, which GFD's
`vgpu.host-driver-version` names), judged against the bulletins as the node's driver; and the
Operator's namespace that runs it stays the platform's without RBAC. Red-team rtholdout3 k06,
k14, k16, k18. Objects as `kubectl get -A -o json` prints them, no RBAC read."""

from __future__ import annotations

import json

import pytest

from inventory.models import Node as NodeRow
from inventory.node_components import node_components
from inventory.patching.driver_family import vgpu_host
from inventory.services import cluster_sync_from_snapshot
from inventory.sources.images import component_of, is_vgpu_manager, stack_version
from inventory.sources.normalise import normalise
from inventory.sync import cluster_get_or_create
from posture.inputs import PostureInputs
from posture.models import Finding
from posture.services import posture_evaluate
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import container, namespace, node, pod, run
from tests.posture.test_stack_alone import controller, operator_namespace, owned
from tests.realworld import realworld

GUEST_DRIVER = "nvcr.io/nvaie/vgpu-guest-driver-4:535.104.05-ubuntu22.04"
HEALTH = tenant("health", "sensitive")
BULLETINS = ("5491", "5520")
# GFD on a vGPU guest: the vGPU type as the product, the host's vGPU Manager in its own label;
# no cuda.driver-version label here, so only the driver pod says the guest driver's version.
GUEST_LABELS = {
    "nvidia.com/gpu.product": "NVIDIA-A100-4-20C",
    "nvidia.com/vgpu.present": "true",
    "nvidia.com/vgpu.host-driver-version": "535.104.06",
    "nvidia.com/vgpu.host-driver-branch": "r535_00",
}


@pytest.mark.parametrize(
    ("image", "version"),
    [
        (GUEST_DRIVER, "535.104.05"),
        ("nvcr.io/nvaie/vgpu-guest-driver-5:550.90.07-ubuntu22.04", "550.90.07"),
        ("nvcr.io/nvaie/vgpu-guest-driver-3:525.125.06-ubuntu20.04", "525.125.06"),
        ("nvcr.io/nvaie/vgpu-guest-driver:470.63.01-ubuntu20.04", "470.63.01"),  # before N
        ("harbor.corp.example/nvaie/vgpu-guest-driver-5:550.90.07-rhel9.4", "550.90.07"),
        (GUEST_DRIVER + "@sha256:" + "a" * 64, "535.104.05"),
        ("nvcr.io/nvaie/vgpu-guest-driver-4@sha256:" + "a" * 64, None),  # digest only: unknown
    ],
)
def test_nvaies_guest_driver_image_is_the_driver_never_the_vgpu_manager(image, version):
    assert component_of(image) == "driver"
    assert stack_version(image) == version
    assert not is_vgpu_manager(image)


def test_look_alikes_of_the_guest_driver_image_are_not_the_driver():
    for image in (
        "vgpu-guest-driver-4:535.104.05",  # a bare Docker Hub name is not NVIDIA's
        "nvcr.io/nvaie/vgpu-guest-driver-x:535.104.05",
        "rocm/vgpu-guest-driver-4:535.104.05",  # another vendor's path
    ):
        assert component_of(image) is None, image


def driver_pod(image: str = GUEST_DRIVER) -> list[dict]:
    """The Operator's driver DaemonSet and its (privileged, as the chart runs it) pod."""
    ctr = container("nvidia-driver-ctr", image, securityContext={"privileged": True})
    name = "nvidia-driver-daemonset"
    return [
        controller("DaemonSet", "gpu-operator", name, ctr),
        owned(pod("gpu-operator", f"{name}-7xk2p", ctr), "DaemonSet", name),
    ]


def guest_world(image: str = GUEST_DRIVER) -> list[dict]:
    """A vGPU guest VM `gpu-a` (one MIG-backed A100 vGPU) running the GPU Operator's stack,
    the driver from `image`, and one health (sensitive) training pod."""
    return [
        node("gpu-a", gpus=1, capacity={"nvidia.com/gpu": "1"}, labels=GUEST_LABELS),
        *operator_namespace(),
        *driver_pod(image),
        namespace("health"),
        pod("health", "train-0", container(gpu={"nvidia.com/gpu": "1"})),
    ]


def guest_inputs(image: str = GUEST_DRIVER) -> PostureInputs:
    return PostureInputs(cluster="t", snapshot=normalise(guest_world(image)), tenants=(HEALTH,))


def test_the_guest_driver_pod_gives_the_guests_driver_version_and_says_what_it_is():
    inputs = guest_inputs()
    (guest,) = inputs.snapshot.nodes
    # Before: None (the image named no component), never the host label's 535.104.06.
    assert guest.driver_version == "535.104.05"
    assert guest.driver_version_source == "vgpu-guest-driver-pod"
    assert not vgpu_host(guest.labels, guest.driver_version_source)
    source = node_components(guest)["driver"]["source"]
    assert source.startswith("pod gpu-operator/nvidia-driver-daemonset-7xk2p")
    assert "vGPU guest driver" in source and GUEST_DRIVER in source
    assert "not the host's vGPU Manager" in source
    assert run("STACK-004", inputs) == []  # every version is known


def test_a_driver_image_on_a_vgpu_guest_is_its_guest_driver():
    """The GPU Operator's vGPU docs build the guest driver as `<registry>/driver`: on a node GFD
    labels a vGPU guest it is the guest driver too, and said so."""
    (guest,) = guest_inputs(
        "registry.corp.example/nvidia/driver:535.104.05-ubuntu22.04"
    ).snapshot.nodes
    assert (guest.driver_version, guest.driver_version_source) == (
        "535.104.05",
        "vgpu-guest-driver-pod",
    )
    assert "vGPU guest driver" in node_components(guest)["driver"]["source"]


def test_the_operators_namespace_running_the_guest_driver_stays_the_platforms_without_rbac():
    """Before: the unrecognised image made gpu-operator a namespace of no one known, so its
    privileged driver pod was a finding against an unclassified party."""
    inputs = guest_inputs()
    assert "gpu-operator" in inputs.platform_namespaces
    assert not [w for w in inputs.snapshot.warnings if "holds more than" in w]
    assert run("TEN-001", inputs) == []
    assert run("POD-001", inputs) == []  # the driver pod is privileged, as the stack's are


@pytest.mark.django_db
def test_a_guest_driver_below_the_bulletin_baseline_is_stack_001(tmp_path):
    """Synced and judged against NVIDIA's bulletins 5491 and 5520 (R535 fixed in 535.129.03,
    then 535.161.07): the guest's 535.104.05 is below the baseline, STACK-001 high for the
    tenant on the VM, naming the node's driver, not a vGPU Manager."""
    from inventory.bulletins.store import bulletins_import_paths

    document = {"tenants": [{"slug": "health", "name": "Health", "trust_class": "sensitive",
                             "namespaces": ["health"]}]}  # fmt: skip
    tenants_apply(specs=parse_tenants_document(document))
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": guest_world()}))
    cluster = cluster_get_or_create(name="vsphere")
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    bulletins_import_paths(paths=[str(realworld("csaf", f"nvidia-{n}.json")) for n in BULLETINS])
    posture_evaluate()
    row = NodeRow.objects.get(cluster=cluster, name="gpu-a")
    assert (row.driver_version, row.patch_status) == ("535.104.05", "below_baseline")
    # The host label's vGPU Manager 535.104.06 is the hypervisor's, in a finding of its own
    # (test_vgpu_hypervisor_manager.py): the guest driver's keeps the check's key.
    (finding,) = Finding.objects.filter(check_id="STACK-001", status="open", key="STACK-001")
    (hypervisor,) = Finding.objects.filter(check_id="STACK-001", key="STACK-001 hypervisor")
    assert hypervisor.evidence["fixed_in"] == "535.161.05"  # 5520's R535 vGPU Manager row
    assert finding.severity == "high"
    assert finding.evidence["move_to"] == "535.161.07"
    assert "CVE-2023-31022" in finding.evidence["cves"]  # 5491's R535 row
    assert list(finding.tenants.values_list("slug", flat=True)) == ["health"]
    assert "vGPU Manager" not in finding.title and "host_driver" not in finding.evidence
    assert not Finding.objects.filter(check_id="STACK-004", status="open").exists()
