"""Other vendors' GPUs shared between tenants: an AMD node whose model no label names (LEAK-002
says the model is unknown rather than nothing), MI300X compute partitions held by two tenants
(they may share one GPU: LEAK-002, SHARE-002, SHARE-003), and Intel's GPU plugin sharing a card
between pods (sharedDevNum > 1: SHARE-001, SHARE-003, SHARE-007). Objects as `kubectl get -o
json` prints them, read by the normaliser."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import call_command

from inventory.snapshot.accelerators import amd_partitioning
from posture.inputs import PostureInputs
from posture.rules.registry import run_checks
from tests.conftest import api_client
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import container, namespace, pod, run, world

ALPHA, BETA = tenant("alpha", "internal"), tenant("beta", "internal")
EXT, SENS = tenant("ext", "external"), tenant("sens", "sensitive")
MI300X = {"amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM", "amd.com/gpu.family": "AI"}
# As the AMD node labeller writes it (-compute-memory-partition): both modes in one label.
CPX = {
    "amd.com/compute-memory-partition": "cpx_nps1",
    "amd.com/compute-partitioning-supported": "true",
}
ONE_FLEX = {
    "gpu.intel.com/device-id.0380-56c0.present": "true",
    "gpu.intel.com/device-id.0380-56c0.count": "1",
}
ROCM = "rocm/pytorch@sha256:" + "b" * 64


def vendor_node(name: str, labels: dict[str, str], capacity: dict[str, str]) -> dict[str, Any]:
    """A node of another vendor's GPUs: its device plugin's capacity, no GFD label."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {},
        "status": {"capacity": {"cpu": "64", **capacity}, "allocatable": capacity},
    }


def holder(ns: str, name: str, node_name: str, **gpu: str) -> dict[str, Any]:
    return pod(ns, name, container(image=ROCM, gpu=gpu), node_name=node_name)


def privileged(ns: str, name: str, node_name: str) -> dict[str, Any]:
    main = container(image=ROCM, securityContext={"privileged": True})
    return pod(ns, name, main, node_name=node_name)


def cluster(node: dict[str, Any], *pods: dict[str, Any], tenants=(ALPHA, BETA)) -> PostureInputs:
    namespaces = [namespace(t.slug) for t in tenants]
    return world([node, *namespaces, *pods], tenants)


# --- B2: an AMD node whose model no label names -------------------------------------------


def test_leak002_on_an_amd_node_known_only_by_its_capacity_says_the_model_is_unknown():
    """The AMD node labeller is off: NFD's label only, or nothing but `amd.com/gpu` capacity.
    A tenant's privileged pod beside another's GPU pod is LEAK-002, naming the model as
    unknown (AMD-SB-6010 lists most Instinct and Radeon GPUs), never silence."""
    for labels in ({"feature.node.kubernetes.io/amd-gpu": "true"}, {}):
        inputs = cluster(
            vendor_node("mi300-nolab", labels, {"amd.com/gpu": "8"}),
            privileged("beta", "b-priv", "mi300-nolab"),
            holder("alpha", "a-gpu", "mi300-nolab", **{"amd.com/gpu": "1"}),
        )
        (draft,) = run("LEAK-002", inputs)
        assert draft.tenants == ("alpha", "beta")
        affected = draft.evidence["affected_by"]
        assert (affected["vendor"], affected["model"]) == ("AMD", None)
        assert affected["source"] == "capacity[amd.com/gpu]"
        assert "AMD-SB-6010" in affected["model_unknown"]
        assert "unknown model" in draft.title and "mi300-nolab" in draft.title


def test_an_amd_node_known_only_by_capacity_with_whole_gpus_of_two_tenants_is_silent():
    # Whole GPUs, one tenant's each, and no pod reaching every GPU: nothing shared.
    inputs = cluster(
        vendor_node("mi300-nolab", {}, {"amd.com/gpu": "8"}),
        holder("beta", "b-gpu", "mi300-nolab", **{"amd.com/gpu": "1"}),
        holder("alpha", "a-gpu", "mi300-nolab", **{"amd.com/gpu": "1"}),
    )
    assert run("LEAK-002", inputs) == []


