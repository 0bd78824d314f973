"""An affected range closed above ("<= 535.261.04") whose fixed version is not known is no "no
fix": any version past the bound closes it. NVIDIA 5703 names the R535 vGPU Manager's fix
"575.274.03", an upstream typo the import drops as another branch's; a bulletin may also name
no fixed version at all. The vGPU host's action upgrades it (to the version the node's other
bulletins move it to, when that passes the bound; else "past" the bound, no version made up),
its finding's evidence and /api/v1/actions/ say the same, and "Mitigate or replace ... no fixed
version" stays for a `no_fix_planned` remediation and an open range with no fixed version.

Our own NVIDIA-shaped bulletins (tests/csaf_builder.py), then the real 5703 read in place; the
clusters as `kubectl get -o json` prints them, synced, imported and scored through the real path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inventory.bulletins.store import bulletins_import_paths, bulletins_import_uploads
from inventory.bulletins.vex.selectors import cluster_vex_statements
from inventory.models import Cluster
from inventory.models import Node as NodeRow
from inventory.selectors import patch_rollout
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from posture.services import posture_evaluate
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.conftest import api_client
from tests.csaf_builder import nvidia_advisory, product_version
from tests.inventory.test_csaf_shapes import document, version
from tests.posture.test_actions_real_world import action_of, open_finding, toolkit_pool, world
from tests.realworld import realworld

pytestmark = pytest.mark.django_db

VGPU = "nvidia.com/NVIDIA_L40S-12Q"
HOSTS = "XenServer, VMware vSphere, Red Hat Enterprise Linux KVM, Ubuntu"
MANAGER = "535.261.04"


def vgpu_host_items() -> list[dict]:
    """kvm-1 in pool vdi gives its L40S to VMs as vGPUs: the GPU Operator's vGPU Manager
    DaemonSet runs 535.261.04 there, and tenant vdi's VM (a virt-launcher pod) holds one."""
    labels = {
        "kubernetes.io/hostname": "kvm-1",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.workload.config": "vm-vgpu",
        "nvidia.com/vgpu.config": "L40S-12Q",
        "gpuposture.io/pool": "vdi",
    }
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "kvm-1", "uid": "uid-kvm-1", "labels": labels},
        "spec": {},
        "status": {
            "capacity": {"cpu": "64", VGPU: "4"},
            "allocatable": {"cpu": "63", VGPU: "4"},
        },
    }
    manager = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "nvidia-vgpu-manager-daemonset-k7x2p",
            "namespace": "gpu-operator",
            "uid": "uid-vgpu-manager",
            "labels": {"app": "nvidia-vgpu-manager-daemonset"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": "nvidia-vgpu-manager-daemonset",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": "kvm-1",
            "containers": [
                {
                    "name": "nvidia-vgpu-manager-ctr",
                    "image": f"nvcr.io/nvidia/vgpu-manager:{MANAGER}-ubuntu22.04",
                    "securityContext": {"privileged": True},
                }
            ],
        },
        "status": {"phase": "Running"},
    }
    vm = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "virt-launcher-desk-1-abcde", "namespace": "vdi-desktops"},
        "spec": {
            "nodeName": "kvm-1",
            "containers": [
                {
                    "name": "compute",
                    "image": "quay.io/kubevirt/virt-launcher:v1.5.0",
                    "resources": {"limits": {VGPU: "1"}, "requests": {VGPU: "1"}},
                }
            ],
        },
        "status": {"phase": "Running"},
    }
    namespaces = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "gpu-operator", "labels": {"gpuposture.io/platform": "true"}},
        },
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "vdi-desktops"}},
    ]
    return [node, manager, vm, *namespaces]


def vgpu_world(tmp_path: Path) -> None:
    document_ = {"tenants": [{"slug": "vdi", "name": "VDI", "trust_class": "internal",
                              "namespaces": ["vdi-desktops"]}]}  # fmt: skip
    tenants_apply(specs=parse_tenants_document(document_))
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": vgpu_host_items()}))
    cluster_sync_from_snapshot(cluster=cluster_get_or_create(name="vlab"), paths=[path])


