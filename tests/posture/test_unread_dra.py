"""An export that left out ResourceClaims, ResourceSlices or RuntimeClasses, while its own objects
name them (a pod's claim or RuntimeClass, an allocated claim's devices), did not read them: the
run says so (kinds_unread, a warning naming the fix), the findings of the checks that read them
are kept as they were and say why, a DRA-only GPU node stays one, and the checklist says
unknown rather than pass. An export that names none of them is judged as ever."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import pytest
import yaml
from django.core.management import call_command

from inventory.kinds_read import kinds_referenced, kinds_unread
from inventory.models import Node, SyncRun
from posture.checklist import PASS, UNKNOWN, ChecklistFacts, cluster_checklist
from posture.judged import checks_unjudged
from posture.models import Finding
from tests.conftest import api_client
from tests.inventory.test_dra_only_nodes import dra_node
from tests.posture.dra_world import claim, device_class, dra_pod, gpu_config, resource_slice
from tests.posture.gpu_access_world import namespace, node
from tests.posture.test_unread_kinds import COREDNS
from tests.test_runtime_class_gpu import RENAMED
from tests.test_runtime_class_gpu import TENANTS as EDGE_TENANTS
from tests.test_runtime_class_gpu import snapshot as edge_snapshot

pytestmark = pytest.mark.django_db

# (The small worlds below hold no RBAC or ServiceAccount: as exports, those read as unread.)
DRA_AND_RUNTIME = ("ResourceClaim", "ResourceSlice", "DeviceClass", "RuntimeClass")

TENANTS = {
    "tenants": [
        {"slug": "alpha", "name": "Alpha", "trust_class": "external", "namespaces": ["alpha"]},
        {"slug": "beta", "name": "Beta", "trust_class": "external", "namespaces": ["beta"]},
    ]
}


def _apply_tenants(tmp_path, spec: dict) -> None:
    (tmp_path / "tenants.yaml").write_text(yaml.safe_dump(spec))
    call_command("apply_tenants", str(tmp_path / "tenants.yaml"), stdout=io.StringIO())


def _sync(tmp_path, name: str, objects: list[dict[str, Any]], cluster: str = "lab") -> SyncRun:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    out = io.StringIO()
    call_command("sync_cluster", cluster=cluster, snapshot=[str(path)], stdout=out, stderr=out)
    call_command("score", stdout=out, stderr=out)
    return SyncRun.objects.order_by("-id")[0]


def _shared_world(*, claims: bool = True, slices: bool = True, gpu_node=None) -> list[dict]:
    """Two tenants' pods time-slicing one GPU through their claims (SHARE-001)."""
    objects = [
        copy.deepcopy(COREDNS),  # an export of a running cluster: kube-system's DNS
        namespace("alpha"),
        namespace("beta"),
        gpu_node if gpu_node is not None else node("gpu-a", gpus=4),
        device_class(),
        dra_pod("alpha", "train-0", "train-gpu"),
        dra_pod("beta", "infer-0", "infer-gpu"),
    ]
    if slices:
        objects.append(resource_slice("gpu-a"))
    if claims:
        objects += [
            claim("alpha", "train-gpu", ["gpu-0"], sharing="TimeSlicing", reserved_for=["train-0"]),
            claim("beta", "infer-gpu", ["gpu-0"], sharing="TimeSlicing", reserved_for=["infer-0"]),
        ]
    return objects


def _note(personas, finding: Finding) -> str:
    body = api_client(personas["security_lead"]).get(f"/api/v1/findings/{finding.pk}/").json()
    return body["not_rejudged"]


