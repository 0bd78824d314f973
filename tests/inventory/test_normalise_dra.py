"""DRA objects read from `kubectl get -o json` as normalise() keeps them: only what says which
device a claim holds, where, for whom and how it is shared; both the v1 and the v1beta1 shape;
malformed fields read as nothing rather than failing the sync."""

from __future__ import annotations

from inventory.snapshot import DraClaimTemplate, DraDeviceClass, Pod, from_dict, to_dict
from inventory.sources.normalise import normalise
from tests.posture.dra_world import (
    claim,
    claim_template,
    device_class,
    dra_pod,
    gpu_config,
    resource_slice,
)
from tests.posture.gpu_access_world import UUIDS


def test_a_v1_claim_keeps_its_requests_allocation_config_and_consumers():
    obj = claim("alpha", "train-gpu", ["gpu-1"], sharing="TimeSlicing", reserved_for=["t-0"])
    obj["spec"]["devices"]["config"][0]["opaque"]["parameters"]["token"] = "not-kept"
    (read,) = normalise([obj]).dra_claims
    (request,) = read.requests
    assert (request.name, request.device_class, request.count, request.admin_access) == (
        "gpu",
        "gpu.nvidia.com",
        1,
        False,
    )
    (result,) = read.results
    assert (result.driver, result.pool, result.device) == ("gpu.nvidia.com", "gpu-a", "gpu-1")
    (allocated,) = read.allocation_config
    assert (allocated.kind, allocated.sharing, allocated.source) == (
        "GpuConfig",
        "TimeSlicing",
        "claim",
    )
    assert (read.node_name, read.reserved_for) == ("gpu-a", ("pods/t-0",))
    assert read.api_version == "resource.k8s.io/v1"
    assert "not-kept" not in str(to_dict(read))


def test_v1beta1_requests_and_basic_devices_read_like_v1():
    old_claim = claim("beta", "peek", ["gpu-0"], admin=True)
    old_claim["apiVersion"] = "resource.k8s.io/v1beta1"
    for request in old_claim["spec"]["devices"]["requests"]:
        request.update(request.pop("exactly"))
    old_slice = resource_slice("gpu-a")
    old_slice["apiVersion"] = "resource.k8s.io/v1beta1"
    old_slice["spec"]["devices"] = [
        {"name": d["name"], "basic": {"attributes": d["attributes"]}}
        for d in old_slice["spec"]["devices"]
    ]
    snapshot = normalise([old_claim, old_slice])
    (read,) = snapshot.dra_claims
    assert read.admin_access and read.requests[0].device_class == "gpu.nvidia.com"
    (slice_,) = snapshot.dra_slices
    assert slice_.devices[0].attributes["uuid"] == UUIDS[0]
    assert slice_.devices[0].attributes["type"] == "gpu"


def test_classes_templates_and_pod_claims():
    shared = device_class(config=[{"opaque": gpu_config("MPS")["opaque"]}])
    snapshot = normalise(
        [
            shared,
            claim_template("alpha", "one-gpu", admin=True),
            dra_pod("alpha", "a-0", template="one-gpu", generated="a-0-gpu-x2k9q"),
            dra_pod("alpha", "a-1", "shared-gpu"),
        ]
    )
    (dc,) = snapshot.dra_device_classes
    assert dc.drivers == ("gpu.nvidia.com",)
    assert (dc.config[0].sharing, dc.config[0].source) == ("MPS", "class")
    (template,) = snapshot.dra_claim_templates
    assert template.admin_access
    claims = {p.name: p.resource_claims for p in snapshot.pods}
    assert [(c.name, c.claim, c.template) for c in claims["a-0"]] == [
        ("gpu", "a-0-gpu-x2k9q", "one-gpu")
    ]
    assert [(c.claim, c.template) for c in claims["a-1"]] == [("shared-gpu", None)]
    # Each object round-trips through its stored JSON form unchanged.
    assert from_dict(DraClaimTemplate, to_dict(template)) == template
    assert from_dict(DraDeviceClass, to_dict(dc)) == dc
    assert [from_dict(Pod, to_dict(p)) for p in snapshot.pods] == list(snapshot.pods)


def test_malformed_dra_fields_read_as_nothing_not_as_a_failure():
    broken = claim("alpha", "odd", ["gpu-0"])
    broken["spec"]["devices"]["requests"] = "not a list"
    broken["status"]["allocation"]["devices"]["results"] = [{"request": ["x"], "device": 7}]
    snapshot = normalise([broken, claim("alpha", "fine", None)])
    assert [c.name for c in snapshot.dra_claims] == ["fine", "odd"]
    (odd,) = [c for c in snapshot.dra_claims if c.name == "odd"]
    assert odd.requests == () and odd.results[0].request == ""
    assert odd.results[0].device == "7"  # a scalar is its text, as everywhere
    nameless = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {"devices": [{"attributes": []}]},
    }
    assert normalise([nameless]).dra_slices[0].devices == ()