def manager_bulletin(tracking: str, up_to: str, fixed: str | None, cve: str) -> dict:
    """Our own bulletin on the R535 vGPU Manager (vGPU 16): every version up to and including
    `up_to` affected, `fixed` its fixed row as written (none: no fixed row at all)."""
    key = f"{tracking}-r535"
    rows = [(f"{up_to}(All versions up to and including vGPU 16.11)", f"{key}-a")]
    rows += [(f"{fixed}(vGPU 16.12)", f"{key}-f")] if fixed else []
    hosts = {
        "category": "architecture",
        "name": f"{HOSTS}(R535 vGPU 16)",
        "branches": [product_version("Virtual GPU Manager", name, pid) for name, pid in rows],
    }
    return nvidia_advisory(
        tracking=tracking,
        title=f"vGPU bulletin {tracking}",
        released="2025-10-09T00:00:00Z",
        architectures=[hosts],
        cve=cve,
        affected=[f"{key}-a"],
        fixed=[f"{key}-f"] if fixed else [],
        cvss=7.8,
    )


# Closed at 535.261.04, its fixed row a typo on another branch (as 5703 writes it): dropped.
TYPO = manager_bulletin("OWN-TYPO", MANAGER, "575.274.03", "CVE-2099-5001")
# A later bulletin fixing R535 at 535.309.01, past the typo bulletin's bound.
LATER = manager_bulletin("OWN-LATER", "535.288.01", "535.309.01", "CVE-2099-5002")
# Closed at 535.288.01 with no fixed row at all, and an earlier fix that does not pass it.
NONE_NAMED = manager_bulletin("OWN-NONE", "535.288.01", None, "CVE-2099-5003")
EARLY = manager_bulletin("OWN-EARLY", MANAGER, "535.274.02", "CVE-2099-5004")


def import_own(*bulletins: dict) -> None:
    files = [(f"{b['document']['tracking']['id']}.json", json.dumps(b).encode()) for b in bulletins]
    assert not bulletins_import_uploads(files=files).refused
    posture_evaluate()


def api_action(personas, finding_id: int) -> dict:
    """The /api/v1/actions/ row that closes the finding, as a security lead reads it."""
    response = api_client(personas["security_lead"]).get("/api/v1/actions/?page_size=200")
    assert response.status_code == 200, response.content
    (row,) = [a for a in response.json()["results"] if finding_id in a["finding_ids"]]
    return row


def test_the_typo_bulletins_range_closes_at_the_later_fix(tmp_path, personas):
    """kvm-1's 535.261.04 is in OWN-TYPO's closed range (its fix dropped) and below OWN-LATER's
    535.309.01, which is past that range: one upgrade to 535.309.01 closes both."""
    vgpu_world(tmp_path)
    import_own(TYPO, LATER)
    finding = open_finding("STACK-001", "kvm-1")
    typo = [e for e in finding.evidence["exposures"] if e["advisory_id"] == "OWN-TYPO"]
    assert [(e["affected"], e["fixed_version"], e["no_fix"]) for e in typo] == [
        ("<= 535.261.04", None, None)
    ]
    assert finding.evidence["move_to"] == "535.309.01"
    assert finding.evidence["move_past"] == []
    row = api_action(personas, finding.pk)
    assert row["title"].startswith("Upgrade the vGPU Manager R535 to 535.309.01 on pool vdi")
    assert "Mitigate" not in row["title"] and "no fixed version" not in row["title"]
    # The rollout plan's target closes it too: it is not listed as "no fix named".
    (plan,) = patch_rollout(personas["security_lead"])
    (wave,) = plan.waves
    assert wave.targets == {"driver R535": "535.309.01"} and wave.unfixed == []


def test_with_no_version_past_the_bound_the_action_says_past_it(tmp_path, personas):
    """OWN-TYPO alone: no R535 version past 535.261.04 is named, so the upgrade is "past
    535.261.04", not a made-up version nor "no fix"; the finding says the same."""
    vgpu_world(tmp_path)
    import_own(TYPO)
    finding = open_finding("STACK-001", "kvm-1")
    assert finding.evidence["move_to"] is None
    assert finding.evidence["move_past"] == [
        {"component": "driver R535", "past": "<= 535.261.04", "advisories": ["OWN-TYPO"]}
    ]
    row = api_action(personas, finding.pk)
    assert row["title"].startswith("Upgrade the vGPU Manager R535 past 535.261.04 on pool vdi")
    assert "575." not in row["title"]


def test_a_named_fix_below_the_bound_is_not_the_move(tmp_path, personas):
    """OWN-NONE names no fixed version for its range up to 535.288.01; OWN-EARLY's 535.274.02
    does not pass it, so it is not where the upgrade goes: past 535.288.01."""
    vgpu_world(tmp_path)
    import_own(NONE_NAMED, EARLY)
    finding = open_finding("STACK-001", "kvm-1")
    assert finding.evidence["move_to"] is None
    assert finding.evidence["move_past"] == [
        {"component": "driver R535", "past": "<= 535.288.01", "advisories": ["OWN-NONE"]}
    ]
    row = api_action(personas, finding.pk)
    assert row["title"].startswith("Upgrade the vGPU Manager R535 past 535.288.01 on pool vdi")
    assert "535.274.02" not in row["title"]