# --- B3: MI300X compute partitions of two tenants -----------------------------------------


def _cpx(*pods: dict[str, Any], labels=CPX, capacity=None) -> PostureInputs:
    node = vendor_node("mi300-cpx", {**MI300X, **labels}, capacity or {"amd.com/gpu": "64"})
    return cluster(node, *pods, tenants=(ALPHA, SENS))


CPX_PODS = (
    holder("alpha", "part-0", "mi300-cpx", **{"amd.com/gpu": "1"}),
    holder("sens", "part-1", "mi300-cpx", **{"amd.com/gpu": "1"}),
)


def test_leak002_tenants_holding_compute_partitions_may_share_an_affected_gpu():
    (draft,) = run("LEAK-002", _cpx(*CPX_PODS))
    assert draft.tenants == ("alpha", "sens")
    assert draft.title == (
        "Tenants alpha, sens may share partitions of LeftoverLocals-affected AMD GPUs on node "
        "mi300-cpx"
    )
    assert draft.evidence["co_residence"].startswith("possible")
    by = {t["tenant"]: t["reaches_gpus_by"] for t in draft.evidence["tenants_on_node"]}
    assert "compute partitioning CPX, memory NPS1" in by["sens"]
    assert "share its memory (NPS1)" in by["alpha"]


@pytest.mark.parametrize(
    ("labels", "read"),
    [
        ({"amd.com/compute-memory-partition": "cpx_nps4"}, ("CPX", "NPS4")),
        ({"beta.amd.com/compute-memory-partition": "dpx_nps2"}, ("DPX", "NPS2")),
        ({"amd.com/compute-memory-partition": "spx_nps1"}, None),  # whole GPUs
        ({"amd.com/compute-partitioning-mode": "QPX"}, ("QPX", None)),
        ({"amd.com/compute-partitioning-supported": "true"}, None),  # supported, not set
    ],
)
def test_the_amd_partition_modes_are_read_from_the_node_labellers_labels(labels, read):
    assert amd_partitioning(labels) == read


def test_share003_compute_partitions_are_not_gpu_instances_for_a_sensitive_tenant():
    """A CPX partition shares its GPU (memory under NPS1): mig_ci, which internal and sensitive
    forbid; which GPU each pod's partition is on is not visible, so co-residence is possible."""
    (draft,) = run("SHARE-003", _cpx(*CPX_PODS))
    assert draft.tenants == ("alpha", "sens")
    assert "amd.com/gpu by mig_ci in node mi300-cpx" in draft.title
    assert draft.evidence["co_residence"] == "possible"
    (entry,) = draft.evidence["nodes"]
    assert entry["node_sharing_strategy"] is None  # NVIDIA's strategy, not read here
    assert entry["accelerator_resources"] == {"amd.com/gpu": 64}
    assert run("SHARE-001", _cpx(*CPX_PODS)) == []  # not time-slicing


def test_share002_tenants_holding_compute_partitions_of_amd_gpus():
    """CPX partitions are compute instances of one GPU (DESIGN §2 `mig_ci`): two tenants
    holding them on one node are SHARE-002's cause, possibly co-resident (which GPU each
    partition is on is not visible); one tenant's partitions and SPX GPUs are not."""
    (draft,) = run("SHARE-002", _cpx(*CPX_PODS))
    assert draft.tenants == ("alpha", "sens")
    assert draft.title == (
        "Tenants alpha and sens use compute partitions (amd.com/gpu) of AMD GPUs in node "
        "mi300-cpx (possible co-residence)"
    )
    assert draft.evidence["co_residence"] == "possible"
    named = (
        holder("alpha", "part-0", "mi300-cpx", **{"amd.com/cpx_nps4": "1"}),
        holder("sens", "part-1", "mi300-cpx", **{"amd.com/cpx_nps4": "1"}),
    )
    inputs = _cpx(*named, labels={}, capacity={"amd.com/cpx_nps4": "64"})
    assert [d.tenants for d in run("SHARE-002", inputs)] == [("alpha", "sens")]


