"""SHARE-004 for other vendors' sharing modes (rtamd k53, k54). DESIGN §2: a tenant may use a
sharing mode only under an approved sharing request. Two tenants holding AMD compute partitions
of one node's GPUs (mig_ci, by the device plugin or AMD's DRA driver), or time-sharing an Intel
card by sharedDevNum (time_slicing), each use the mode with another party: each needs an
approval, as on NVIDIA's nodes. One tenant's partitions alone share nothing with another and
need none (docs/clusters.md, DRA), nor do partitions of different GPUs."""

from __future__ import annotations

from dataclasses import replace

from posture.inputs import SharingRequestInfo
from tests.posture.gpu_access_world import run
from tests.posture.test_dra_amd import _two, partition
from tests.posture.test_vendor_gpu_sharing import CPX_PODS, ONE_FLEX, _arc, _cpx, holder


def _tenants_and_modes(inputs) -> set[tuple[str, str]]:
    return {(d.evidence["tenant"], d.evidence["observed_mode"]) for d in run("SHARE-004", inputs)}


def test_tenants_sharing_amd_compute_partitions_need_an_approval():
    assert _tenants_and_modes(_cpx(*CPX_PODS)) == {("alpha", "mig_ci"), ("sens", "mig_ci")}


def test_tenants_time_sharing_an_intel_card_need_an_approval():
    assert _tenants_and_modes(_arc(ONE_FLEX)) == {
        ("alpha", "time_slicing"),
        ("ext", "time_slicing"),
    }


def test_an_approval_covers_it():
    approved = SharingRequestInfo(id=1, tenant="alpha", mode="time_slicing", state="active")
    inputs = replace(_arc(ONE_FLEX), sharing_requests=(approved,))
    assert _tenants_and_modes(inputs) == {("ext", "time_slicing")}


def test_one_tenants_partitions_need_none():
    pods = (
        holder("alpha", "part-0", "mi300-cpx", **{"amd.com/gpu": "1"}),
        holder("alpha", "part-1", "mi300-cpx", **{"amd.com/gpu": "1"}),
    )
    assert run("SHARE-004", _cpx(*pods)) == []


def test_amd_dra_partitions_of_one_gpu_need_an_approval_of_different_gpus_none():
    same = [partition("gpu-0-128", "0000:19:00.0"), partition("gpu-0-129", "0000:19:00.0")]
    assert _tenants_and_modes(_two("gpu-0-128", "gpu-0-129", same)) == {
        ("alpha", "mig_ci"),
        ("beta", "mig_ci"),
    }
    apart = [partition("gpu-0-128", "0000:19:00.0"), partition("gpu-1-136", "0000:39:00.0")]
    assert run("SHARE-004", _two("gpu-0-128", "gpu-1-136", apart)) == []


def test_the_unclassified_partys_use_says_a_claim_comes_first():
    """No sharing request can name the unclassified party (a request names a tenant): its
    SHARE-004 says so and names the namespaces to claim, where a tenant's asks for a request."""
    from tests.posture.test_vendor_gpu_sharing import holder

    stray = holder("render-farm", "render-2", "arc-a", **{"gpu.intel.com/i915": "1"})
    drafts = {d.evidence["tenant"]: d for d in run("SHARE-004", _arc(ONE_FLEX, "8", stray))}
    unclassified = drafts["unclassified"]
    assert unclassified.title.endswith(
        "(no request can name unclassified: claim its namespaces first)"
    )
    assert unclassified.evidence["approval_path"]["namespaces"] == ["render-farm"]
    assert "approval_path" not in drafts["alpha"].evidence
    assert "claim" not in drafts["alpha"].title