def toolkit_advisory(tmp_path: Path, name: str, bound: str, **vulnerability) -> Path:
    """Our own advisory EX-1 on the container toolkit: `bound` (a vers range) affected."""
    data = document(
        [version("A", bound, "product_version_range")], {"known_affected": ["A"]}, **vulnerability
    )
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


def toolkit_action(tmp_path: Path, advisory: Path) -> str:
    """The title of the action holding gpu-a1's STACK-002 (toolkit 1.17.3, pool pa)."""
    world(tmp_path, toolkit_pool({"gpu-a1": "1.17.3"}))
    bulletins_import_paths(paths=[str(advisory)])
    posture_evaluate()
    return action_of(open_finding("STACK-002", "gpu-a1")).title


def test_a_closed_toolkit_range_with_no_fix_is_an_upgrade_past_it(tmp_path, personas):
    title = toolkit_action(tmp_path, toolkit_advisory(tmp_path, "lt", "vers:generic/<1.17.8"))
    assert title.startswith("Upgrade the container toolkit to 1.17.8 or later on pool pa"), title


def test_no_fix_planned_stays_mitigate_or_replace(tmp_path, personas):
    remedy = {"category": "no_fix_planned", "details": "Not fixed.", "product_ids": ["A"]}
    advisory = toolkit_advisory(tmp_path, "nfp", "vers:generic/<=1.17.7", remediations=[remedy])
    assert toolkit_action(tmp_path, advisory) == (
        "Mitigate or replace the container toolkit 1.17.3 on node gpu-a1: no fixed version for EX-1"
    )


def test_an_open_range_with_no_fix_stays_mitigate_or_replace(tmp_path, personas):
    advisory = toolkit_advisory(tmp_path, "open", "vers:generic/>=1.16.0")
    assert toolkit_action(tmp_path, advisory) == (
        "Mitigate or replace the container toolkit 1.17.3 on node gpu-a1: no fixed version for EX-1"
    )


# --- the real NVIDIA 5703, read in place ----------------------------------------------------


def real_world(tmp_path: Path, *numbers: str) -> None:
    vgpu_world(tmp_path)
    paths = [str(realworld("csaf", f"nvidia-{n}.json")) for n in numbers]
    bulletins_import_paths(paths=paths)
    posture_evaluate()


def exposure_5703(name: str = "kvm-1") -> dict:
    (found,) = [
        e for e in NodeRow.objects.get(name=name).patch_exposures if e["advisory_id"] == "5703"
    ]
    return found


def test_real_5703_with_5821_upgrades_the_vgpu_manager_to_535_309_01(tmp_path, personas):
    """5703 bounds R535 at <= 535.261.04 and its fix row "575.274.03" stays dropped; 5821's
    535.309.01 passes the bound. The action, the finding and the VEX agree."""
    real_world(tmp_path, "5703", "5821")
    exposure = exposure_5703()
    assert (exposure["affected"], exposure["fixed_version"]) == ("<= 535.261.04", None)
    finding = open_finding("STACK-001", "kvm-1")
    assert finding.evidence["move_to"] == "535.309.01" and finding.evidence["move_past"] == []
    row = api_action(personas, finding.pk)
    assert row["title"].startswith("Upgrade the vGPU Manager R535 to 535.309.01 on pool vdi")
    # The VEX: 5703 still affects the node, with no fixed version (nothing corrected), and says
    # to move past its bound rather than wait for a fix.
    statements = cluster_vex_statements(cluster=Cluster.objects.get(name="vlab"), user=None)
    own = [s for s in statements if s.advisory_id == "5703" and s.product.node == "kvm-1"]
    assert own and {s.status for s in own} == {"affected"}
    assert {s.fixed_version for s in own} == {None}
    assert all("past 535.261.04" in (s.action or "") for s in own)
    assert not any("575." in (s.fixed_version or "") for s in statements)


def test_real_5703_alone_says_past_its_bound(tmp_path, personas):
    real_world(tmp_path, "5703")
    finding = open_finding("STACK-001", "kvm-1")
    assert finding.evidence["move_to"] is None
    assert [m["past"] for m in finding.evidence["move_past"]] == ["<= 535.261.04"]
    row = api_action(personas, finding.pk)
    assert row["title"].startswith("Upgrade the vGPU Manager R535 past 535.261.04 on pool vdi")
