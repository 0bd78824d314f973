"""The co-tenancy checks on a GKE node whose sharing only GKE's own labels state (no GFD there):
they fire as on a GFD-labelled node, and SHARE-005 never counts the node (GKE rejects a
container that asks for more than one shared GPU)."""

from __future__ import annotations

import pytest

from inventory.snapshot import SharingConfig
from inventory.sources.normalise import normalise
from posture.rules import CHECKS
from tests.posture.builders import inputs, pod, run, tenant, tenants_of

GKE = "cloud.google.com/"


def gke_node(strategy: str):
    raw = {
        "kind": "Node",
        "metadata": {
            "name": "gke-l4-1",
            "labels": {
                GKE + "gke-accelerator": "nvidia-l4",
                GKE + "gke-nodepool": "l4-shared",
                GKE + "gke-gpu-sharing-strategy": strategy,
                GKE + "gke-max-shared-clients-per-gpu": "2",
            },
        },
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {"capacity": {"nvidia.com/gpu": "2"}},  # one L4, two clients
    }
    (node,) = normalise([raw]).nodes
    return node


def world(strategy: str, **snapshot):
    pods = (
        pod("vision", "embedder", node="gke-l4-1", gpu={"nvidia.com/gpu": 1}),
        pod("partner", "notebook", node="gke-l4-1", gpu={"nvidia.com/gpu": 1}),
    )
    tenants = (tenant("vision", "sensitive"), tenant("partner", "external"))
    return inputs(nodes=(gke_node(strategy),), pods=pods, tenants=tenants, **snapshot)


@pytest.mark.parametrize(
    ("strategy", "fires", "silent"),
    [
        ("time-sharing", ("SHARE-001", "SHARE-003", "SHARE-007"), ("SHARE-006",)),
        ("mps", ("SHARE-003", "SHARE-006", "SHARE-007"), ("SHARE-001",)),
    ],
)
def test_co_tenancy_checks_fire_on_gke_sharing(strategy, fires, silent):
    found = world(strategy)
    for check in fires:
        drafts = run(check, found)
        assert tenants_of(drafts) == {"partner", "vision"}, check
        assert drafts[0].evidence["co_residence"] == "certain", check  # one physical L4
    for check in silent:
        assert run(check, found) == [], check


def test_share005_never_counts_a_gke_time_shared_node():
    # A time-slicing ConfigMap without failRequestsGreaterThanOne somewhere in the cluster: it
    # is still reported, but GKE's device plugin does not read it and the node is not its user.
    lax = SharingConfig("kube-system", "time-slicing-config", "any", "time_slicing", replicas=4)
    (draft,) = run("SHARE-005", world("time-sharing", sharing_configs=(lax,)))
    assert draft.evidence["nodes_using_it"] == []
    assert draft.tenants == ()
    rationale = CHECKS["SHARE-005"].rationale  # what docs/checks.md says of SHARE-005
    assert "GKE rejects a container that requests more than one shared GPU" in rationale