def test_share002_not_for_spx_gpus_or_one_tenants_partitions():
    spx = {"amd.com/compute-partitioning-mode": "SPX", "amd.com/memory-partitioning-mode": "NPS1"}
    assert run("SHARE-002", _cpx(*CPX_PODS, labels=spx, capacity={"amd.com/gpu": "8"})) == []
    pods = (
        holder("alpha", "part-0", "mi300-cpx", **{"amd.com/gpu": "1"}),
        holder("alpha", "part-1", "mi300-cpx", **{"amd.com/gpu": "1"}),
    )
    assert run("SHARE-002", _cpx(*pods)) == []


def test_partitions_named_by_mode_and_spx_nodes():
    # `mixed` naming: the partition resource names its mode.
    named = (
        holder("alpha", "part-0", "mi300-cpx", **{"amd.com/cpx_nps4": "1"}),
        holder("sens", "part-1", "mi300-cpx", **{"amd.com/cpx_nps4": "1"}),
    )
    inputs = _cpx(*named, labels={}, capacity={"amd.com/cpx_nps4": "64"})
    (draft,) = run("LEAK-002", inputs)
    assert draft.tenants == ("alpha", "sens") and "may share" in draft.title
    assert [d.tenants for d in run("SHARE-003", inputs)] == [("alpha", "sens")]
    # SPX: each amd.com/gpu is a whole GPU, one tenant's.
    spx = {"amd.com/compute-partitioning-mode": "SPX", "amd.com/memory-partitioning-mode": "NPS1"}
    inputs = _cpx(*CPX_PODS, labels=spx, capacity={"amd.com/gpu": "8"})
    assert run("LEAK-002", inputs) == [] and run("SHARE-003", inputs) == []


def test_one_tenants_partitions_share_nothing_with_others():
    pods = (
        holder("alpha", "part-0", "mi300-cpx", **{"amd.com/gpu": "1"}),
        holder("alpha", "part-1", "mi300-cpx", **{"amd.com/gpu": "1"}),
        pod("sens", "cpu-only", container(image=ROCM), node_name="mi300-cpx"),
    )
    assert run("LEAK-002", _cpx(*pods)) == [] and run("SHARE-003", _cpx(*pods)) == []


# --- B4: Intel's GPU plugin sharing a card -------------------------------------------------


def _arc(labels: dict[str, str], count: str = "8", *more, tenants=(ALPHA, EXT)) -> PostureInputs:
    pods = (
        holder("alpha", "render-0", "arc-a", **{"gpu.intel.com/i915": "1"}),
        holder("ext", "render-1", "arc-a", **{"gpu.intel.com/i915": "1"}),
        *more,
    )
    arc = vendor_node("arc-a", labels, {"gpu.intel.com/i915": count})
    return cluster(arc, *pods, tenants=tenants)


def test_share001_tenants_on_one_intel_card_shared_by_the_plugin():
    """8 i915 on one card (NFD's count): sharedDevNum 8, the pods time-share the card."""
    inputs = _arc(ONE_FLEX)
    (draft,) = run("SHARE-001", inputs)
    assert draft.tenants == ("alpha", "ext")
    assert draft.title == (
        "Tenants alpha and ext time-slice gpu.intel.com/i915 in node arc-a (certain co-residence)"
    )
    assert "sharedDevNum > 1: 8 gpu.intel.com/i915 on 1 card(s)" in str(draft.evidence)
    (forbidden,) = run("SHARE-003", inputs)
    assert forbidden.tenants == ("alpha", "ext") and "time_slicing" in forbidden.title
    # The card is named by the plugin's labeller alone: the same.
    assert len(run("SHARE-001", _arc({"gpu.intel.com/cards": "card0"}))) == 1


