"""A vGPU guest VM's labels show the vGPU Manager of the hypervisor that hosts it (GFD's
`nvidia.com/vgpu.host-driver-version`, `nvidia.com/vgpu.host-driver-branch`). Below the
bulletins' vGPU Manager fix of its branch, the guest gets a STACK-001 of its own naming the
hypervisor's Manager (the boundary between the VMs), fixed outside the cluster; the guest's own
patch status stays its own driver's. Quiet at or above the fix, without the label, on an
unlisted branch, and on a KubeVirt vm-vgpu host (whose Manager is its own driver). Our own
NVIDIA-shaped bulletin with "Virtual GPU Manager" rows, as 5520 writes them."""

from __future__ import annotations

import dataclasses
import json

import pytest

from inventory.bulletins.csaf.document import parse_advisory
from inventory.bulletins.csaf.fixes import fixes
from inventory.bulletins.patch_refresh import exposure_dicts
from inventory.bulletins.store import bulletins_import_uploads
from inventory.models import Node as NodeRow
from inventory.patching.hypervisor import (
    HOST_DRIVER_BRANCH,
    HOST_DRIVER_VERSION,
    HypervisorManager,
    hypervisor_manager,
    hypervisor_manager_status,
    label_branch,
)
from inventory.services import cluster_sync_from_snapshot
from inventory.sources.node_versions import VGPU_MANAGER_POD
from inventory.sync import cluster_get_or_create
from posture.actions import actions_for, group_of
from posture.models import Finding
from posture.services import posture_evaluate
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.csaf_builder import nvidia_advisory, product_version
from tests.posture.builders import gpu_node, inputs, pod, run, tenant
from tests.posture.gpu_access_world import container, namespace, node
from tests.posture.gpu_access_world import pod as pod_object
from tests.posture.test_actions import below_fix, finding

HOSTS = "Citrix Hypervisor, VMware vSphere, Red Hat Enterprise Linux KVM, Ubuntu"
CVE = "CVE-2099-4242"


def vgpu_manager_bulletin(tracking: str = "OWN-VGPU", cvss: float = 8.8) -> dict:
    """Our own NVIDIA-shaped bulletin: the R535 vGPU Manager (vGPU 16) up to and including
    535.154.02 affected, 535.161.05 its fix; released long ago (every patch SLA is past)."""
    key = f"{tracking}-R535"
    rows = [
        ("535.154.02(All versions up to and including vGPU 16.3)", f"{key}-a"),
        ("535.161.05(vGPU 16.4)", f"{key}-f"),
    ]
    hosts = {
        "category": "architecture",
        "name": f"{HOSTS}(R535 vGPU 16)",
        "branches": [product_version("Virtual GPU Manager", name, pid) for name, pid in rows],
    }
    return nvidia_advisory(
        tracking=tracking,
        title=f"vGPU bulletin {tracking}",
        released="2024-02-27T00:00:00Z",
        architectures=[hosts],
        cve=CVE,
        affected=[f"{key}-a"],
        fixed=[f"{key}-f"],
        cvss=cvss,
    )


def bulletin_fixes(cvss: float = 8.8):
    return fixes(parse_advisory(vgpu_manager_bulletin(cvss=cvss)))[0]


def guest_labels(manager: str | None = "535.104.06", branch: str | None = "r535_00") -> dict:
    """GFD in a vGPU guest: the vGPU type as the product, the guest's own driver in the CUDA
    labels, the hypervisor's vGPU Manager in its own labels."""
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-L40S-24Q",
        "nvidia.com/vgpu.present": "true",
        "nvidia.com/cuda.driver-version.full": "535.161.07",
    }
    labels |= {HOST_DRIVER_VERSION: manager} if manager else {}
    labels |= {HOST_DRIVER_BRANCH: branch} if branch else {}
    return labels


# --- the judgement (pure) -----------------------------------------------------------------


def test_the_branch_label_reads_as_nvidias_branch():
    assert label_branch("r535_00") == "R535"
    assert label_branch("R550") == "R550"
    assert label_branch("main") is None


def test_only_a_guest_with_the_label_names_a_hypervisor_manager():
    assert hypervisor_manager(guest_labels(), "gfd-label") == HypervisorManager(
        "535.104.06", "r535_00"
    )
    assert hypervisor_manager(guest_labels(branch=None), None) == HypervisorManager(
        "535.104.06", None
    )
    assert hypervisor_manager(guest_labels(manager=None), "gfd-label") is None
    # A KubeVirt vm-vgpu host: its own vGPU Manager is its driver, judged as such already.
    kubevirt = {**guest_labels(), "nvidia.com/gpu.workload.config": "vm-vgpu"}
    assert hypervisor_manager(kubevirt, "gfd-label") is None
    assert hypervisor_manager(guest_labels(), VGPU_MANAGER_POD) is None


@pytest.mark.parametrize(
    ("version", "branch", "status"),
    [
        ("535.104.06", "r535_00", "below_baseline"),
        ("535.104.06", None, "below_baseline"),
        ("535.161.05", "r535_00", "current"),  # at the fix
        ("535.183.01", "r535_00", "current"),  # above it
        ("550.90.05", "r550_00", "unknown"),  # R550: in no imported bulletin, never guessed
        ("535.104.06", "r550_00", "unknown"),  # the labels disagree on the branch
    ],
)
def test_the_hypervisors_manager_is_judged_by_the_vgpu_manager_rows_of_its_branch(
    version, branch, status
):
    result = hypervisor_manager_status(HypervisorManager(version, branch), bulletin_fixes())
    assert result.status == status, result.unknown
    if status == "below_baseline":
        (exposure,) = result.exposures
        assert (exposure.fixed_version, exposure.cves) == ("535.161.05", (CVE,))
    if status == "unknown":
        assert result.unknown and not result.exposures