def test_an_export_without_claims_its_pods_name_keeps_the_claim_findings(tmp_path, personas):
    _apply_tenants(tmp_path, TENANTS)
    _sync(tmp_path, "full", _shared_world())
    share = Finding.objects.get(check_id="SHARE-001")
    assert share.status == "open"
    run = _sync(tmp_path, "noclaims", _shared_world(claims=False))
    assert "ResourceClaim" in run.kinds_unread
    assert any("but no ResourceClaim" in w and "`kubectl get`" in w for w in run.warnings)
    kept = Finding.objects.get(check_id="SHARE-001")
    assert kept.status == "open" and kept.last_seen == share.last_seen
    assert _note(personas, kept) == "not re-judged in the last sync: it read no ResourceClaim"
    body = api_client(personas["security_lead"]).get("/api/v1/sync-runs/").json()
    assert "ResourceClaim" in body["results"][0]["kinds_unread"]
    # The claims read again: judged again (the tenants no longer share the GPU).
    fixed = [o for o in _shared_world(claims=False)]
    fixed += [
        claim("alpha", "train-gpu", ["gpu-0"], sharing="TimeSlicing", reserved_for=["train-0"]),
        claim("beta", "infer-gpu", ["gpu-1"], sharing="TimeSlicing", reserved_for=["infer-0"]),
    ]
    run = _sync(tmp_path, "fixed", fixed)
    assert "ResourceClaim" not in run.kinds_unread
    assert Finding.objects.get(check_id="SHARE-001").status == "resolved"


def test_an_export_naming_no_claim_and_no_runtime_class_judges_as_ever(tmp_path, personas):
    _apply_tenants(tmp_path, TENANTS)
    _sync(tmp_path, "full", _shared_world())
    assert Finding.objects.get(check_id="SHARE-001").status == "open"
    # The pods are gone, and the claims with them: nothing names a claim, none is unread.
    bare = [
        o
        for o in _shared_world(claims=False)
        if o["kind"] != "Pod" or o["metadata"]["namespace"] == "kube-system"
    ]
    run = _sync(tmp_path, "bare", bare)
    assert not set(DRA_AND_RUNTIME) & set(run.kinds_unread)
    assert not any("ResourceClaim" in w or "RuntimeClass" in w for w in run.warnings)
    assert Finding.objects.get(check_id="SHARE-001").status == "resolved"


def test_an_export_without_slices_keeps_a_dra_only_node_a_gpu_node(tmp_path, personas):
    _apply_tenants(tmp_path, TENANTS)
    world = _shared_world(gpu_node=dra_node("gpu-a"))
    _sync(tmp_path, "full", world)
    before = Node.objects.get(name="gpu-a")
    assert before.is_accelerator_node and before.data["gpu_count"] == 4
    share = Finding.objects.get(check_id="SHARE-001")
    assert share.status == "open"
    run = _sync(tmp_path, "noslices", _shared_world(slices=False, gpu_node=dra_node("gpu-a")))
    assert "ResourceSlice" in run.kinds_unread and "ResourceClaim" not in run.kinds_unread
    assert any("holds no ResourceSlice" in w and "resourceslices" in w for w in run.warnings)
    assert any("gpu-a" in w and "keep the GPU count" in w for w in run.warnings)
    after = Node.objects.get(name="gpu-a")
    assert after.is_accelerator_node and after.data["gpu_count"] == 4
    assert after.data["gpu_count_basis"] == before.data["gpu_count_basis"]
    kept = Finding.objects.get(check_id="SHARE-001")
    assert kept.status == "open" and kept.last_seen == share.last_seen
    assert _note(personas, kept) == "not re-judged in the last sync: it read no ResourceSlice"


def test_slices_never_read_leave_a_node_may_hold_gpus_not_no_gpu(tmp_path, personas):
    _apply_tenants(tmp_path, TENANTS)
    _sync(tmp_path, "noslices", _shared_world(slices=False, gpu_node=dra_node("gpu-a")))
    row = api_client(personas["security_lead"]).get("/api/v1/nodes/").json()["results"][0]
    assert row["name"] == "gpu-a" and row["patch_status"] == "unknown"
    assert "read no ResourceSlice" in json.dumps(row)