def test_share007_a_sensitive_tenant_time_sharing_an_intel_card():
    pods = (holder("sens", "render-2", "arc-a", **{"gpu.intel.com/i915": "1"}),)
    drafts = run("SHARE-007", _arc(ONE_FLEX, "8", *pods, tenants=(ALPHA, EXT, SENS)))
    assert {t for d in drafts for t in d.tenants} >= {"sens", "ext"}


def test_intel_cards_unknown_or_whole_cards_share_nothing():
    # No label counts the cards: the plugin's default is a card per pod; no co-tenancy is
    # claimed on a guess (a critical SHARE-001 for a node merely missing NFD's labels).
    assert run("SHARE-001", _arc({})) == [] and run("SHARE-003", _arc({})) == []
    # As many i915 as cards (sharedDevNum 1): each pod its own card.
    two = {**ONE_FLEX, "gpu.intel.com/device-id.0380-56c0.count": "2"}
    assert run("SHARE-001", _arc(two, "2")) == [] and run("SHARE-003", _arc(two, "2")) == []


def test_no_dcgm_attribution_or_nvidia_approval_finding_for_intel_time_sharing():
    # DCGM-Exporter and NVIDIA sharing approvals are NVIDIA's: not asked of an Intel card.
    drafts = run_checks(_arc(ONE_FLEX))
    checks = {d.check_id for d in drafts if d.subject_name == "arc-a" or "arc-a" in d.title}
    assert "ATTR-002" not in checks and "LEAK-002" not in checks


# --- what a user sees after a sync and a score ---------------------------------------------


@pytest.mark.django_db
def test_tenants_time_sharing_an_intel_card_see_it_in_their_findings_and_score(personas, tmp_path):
    """Before, the shared Intel card showed only at cluster level ("not read"): neither
    tenant's findings nor score had it. Now both have SHARE-001 (and SHARE-003) on arc-a."""
    items = [
        vendor_node("arc-a", ONE_FLEX, {"gpu.intel.com/i915": "8"}),
        namespace("alpha"),
        namespace("ext"),
        holder("alpha", "render-0", "arc-a", **{"gpu.intel.com/i915": "1"}),
        holder("ext", "render-1", "arc-a", **{"gpu.intel.com/i915": "1"}),
    ]
    snapshot = tmp_path / "arc.json"
    snapshot.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    declared = [
        {"slug": t.slug, "name": t.name, "trust_class": c, "namespaces": [t.slug]}
        for t, c in ((ALPHA, "internal"), (EXT, "external"))
    ]
    tenants_file = tmp_path / "tenants.json"
    tenants_file.write_text(json.dumps({"tenants": declared}))
    out = io.StringIO()
    call_command("apply_tenants", str(tenants_file), stdout=out, stderr=out)
    call_command("sync_cluster", cluster="arc", snapshot=[str(snapshot)], stdout=out, stderr=out)
    call_command("score", cluster="arc", stdout=out, stderr=out)
    lead = api_client(personas["security_lead"])
    for slug in ("alpha", "ext"):
        rows = lead.get(f"/api/v1/findings/?tenant={slug}&status=open").json()["results"]
        shared = {(f["check"], f["subject_name"]) for f in rows}
        assert {("SHARE-001", "arc-a"), ("SHARE-003", "arc-a")} <= shared, (slug, shared)
        tenant_id = next(
            t["id"] for t in lead.get("/api/v1/tenants/").json()["results"] if t["slug"] == slug
        )
        posture = lead.get(f"/api/v1/tenants/{tenant_id}/posture/").json()
        assert "SHARE-001" in json.dumps(posture["contributions"]), slug
