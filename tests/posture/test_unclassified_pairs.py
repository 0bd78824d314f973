"""Co-tenancy between namespaces no tenant claims (DESIGN §3, fail closed): nothing tells that
two unclaimed namespaces have one owner, so where their pods share a GPU each namespace is its
own party, judged under the unclassified class. The finding affects the tenant `unclassified`
once, its parties name each namespace, its key names the pair. Against a tenant the
unclassified pods stay one party, with the identity they had."""

from __future__ import annotations

from dataclasses import replace

import pytest

from posture.inputs import PostureInputs
from tests.posture.builders import gpu_node, inputs, pod, run, sliced_node, tenant, trust_class

GPU, CI = "nvidia.com/gpu", "nvidia.com/mig-1c.3g.40gb"
ALPHA = tenant("alpha", "internal_trusted")
MPS_NODE = gpu_node(gpu_count=1, sharing_strategy="mps", time_slicing_replicas=4)
MIG_NODE = gpu_node(sharing_strategy="mig", mig_strategy="mixed")


def _world(node, *placed: tuple[str, str, str]) -> PostureInputs:
    """`placed`: (namespace, pod, resource) on `node`; only alpha's namespace is claimed."""
    pods = tuple(pod(ns, name, gpu={resource: 1}) for ns, name, resource in placed)
    return inputs(nodes=(node,), pods=pods, tenants=(ALPHA,))


@pytest.mark.parametrize(
    ("node", "check_id", "key", "verb"),
    [
        (sliced_node(), "SHARE-001", GPU, "time-slice"),
        (sliced_node(), "SHARE-003", f"{GPU}:time_slicing", "share"),
        (MPS_NODE, "SHARE-006", GPU, "share"),
        (MPS_NODE, "SHARE-003", f"{GPU}:mps", "share"),
        (MIG_NODE, "SHARE-002", "3g.40gb", "use compute instances"),
    ],
)
def test_two_unclaimed_namespaces_sharing_a_gpu_are_two_parties(node, check_id, key, verb):
    resource = CI if node is MIG_NODE else GPU
    world = _world(node, ("ts-a", "a", resource), ("ts-b", "b", resource))
    (pair,) = run(check_id, world)
    assert pair.tenants == ("unclassified",)  # the overview's Unclassified row, once
    assert pair.key == f"{key}:unclassified:ts-a:unclassified:ts-b"
    parties = pair.evidence["parties"]
    assert [p["party"] for p in parties] == ["unclassified:ts-a", "unclassified:ts-b"]
    assert [p["namespace"] for p in parties] == ["ts-a", "ts-b"]
    assert all(p["is_unclassified"] and p["trust_class"] == "external" for p in parties)
    assert parties[0]["pods"][0]["pod"] == "ts-a/a"
    assert pair.title.startswith(f"Pods of two namespaces no tenant owns (ts-a, ts-b) {verb}")


def test_each_pair_of_unclaimed_namespaces_has_its_own_stable_finding():
    placed = [("ts-a", "a", GPU), ("ts-b", "b", GPU), ("ts-c", "c", GPU)]
    keys = sorted(d.key for d in run("SHARE-001", _world(sliced_node(), *placed)))
    again = sorted(d.key for d in run("SHARE-001", _world(sliced_node(), *reversed(placed))))
    assert (
        keys
        == again
        == [
            f"{GPU}:unclassified:ts-a:unclassified:ts-b",
            f"{GPU}:unclassified:ts-a:unclassified:ts-c",
            f"{GPU}:unclassified:ts-b:unclassified:ts-c",
        ]
    )


@pytest.mark.parametrize("check_id", ["SHARE-001", "SHARE-003", "SHARE-006", "SHARE-002"])
def test_pods_of_one_unclaimed_namespace_are_one_party(check_id):
    node = MIG_NODE if check_id == "SHARE-002" else MPS_NODE if check_id == "SHARE-006" else None
    resource = CI if node is MIG_NODE else GPU
    world = _world(node or sliced_node(), ("ts-a", "a", resource), ("ts-a", "b", resource))
    assert run(check_id, world) == []


def test_the_configured_class_decides_share003_between_unclaimed_namespaces():
    placed = [("ts-a", "a", GPU), ("ts-b", "b", GPU)]
    trusted = trust_class("internal_trusted")
    world = replace(_world(sliced_node(), *placed), unclassified_class=trusted)
    assert run("SHARE-003", world) == []  # internal_trusted time-slices with its own class
    (pair,) = run("SHARE-001", world)  # still two parties on one GPU
    assert [p["trust_class"] for p in pair.evidence["parties"]] == ["internal_trusted"] * 2


def test_a_tenant_meets_the_unclassified_party_as_one_with_its_old_identity():
    placed = [("alpha", "x", GPU), ("ts-a", "a", GPU), ("ts-b", "b", GPU)]
    found = {d.key: d for d in run("SHARE-001", _world(sliced_node(), *placed))}
    assert set(found) == {f"{GPU}:alpha:unclassified", f"{GPU}:unclassified:ts-a:unclassified:ts-b"}
    tenant_pair = found[f"{GPU}:alpha:unclassified"]
    assert tenant_pair.tenants == ("alpha", "unclassified")
    unclassified = tenant_pair.evidence["parties"][1]
    assert unclassified["party"] == "unclassified" and "namespace" not in unclassified
    assert unclassified["replicas"] == 2
    assert tenant_pair.title.startswith("Tenant alpha and pods of a namespace no tenant owns")