# --- STACK-001 (pure rule) ----------------------------------------------------------------


def guest_world(manager: str | None = "535.104.06", cvss: float = 8.8):
    """A guest `vm-a` with one alpha pod; its own driver current (patch record), its
    hypervisor's Manager judged as the read model does."""
    vm = gpu_node("vm-a", driver_version="535.161.07", labels=guest_labels(manager))
    world = inputs(
        nodes=(vm,),
        pods=(pod("alpha", "train-0", node="vm-a"),),
        tenants=(tenant("alpha", namespaces=("alpha",)),),
    )
    record: dict = {"status": "current", "exposures": [], "notes": []}
    if found := hypervisor_manager(vm.labels, vm.driver_version_source):
        judged = hypervisor_manager_status(found, bulletin_fixes(cvss))
        record["hypervisor_manager"] = {
            "version": found.version,
            "branch_label": found.branch_label,
            "status": judged.status,
            "exposures": exposure_dicts(judged.exposures),
            "notes": list(judged.unknown),
        }
    return dataclasses.replace(world, patch={"vm-a": record})


def test_a_guest_on_an_old_vgpu_manager_gets_stack_001_naming_the_hypervisor():
    (draft,) = run("STACK-001", guest_world())
    assert draft.title == (
        "vGPU Manager 535.104.06 on the hypervisor of vm-a below the bulletin baseline (535.161.05)"
    )
    assert draft.subject_kind == "Node" and draft.subject_name == "vm-a"
    assert draft.severity == "high"  # CVSS 8.8, as STACK-001 takes it
    assert set(draft.tenants) == {"alpha"}
    evidence = draft.evidence
    assert evidence["read_from"] == "label nvidia.com/vgpu.host-driver-version"
    assert evidence["fixed_in"] == "535.161.05"
    assert evidence["where_to_fix"] == "the hypervisor (outside the cluster)"
    assert (evidence["advisories"], evidence["cves"]) == (["OWN-VGPU"], [CVE])
    assert "vGPU Manager 535.104.06" in evidence["host_driver"]
    assert "move_to" not in evidence  # the guest's own components do not move


def test_the_severity_follows_the_cvss_as_stack_001_does():
    (draft,) = run("STACK-001", guest_world(cvss=9.3))
    assert draft.severity == "critical"


@pytest.mark.parametrize("manager", ["535.161.05", "550.90.05", None])
def test_a_guest_at_the_fix_on_an_unlisted_branch_or_unlabelled_is_quiet(manager):
    assert run("STACK-001", guest_world(manager)) == []


def test_the_hypervisors_upgrade_is_an_action_of_its_own_not_the_pools():
    evidence = run("STACK-001", guest_world())[0].evidence
    hyper = finding("STACK-001", "Node", "vm-a", pools=("vg",), evidence=evidence)
    late = {"component": "driver", "installed": "535.104.05", "fixed_version": "535.161.07"}
    guest = below_fix("vm-a", "vg", late, {"managed_by": "gpu_operator", "change": "gpu_operator"})
    identity, title = group_of(hyper)
    assert identity == ("prod", "hypervisor", "535.104.06", "535.161.05")
    assert title == (
        "Upgrade the vGPU Manager 535.104.06 to 535.161.05 on the hypervisors of the vGPU "
        "guests that show it (outside the cluster)"
    )
    assert len(actions_for([hyper, guest])) == 2


# --- synced and evaluated ------------------------------------------------------------------


def synced_guests(tmp_path) -> None:
    """vm-old on an old Manager, vm-new on the fixed one, vm-bare with no label; alpha runs
    on vm-old. The guests' own drivers are current (the bulletin names no data-center row)."""
    document = {"tenants": [{"slug": "alpha", "name": "Alpha", "trust_class": "internal",
                             "namespaces": ["alpha"]}]}  # fmt: skip
    tenants_apply(specs=parse_tenants_document(document))
    items = [
        node("vm-old", gpus=1, capacity={"nvidia.com/gpu": "1"}, labels=guest_labels()),
        node("vm-new", gpus=1, capacity={"nvidia.com/gpu": "1"}, labels=guest_labels("535.161.05")),
        node("vm-bare", gpus=1, capacity={"nvidia.com/gpu": "1"}, labels=guest_labels(None)),
        namespace("alpha"),
        pod_object("alpha", "train-0", container(gpu={"nvidia.com/gpu": "1"}), node_name="vm-old"),
    ]
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    cluster = cluster_get_or_create(name="vsphere")
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    raw = json.dumps(vgpu_manager_bulletin()).encode()
    assert not bulletins_import_uploads(files=[("vgpu.json", raw)]).refused
    posture_evaluate()


@pytest.mark.django_db
def test_an_old_hypervisor_manager_is_one_stack_001_on_its_guest_and_nothing_else(tmp_path):
    synced_guests(tmp_path)
    (found,) = Finding.objects.filter(check_id="STACK-001", status="open")
    assert found.subject_name == "vm-old"
    assert found.title.startswith("vGPU Manager 535.104.06 on the hypervisor of vm-old")
    assert list(found.tenants.values_list("slug", flat=True)) == ["alpha"]
    assert found.evidence["fixed_in"] == "535.161.05"
    # The guest's own stack is unchanged: its patch status, exposures, no STACK-005.
    row = NodeRow.objects.get(name="vm-old")
    assert (row.driver_version, row.patch_status, row.patch_exposures) == (
        "535.161.07",
        "current",
        [],
    )
    assert not Finding.objects.filter(check_id="STACK-005", status="open").exists()