def test_claims_or_slices_unread_leave_the_node_items_unknown_not_pass():
    facts = ChecklistFacts(
        synced=True,
        gpu_nodes=1,
        time_sliced_nodes=0,
        registered_checks=frozenset({"SHARE-001", "STACK-004", "STACK-005", "K8S-001", "K8S-002"}),
        bulletins=1,
        days_since_bulletin_import=1,
    )
    items = {i.number: i for i in cluster_checklist(facts)}
    assert {items[n].status for n in (2, 3, 5, 8)} == {PASS}
    slices = {i.number: i for i in cluster_checklist(_with(facts, "ResourceSlice"))}
    for number in (2, 3, 5, 8):
        assert slices[number].status == UNKNOWN
        assert slices[number].evidence["not_read"] == ["ResourceSlice"]
    claims = {i.number: i for i in cluster_checklist(_with(facts, "ResourceClaim"))}
    assert claims[2].status == UNKNOWN and claims[2].evidence["not_read"] == ["ResourceClaim"]


def _with(facts: ChecklistFacts, kind: str) -> ChecklistFacts:
    from dataclasses import replace

    return replace(facts, kinds_unread=frozenset({kind}))


def test_an_export_without_runtime_classes_its_pods_name_keeps_their_findings(tmp_path, personas):
    _apply_tenants(tmp_path, EDGE_TENANTS)
    items = [*edge_snapshot()["items"], copy.deepcopy(COREDNS)]
    _sync(tmp_path, "full", items, cluster="edge")
    stack = Finding.objects.get(check_id="STACK-004", subject_name=RENAMED)
    pod011 = Finding.objects.get(check_id="POD-011", subject_name="footfall")
    assert stack.status == pod011.status == "open"
    without = [o for o in items if o["kind"] != "RuntimeClass"]
    run = _sync(tmp_path, "noclasses", without, cluster="edge")
    assert "RuntimeClass" in run.kinds_unread
    assert any("but no RuntimeClass" in w and "runtimeclasses" in w for w in run.warnings)
    for finding in (stack, pod011):
        kept = Finding.objects.get(pk=finding.pk)
        assert kept.status == "open" and kept.last_seen == finding.last_seen
        assert _note(personas, kept) == "not re-judged in the last sync: it read no RuntimeClass"


def test_which_checks_a_claim_slice_or_runtime_class_unread_leaves_unjudged():
    # A live list refused (unlisted) or a kind the snapshot names and holds none of.
    assert "ResourceClaim" in kinds_unread({"Pod": 1}, unlisted=("ResourceClaim",))
    # A scheduled pod's claim was allocated: from slices, of a class.
    referenced = kinds_referenced(1, 1, ["nvidia"])
    assert kinds_unread({"Pod": 3}, referenced=referenced, real_cluster=False) == [
        "DeviceClass",
        "ResourceClaim",
        "ResourceSlice",
        "RuntimeClass",
    ]
    # A live list read to the end (counted 0) read them: a claim deleted meanwhile is no sign.
    counted = {"Pod": 3, "ResourceClaim": 0, "ResourceSlice": 0, "RuntimeClass": 0}
    counted["DeviceClass"] = 0
    assert kinds_unread(counted, referenced=referenced, real_cluster=False) == []
    assert kinds_referenced(0, 0, [None]) == []
    assert {"SHARE-001", "SHARE-003", "DRA-001", "POD-011"} <= set(
        checks_unjudged(["ResourceClaim"])
    )
    assert {"SHARE-001", "K8S-001", "LEAK-002"} <= set(checks_unjudged(["ResourceSlice"]))
    assert {"POD-011", "STACK-004"} <= set(checks_unjudged(["RuntimeClass"]))


