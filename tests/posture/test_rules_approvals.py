"""SHARE-004 and DRIFT-004 over hand-built read models: sharing modes in use against the
sharing requests that approve them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from posture.inputs import SharingRequestInfo
from tests.posture.builders import gpu_node, inputs, pod, run, sliced_node, tenant

TRUSTED = tenant("tr1", "internal_trusted")
GPU = "nvidia.com/gpu"
POOL = {"gpuposture.io/pool": "batch"}


def sliced_world(*requests: SharingRequestInfo, labels: dict | None = None):
    world = inputs(
        nodes=(sliced_node(labels=labels or POOL),),
        pods=(pod("tr1", "train", gpu={GPU: 1}),),
        tenants=(TRUSTED,),
    )
    return replace(world, sharing_requests=requests)


def request(mode: str, state: str = "active", pool: str = "", rid: int = 1) -> SharingRequestInfo:
    return SharingRequestInfo(
        id=rid, tenant="tr1", mode=mode, node_pool=pool, state=state, requested_by="ana"
    )


def test_share004_fires_with_no_request_and_shows_the_absence():
    [finding] = run("SHARE-004", sliced_world())
    assert finding.tenants == ("tr1",)
    assert finding.key == "tr1"  # each tenant's use is approved on its own
    # The tenant's use is the subject: another tenant's use of the mode here is another one.
    subject = (finding.subject_kind, finding.subject_namespace, finding.subject_name)
    assert subject == ("SharingMode", "batch", "tr1/time_slicing")
    assert finding.evidence["active_approval"] is None
    assert finding.evidence["requests_for_this_mode"] == []
    assert finding.evidence["nodes"] == ["gpu-1"]
    assert finding.evidence["pods"] == ["tr1/train"]
    assert run("DRIFT-004", sliced_world()) == []


def test_an_active_approval_for_the_mode_silences_both():
    world = sliced_world(request("time_slicing"))
    assert run("SHARE-004", world) == []
    assert run("DRIFT-004", world) == []


@pytest.mark.parametrize("state", ["pending", "denied", "revoked", "expired"])
def test_share004_fires_when_the_request_is_not_active_and_names_it(state):
    [finding] = run("SHARE-004", sliced_world(request("time_slicing", state, rid=7)))
    [earlier] = finding.evidence["requests_for_this_mode"]
    assert (earlier["id"], earlier["state"]) == (7, state)


def test_drift004_when_approved_mig_gi_but_observed_time_slicing():
    world = sliced_world(request("mig_gi", rid=3))
    assert run("SHARE-004", world) == []
    [finding] = run("DRIFT-004", world)
    assert finding.severity == ""  # the check's own: high
    assert finding.evidence["observed_mode"] == "time_slicing"
    assert [a["id"] for a in finding.evidence["approved"]] == [3]
    assert finding.evidence["approved"][0]["mode"] == "mig_gi"
    assert "approved: mig_gi" in finding.title


def test_drift004_to_a_stronger_mode_than_approved_keeps_the_catalogues_severity():
    world = inputs(
        nodes=(gpu_node(labels=POOL),),
        pods=(pod("tr1", "train", gpu={"nvidia.com/mig-3g.40gb": 1}),),
        tenants=(TRUSTED,),
    )
    world = replace(world, sharing_requests=(request("time_slicing"),))
    [finding] = run("DRIFT-004", world)
    assert finding.evidence["observed_mode"] == "mig_gi"
    assert finding.severity == "" and "isolates better" in finding.title  # DESIGN §5: high


def test_exclusive_use_needs_no_approval():
    world = inputs(
        nodes=(gpu_node(),), pods=(pod("tr1", "train", gpu={GPU: 1}),), tenants=(TRUSTED,)
    )
    assert run("SHARE-004", world) == []
    assert run("DRIFT-004", world) == []


def test_a_pool_scoped_approval_covers_only_its_pool():
    assert run("SHARE-004", sliced_world(request("time_slicing", pool="batch"))) == []
    [finding] = run("SHARE-004", sliced_world(request("time_slicing", pool="other")))
    assert finding.evidence["node_pool"] == "batch"
    # A node in no named pool is covered only by a cluster-wide approval.
    unlabelled = sliced_world(request("time_slicing", pool="batch"), labels={"x": "y"})
    [finding] = run("SHARE-004", unlabelled)
    assert finding.evidence["node_pool"] == "(no pool label)"


def test_platform_pods_need_no_approval():
    world = inputs(nodes=(sliced_node(),), pods=(pod("kube-system", "dcgm", gpu={GPU: 1}),))
    assert run("SHARE-004", world) == []


def test_drift004_keeps_its_severity_when_the_observed_mode_isolates_better():
    # Approved time_slicing cluster-wide and mig_gi on the pool; observed MPS on the pool:
    # MPS isolates at least as well as the weakest approved mode, which the evidence and the
    # title say, but nobody approved the change: the catalogue's high (DESIGN §5).
    world = inputs(
        nodes=(gpu_node(labels=POOL, sharing_strategy="mps"),),
        pods=(pod("tr1", "infer", gpu={GPU: 1}),),
        tenants=(TRUSTED,),
    )
    approvals = (request("time_slicing", rid=1), request("mig_gi", pool="batch", rid=2))
    [finding] = run("DRIFT-004", replace(world, sharing_requests=approvals))
    assert finding.evidence["observed_mode"] == "mps"
    assert finding.severity == ""  # the check's own: high
    assert finding.evidence["observed_is_stronger_isolation"] is True
    assert "isolates better than what was approved" in finding.title
    # Approved mig_gi only: MPS is weaker than everything approved, the check's own high.
    [finding] = run("DRIFT-004", replace(world, sharing_requests=approvals[1:]))
    assert finding.severity == ""


def test_share004_names_an_approval_for_the_mode_on_another_pool():
    # Approved time_slicing on pool "other"; the tenant time-slices on "batch" too.
    [finding] = run("SHARE-004", sliced_world(request("time_slicing", pool="other", rid=9)))
    assert finding.evidence["node_pool"] == "batch"
    assert finding.evidence["active_approval"] is None
    [other] = finding.evidence["requests_for_this_mode"]
    assert (other["id"], other["state"], other["node_pool"]) == (9, "active", "other")
    assert other["covers_this_pool"] is False


def _unnamed(labels: dict, taints=None, *requests: SharingRequestInfo):
    node = sliced_node(labels=labels, **({} if taints is None else {"taints": taints}))
    world = inputs(nodes=(node,), pods=(pod("tr1", "train", gpu={GPU: 1}),), tenants=(TRUSTED,))
    return replace(world, sharing_requests=requests)


def test_a_title_names_the_pool_of_nodes_no_pool_label_names():
    """rtvirt, rtholdout: nodes with no pool label an approval can name were called "nodes in
    no named pool" even in a tainted trust-class pool, or in a pool the cluster labels its own
    way: the title names what is known; the evidence says only a cluster-wide approval covers
    them and how to approve per pool."""
    # In the internal class's pool by its taint (the builder's node).
    [finding] = run("SHARE-004", _unnamed({"x": "y"}))
    assert finding.title == (
        "tr1 uses time_slicing on nodes of the internal trust-class pool with no active approval"
    )
    assert "only a cluster-wide approval covers them" in finding.evidence["node_pool_note"]
    # A pool the cluster marks with a label of its own.
    [finding] = run("SHARE-004", _unnamed({"acme.com/pool": "gpu-l40s"}))
    assert finding.title == (
        "tr1 uses time_slicing on nodes labelled acme.com/pool=gpu-l40s with no active approval"
    )
    assert finding.evidence["pool_labels_not_read"] == {"acme.com/pool": ["gpu-l40s"]}
    # Nodes of two such pools: the label and both pools.
    two = (
        sliced_node("gpu-1", labels={"acme.com/pool": "a"}),
        sliced_node("gpu-2", labels={"acme.com/pool": "b"}),
    )
    pods = (
        pod("tr1", "x", gpu={GPU: 1}, node="gpu-1"),
        pod("tr1", "y", gpu={GPU: 1}, node="gpu-2"),
    )
    [finding] = run("SHARE-004", inputs(nodes=two, pods=pods, tenants=(TRUSTED,)))
    assert "on nodes labelled acme.com/pool (a, b) with" in finding.title
    # Neither: no pool gpuposture knows.
    [finding] = run("SHARE-004", _unnamed({"x": "y"}, ()))
    assert "on nodes of no pool gpuposture recognises with" in finding.title
    # DRIFT-004 says the same.
    [finding] = run("DRIFT-004", _unnamed({"x": "y"}, None, request("mig_gi")))
    assert finding.title == (
        "tr1 uses time_slicing on nodes of the internal trust-class pool; approved: mig_gi"
    )
    # A named pool reads as before.
    [finding] = run("SHARE-004", sliced_world())
    assert finding.title == "tr1 uses time_slicing on node pool batch with no active approval"
    assert "node_pool_note" not in finding.evidence
