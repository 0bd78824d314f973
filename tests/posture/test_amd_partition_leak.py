"""LEAK-002 names only the tenants whose AMD GPUs meet another tenant's, by the same per-GPU
meeting SHARE-002 uses (rtself6 k16): partitions naming one parent GPU meet for certain,
partitions naming different parents are apart, partitions whose parent nothing names (the
device plugin's, a slice without pciBusID) may meet. A tenant alone on its GPU beside a pair
that shares another is not charged. Objects are our own, spelled as AMD's DRA driver and
device plugin publish them (tests.posture.test_dra_amd, test_vendor_gpu_sharing)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from tests.conftest import api_client
from tests.posture.builders import tenant
from tests.posture.dra_world import dra_pod
from tests.posture.gpu_access_world import namespace, run, world
from tests.posture.test_dra_amd import NODE, amd_claim, amd_class, amd_device, amd_slice, partition
from tests.posture.test_vendor_gpu_sharing import CPX, MI300X, holder, vendor_node

ALPHA, BETA = tenant("alpha", "internal_trusted"), tenant("beta", "internal_trusted")
EXT, GAMMA = tenant("ext", "external"), tenant("gamma", "internal")
GPU_19, GPU_1A = "0000:19:00.0", "0000:1a:00.0"


def _node() -> dict:
    labels = {"kubernetes.io/hostname": NODE, "feature.node.kubernetes.io/amd-gpu": "true"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": NODE, "labels": labels},
        "status": {"capacity": {"cpu": "96"}},
    }


def _objects(holders: list[tuple[str, str, dict]]) -> list[dict]:
    """Each (tenant, claim, device) holder's claim and pod on NODE, with the slice of them."""
    found = [_node(), amd_class(), amd_slice([device for _t, _c, device in holders])]
    for ns, name, device in holders:
        found += [
            namespace(ns),
            amd_claim(ns, name, device["name"], [f"{name}-0"]),
            dra_pod(ns, f"{name}-0", name, node_name=NODE),
        ]
    return found


# alpha and ext hold partitions of GPU 0000:19:00.0; beta a partition of GPU 0000:1a:00.0.
K16 = [
    ("alpha", "pa", partition("p-19-0", GPU_19)),
    ("ext", "pe", partition("p-19-1", GPU_19)),
    ("beta", "pb", partition("p-1a-0", GPU_1A)),
]


def test_a_tenant_whose_partition_is_on_another_gpu_is_not_charged_with_leftoverlocals():
    inputs = world(_objects(K16), (ALPHA, BETA, EXT))
    (share,) = run("SHARE-002", inputs)
    assert share.tenants == ("alpha", "ext")
    (leak,) = run("LEAK-002", inputs)
    assert leak.tenants == ("alpha", "ext")
    assert leak.title == "Tenants alpha, ext share LeftoverLocals-affected AMD GPUs on node mi300-a"
    assert leak.evidence["co_residence"] == "certain"
    assert "beta" not in json.dumps(leak.evidence)


def test_a_partition_whose_parent_is_not_named_may_meet_the_named_ones():
    """gamma's slice names no parent GPU: it may be on 0000:19:00.0 with alpha and ext (as
    SHARE-002 says, possible), while beta's named 0000:1a:00.0 still meets no one."""
    holders = [*K16, ("gamma", "pg", partition("p-xx-0"))]
    inputs = world(_objects(holders), (ALPHA, BETA, EXT, GAMMA))
    pairs = {d.tenants: d.evidence["co_residence"] for d in run("SHARE-002", inputs)}
    (leak,) = run("LEAK-002", inputs)
    assert leak.tenants == ("alpha", "beta", "ext", "gamma")  # gamma may meet beta too
    assert pairs[("alpha", "ext")] == "certain" and ("alpha", "beta") not in pairs
    residence = {t["tenant"]: t["co_residence"] for t in leak.evidence["tenants_on_node"]}
    assert residence == {
        "alpha": "certain",
        "beta": "possible",
        "ext": "certain",
        "gamma": "possible",
    }
    assert leak.title == (
        "Tenants alpha, ext share LeftoverLocals-affected AMD GPUs on node mi300-a; beta, "
        "gamma may share partitions of them"
    )


def test_a_whole_gpu_of_its_own_beside_a_shared_one_is_not_charged():
    """alpha and beta hold one whole DRA GPU (a claim each on it); ext holds another alone."""
    whole = [amd_device("gpu-0-128"), amd_device("gpu-1-136")]
    holders = [("alpha", "a", whole[0]), ("beta", "b", whole[0]), ("ext", "e", whole[1])]
    objects = _objects(holders)
    objects[2] = amd_slice(whole)  # each device published once
    (leak,) = run("LEAK-002", world(objects, (ALPHA, BETA, EXT)))
    assert leak.tenants == ("alpha", "beta")


def test_the_device_plugins_partitions_name_no_gpu_and_may_meet():
    """The device-plugin path (docs/checks.md LEAK-002): no parent is named, so two tenants'
    CPX partitions may share a GPU, and LEAK-002 still says so."""
    node = vendor_node("mi300-cpx", {**MI300X, **CPX}, {"amd.com/cpx_nps1": "64"})
    pods = [
        holder("alpha", "train-0", "mi300-cpx", **{"amd.com/cpx_nps1": "1"}),
        holder("ext", "probe-0", "mi300-cpx", **{"amd.com/cpx_nps1": "1"}),
    ]
    inputs = world([node, namespace("alpha"), namespace("ext"), *pods], (ALPHA, EXT))
    (leak,) = run("LEAK-002", inputs)
    assert leak.tenants == ("alpha", "ext")
    assert leak.title == (
        "Tenants alpha, ext may share partitions of LeftoverLocals-affected AMD GPUs on node "
        "mi300-cpx"
    )
    assert leak.evidence["co_residence"].startswith("possible")


@pytest.mark.django_db
def test_findings_api_charges_only_the_tenants_on_the_shared_gpu(personas, tmp_path):
    snapshot = tmp_path / "amd.json"
    snapshot.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": _objects(K16)}))
    declared = [
        {"slug": t.slug, "name": t.slug, "trust_class": t.trust_class.slug, "namespaces": [t.slug]}
        for t in (ALPHA, BETA, EXT)
    ]
    tenants_file = tmp_path / "tenants.json"
    tenants_file.write_text(json.dumps({"tenants": declared}))
    out = io.StringIO()
    call_command("apply_tenants", str(tenants_file), stdout=out, stderr=out)
    call_command("sync_cluster", cluster="amd", snapshot=[str(snapshot)], stdout=out, stderr=out)
    call_command("score", cluster="amd", stdout=out, stderr=out)
    lead = api_client(personas["security_lead"])
    (leak,) = lead.get("/api/v1/findings/?cluster=amd&check=LEAK-002").json()["results"]
    assert sorted(leak["tenants"]) == ["alpha", "ext"]
    beta = lead.get("/api/v1/findings/?cluster=amd&tenant=beta&status=open").json()["results"]
    assert {f["check"] for f in beta} & {"LEAK-002", "SHARE-002"} == set()