def _class_shared_world(*, classes: bool = True) -> list[dict]:
    """Two tenants' claims on one GPU, time-sliced by their DeviceClass's config alone (the
    claims carry none, nor does their allocation)."""
    shared = device_class(config=[{"opaque": gpu_config("TimeSlicing")["opaque"]}])
    objects = [o for o in _shared_world(claims=False) if o["kind"] != "DeviceClass"]
    objects += [
        claim("alpha", "train-gpu", ["gpu-0"], reserved_for=["train-0"]),
        claim("beta", "infer-gpu", ["gpu-0"], reserved_for=["infer-0"]),
    ]
    return [*objects, shared] if classes else objects


def test_an_export_without_the_classes_its_claims_name_keeps_the_sharing_findings(
    tmp_path, personas
):
    # rtpartial2 k19: the class set the sharing, the export left classes out, and the
    # sharing findings resolved on what was not read.
    _apply_tenants(tmp_path, TENANTS)
    _sync(tmp_path, "full", _class_shared_world())
    share = Finding.objects.get(check_id="SHARE-001")
    assert share.status == "open"
    run = _sync(tmp_path, "noclasses", _class_shared_world(classes=False))
    assert "DeviceClass" in run.kinds_unread
    assert any("DeviceClass but it holds none" in w for w in run.warnings)
    kept = Finding.objects.get(check_id="SHARE-001")
    assert kept.status == "open" and kept.last_seen == share.last_seen
    assert _note(personas, kept) == "not re-judged in the last sync: it read no DeviceClass"


def test_a_finished_pods_deleted_claim_is_no_kind_unread(tmp_path, personas):
    # rtpartial2 k49: the claim made from a finished Job pod's template is deleted once the
    # pod is done; its status still names it. Nothing was left out of the export.
    _apply_tenants(tmp_path, TENANTS)
    done = dra_pod("alpha", "job-0", template="gpu-tpl", generated="job-0-gpu-x7k2p")
    done["status"]["phase"] = "Succeeded"
    world = [copy.deepcopy(COREDNS), namespace("alpha"), node("gpu-a", gpus=4), device_class()]
    world.append(done)
    run = _sync(tmp_path, "done", [*world, resource_slice("gpu-a")])
    assert not set(DRA_AND_RUNTIME) & set(run.kinds_unread)
    assert not any("ResourceClaim" in w for w in run.warnings)


def test_a_scheduled_pods_claim_proves_its_slices_and_class_a_pending_pods_does_not(
    tmp_path, personas
):
    # A scheduled pod's claim was allocated from slices, by a class: an export holding no DRA
    # object at all left all three out (a DRA-only node must not read "no GPU"). A pending
    # pod's named claim may not be made yet: nothing is proven.
    _apply_tenants(tmp_path, TENANTS)
    base = [copy.deepcopy(COREDNS), namespace("alpha"), dra_node("gpu-a")]
    run = _sync(tmp_path, "scheduled", [*base, dra_pod("alpha", "train-0", "train-gpu")])
    assert {"ResourceClaim", "ResourceSlice", "DeviceClass"} <= set(run.kinds_unread)
    pending = dra_pod("alpha", "train-1", "later-gpu")
    del pending["spec"]["nodeName"]
    pending["status"]["phase"] = "Pending"
    run = _sync(tmp_path, "pending", [*base, pending], cluster="other")
    assert not set(DRA_AND_RUNTIME) & set(run.kinds_unread)


def test_an_item_whose_checks_were_not_judged_cannot_pass():
    # A DeviceClass not read holds SHARE-001 back (its class may set the sharing); item 2,
    # read from SHARE-001's findings, passed on findings nobody re-judged.
    facts = ChecklistFacts(
        synced=True,
        gpu_nodes=1,
        time_sliced_nodes=0,
        registered_checks=frozenset({"SHARE-001", "STACK-004"}),
        kinds_unread=frozenset({"DeviceClass"}),
        unjudged_checks=frozenset(checks_unjudged(["DeviceClass"])),
    )
    items = {i.number: i for i in cluster_checklist(facts)}
    assert items[2].status == UNKNOWN and items[2].evidence["not_judged"] == ["SHARE-001"]
    assert items[3].status == PASS  # STACK-004 reads no DeviceClass
