"""A pod whose `nvidia.com/gpu` request DRA serves (KEP-5004) holds what the claim made for it
was allocated, and nothing through a device plugin: SHARE-001 meets it on that claim's GPU,
certainly, and never through a device-less `nvidia.com/gpu` holding of its own. Where no
status names a claim, the request is a device plugin's, as before."""

from __future__ import annotations

from enforcement.pod_object import pod_object
from inventory.sources.normalise import normalise
from tests.posture.builders import tenant
from tests.posture.extended_world import EXT_CLAIM, extended_cluster, extended_pod
from tests.posture.gpu_access_world import run, world

TENANTS = (tenant("alpha", "internal_trusted"), tenant("beta", "internal_trusted"))


def _beta_pods(draft) -> list[dict]:
    return next(p["pods"] for p in draft.evidence["parties"] if p["party"] == "beta")


def test_the_pod_holds_its_claims_gpu_and_no_device_plugin_one():
    (draft,) = run("SHARE-001", world(extended_cluster(), TENANTS))
    assert draft.tenants == ("alpha", "beta")
    assert draft.evidence["co_residence"] == "certain"
    held = _beta_pods(draft)
    assert [p["resource"] for p in held] == [f"resourceclaim/beta/{EXT_CLAIM}"]
    assert all(p.get("devices") for p in held)
    assert f"beta/{EXT_CLAIM}" in draft.evidence["dra_claims"]


def test_the_request_is_not_counted_as_a_device_plugin_holding():
    ext = next(p for p in normalise(extended_cluster()).pods if p.name == "ext-0")
    assert ext.gpu_resources == {} and ext.held_resources == {}
    (entry,) = ext.resource_claims
    assert (entry.claim, entry.extended) == (EXT_CLAIM, (("main", "nvidia.com/gpu"),))
    # Admission sees the pod before the scheduler made the claim: no spec.resourceClaims.
    assert "resourceClaims" not in pod_object(ext)["spec"]


def test_a_request_the_status_does_not_map_stays_a_device_plugin_holding():
    (ext,) = normalise([extended_pod("beta", "ext-0", EXT_CLAIM, sidecar_gpu=True)]).pods
    assert ext.gpu_resources == {"nvidia.com/gpu": 1}  # the side container's alone


def test_without_a_claim_in_its_status_the_request_is_a_device_plugins_as_before():
    ext = next(p for p in normalise(extended_cluster(status=False)).pods if p.name == "ext-0")
    assert ext.gpu_resources == {"nvidia.com/gpu": 1} and ext.resource_claims == ()


def test_k8s_001_asks_the_quota_key_admission_charges_the_request_to():
    """Quota admission charges the request as the spec writes it, before the scheduler makes
    the claim: `requests.nvidia.com/gpu` bounds it, with or without the claim in its status."""
    for status in (True, False):
        found = run("K8S-001", world(extended_cluster(status=status), TENANTS))
        (beta,) = [d for d in found if d.tenants == ("beta",)]
        assert [m["expected_key"] for m in beta.evidence["missing"]] == ["requests.nvidia.com/gpu"]
