"""A failed or stuck MIG reconfiguration (issue 17 item 6, SHARE-009) and K8S-001 per GPU
resource a tenant namespace uses (item 13)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from inventory.mig_state import carry_mig_state, mig_layout_problem
from inventory.snapshot import Node
from posture.inputs import PostureInputs
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import container, node, pod, run, world

ALPHA, BETA = tenant("alpha"), tenant("beta")
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _mig_node(state: str, layout: str = "all-1g.10gb") -> dict[str, Any]:
    return node(
        "gpu-mig",
        capacity={"nvidia.com/mig-1g.10gb": "56", "nvidia.com/mig-1c.3g.40gb": "6"},
        labels={
            "nvidia.com/mig.strategy": "mixed",
            "nvidia.com/mig.config": layout,
            "nvidia.com/mig.config.state": state,
        },
    )


def _mig_pod(ns: str, name: str, profile: str = "nvidia.com/mig-1g.10gb") -> dict[str, Any]:
    return pod(ns, name, container(gpu={profile: "1"}), node_name="gpu-mig")


def _mig_world(state: str, *pods: dict[str, Any], seen_after: timedelta | None = None):
    inputs = world([_mig_node(state), *pods], (ALPHA, BETA))
    if seen_after is None:
        return inputs
    # What two syncs `seen_after` apart record (inventory.sync carries the first sight over).
    (first,) = carry_mig_state((), inputs.snapshot.nodes, T0)
    (second,) = carry_mig_state((first,), inputs.snapshot.nodes, T0 + seen_after)
    snapshot = replace(inputs.snapshot, nodes=(second,))
    return PostureInputs(cluster="test", snapshot=snapshot, tenants=inputs.tenants)


def test_failed_mig_reconfiguration_is_a_finding_with_the_requested_layout():
    inputs = _mig_world("failed", _mig_pod("alpha", "a"), _mig_pod("beta", "b"))
    (draft,) = run("SHARE-009", inputs)
    assert (draft.subject_kind, draft.subject_name, draft.tenants) == (
        "Node",
        "gpu-mig",
        ("alpha", "beta"),
    )
    assert draft.evidence["requested_mig_config"] == "all-1g.10gb"
    assert draft.evidence["mig_config_state"] == "failed"
    assert draft.severity in ("", "high")


def test_a_failed_layout_is_not_judged_by_the_isolation_it_would_give():
    inputs = _mig_world(
        "failed",
        _mig_pod("alpha", "a", "nvidia.com/mig-1c.3g.40gb"),
        _mig_pod("beta", "b", "nvidia.com/mig-1c.3g.40gb"),
    )
    # Compute instances of one GPU instance would be SHARE-002; the layout is unknown instead.
    assert run("SHARE-002", inputs) == []
    assert run("SHARE-004", inputs) == []
    assert [d.check_id for d in run("SHARE-009", inputs)] == ["SHARE-009"]


def test_the_same_node_in_success_is_judged_as_mig():
    inputs = _mig_world(
        "success",
        _mig_pod("alpha", "a", "nvidia.com/mig-1c.3g.40gb"),
        _mig_pod("beta", "b", "nvidia.com/mig-1c.3g.40gb"),
    )
    assert run("SHARE-009", inputs) == []
    assert len(run("SHARE-002", inputs)) == 1


@pytest.mark.parametrize(
    ("state", "apart", "fires"),
    [
        ("pending", timedelta(minutes=30), True),
        ("rebooting", timedelta(hours=2), True),
        ("pending", timedelta(minutes=2), False),  # a reconfiguration under way
        ("pending", None, False),  # one sight only: nothing to say yet
        ("success", timedelta(hours=2), False),
    ],
)
def test_pending_is_stuck_on_syncs_far_enough_apart(state, apart, fires):
    inputs = _mig_world(state, _mig_pod("alpha", "a"), seen_after=apart)
    found = run("SHARE-009", inputs)
    assert bool(found) is fires
    if fires:
        assert found[0].evidence["mig_config_state"] == state
        assert found[0].evidence["state_first_seen"] == T0.isoformat()


def test_carry_keeps_the_first_sight_while_the_state_holds():
    pending = Node("gpu-mig", mig_config_state="pending")
    (first,) = carry_mig_state((), (pending,), T0)
    (later,) = carry_mig_state((first,), (pending,), T0 + timedelta(hours=1))
    assert (later.mig_config_state_since, later.mig_config_state_seen) == (
        T0.isoformat(),
        (T0 + timedelta(hours=1)).isoformat(),
    )
    rebooting = replace(pending, mig_config_state="rebooting")
    (changed,) = carry_mig_state((later,), (rebooting,), T0 + timedelta(hours=2))
    assert changed.mig_config_state_since == (T0 + timedelta(hours=2)).isoformat()
    (done,) = carry_mig_state((changed,), (replace(pending, mig_config_state="success"),), T0)
    assert (done.mig_config_state_since, mig_layout_problem(done)) == (None, None)


# --- K8S-001 ----------------------------------------------------------------------------------


def _quota(ns: str, **hard: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpu", "namespace": ns},
        "spec": {"hard": hard},
    }


def _k8s001(*objects: dict[str, Any]):
    namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "alpha"}}]
    return run("K8S-001", world([node("gpu-a"), *namespaces, *objects], (ALPHA,)))


def _uses(resource: str, count: str = "1", **more: str) -> dict[str, Any]:
    return pod(
        "alpha", f"uses-{resource.rsplit('/', 1)[-1]}", container(gpu={resource: count, **more})
    )


@pytest.mark.parametrize(
    ("quota", "uses", "missing"),
    [
        # A quota on nvidia.com/gpu does not bound the .shared replicas the tenant uses.
        (
            {"requests.nvidia.com/gpu": "4"},
            [_uses("nvidia.com/gpu.shared")],
            ["nvidia.com/gpu.shared"],
        ),
        # Kubernetes never enforces an extended resource under the bare name or limits.
        ({"nvidia.com/gpu": "4"}, [_uses("nvidia.com/gpu")], ["nvidia.com/gpu"]),
        ({"limits.nvidia.com/gpu": "4"}, [_uses("nvidia.com/gpu")], ["nvidia.com/gpu"]),
        ({"requests.nvidia.com/gpu": "4"}, [_uses("nvidia.com/gpu")], []),
        ({"requests.nvidia.com/gpu": "4"}, [_uses("nvidia.com/gpu-ts")], ["nvidia.com/gpu-ts"]),
        ({"requests.nvidia.com/gpu-ts": "8"}, [_uses("nvidia.com/gpu-ts")], []),
        (
            {"requests.nvidia.com/gpu": "4"},
            [_uses("nvidia.com/mig-1g.10gb"), _uses("nvidia.com/gpu")],
            ["nvidia.com/mig-1g.10gb"],
        ),
        # HAMi's counters: its scheduler enforces them under limits. too.
        (
            {"requests.nvidia.com/gpu": "2", "limits.nvidia.com/gpumem": "8000"},
            [_uses("nvidia.com/gpu", **{"nvidia.com/gpumem": "3000"})],
            [],
        ),
        # ... and ride on the nvidia.com/gpu share each HAMi pod holds: a bounded count bounds
        # them (one share takes at most one GPU's cores and memory).
        (
            {"requests.nvidia.com/gpu": "2"},
            [_uses("nvidia.com/gpu", **{"nvidia.com/gpucores": "30"})],
            [],
        ),
        # A counter on a pod holding no share is not bounded by the count.
        (
            {"requests.nvidia.com/gpu": "2"},
            [_uses("nvidia.com/gpumem", "3000")],
            ["nvidia.com/gpumem"],
        ),
        # An unbounded count bounds no counter either.
        (
            {"requests.cpu": "8"},
            [_uses("nvidia.com/gpu", **{"nvidia.com/gpumem": "3000"})],
            ["nvidia.com/gpu", "nvidia.com/gpumem"],
        ),
        # No GPU pods: any GPU quota key bounds what the tenant may start taking.
        ({"requests.nvidia.com/mig-1g.10gb": "2"}, [], []),
        ({"requests.cpu": "8"}, [], ["nvidia.com/gpu"]),
    ],
)
def test_k8s001_names_each_resource_used_without_a_quota(quota, uses, missing):
    found = _k8s001(_quota("alpha", **quota), *uses)
    named = [m["resource"] for d in found for m in d.evidence["missing"]]
    assert named == missing
    for draft in found:
        for entry in draft.evidence["missing"]:
            assert entry["expected_key"] == "requests." + entry["resource"]
            assert f"requests.{entry['resource']}" in draft.title


def test_k8s001_says_which_present_keys_are_not_enforced():
    (draft,) = _k8s001(_quota("alpha", **{"nvidia.com/gpu": "4"}), _uses("nvidia.com/gpu"))
    (entry,) = draft.evidence["missing"]
    assert (entry["unenforced_keys"], entry["pods"]) == (["nvidia.com/gpu"], ["alpha/uses-gpu"])


def test_k8s001_reads_the_namespaces_of_gpu_pods_an_export_holds_no_object_of():
    """`kubectl get` without namespaces: the tenant's GPU pod shows team alpha's namespace
    exists; a missing Namespace object must not resolve its missing quota (rtpartial k15)."""
    inputs = world([node("gpu-a"), _uses("nvidia.com/gpu")], (ALPHA,))
    assert not inputs.snapshot.namespaces
    (draft,) = run("K8S-001", inputs)
    assert draft.evidence["namespace"] == "alpha"
    assert [m["resource"] for m in draft.evidence["missing"]] == ["nvidia.com/gpu"]


STATE = "nvidia.com/mig.config.state"


def _unreported(strategy: str, product: str, capacity: dict[str, str], **labels: str):
    """Two tenants on a node whose mig.config label requests a layout MIG Manager never
    reported on (no mig.config.state): GFD's own labels say what the devices are."""
    gpu = node(
        "gpu-mig",
        capacity=capacity,
        labels={
            "nvidia.com/mig.strategy": strategy,
            "nvidia.com/gpu.product": product,
            "nvidia.com/mig.config": "all-1g.10gb",
            **labels,
        },
    )
    resource = next(iter(capacity))
    pods = [_mig_pod("alpha", "a", resource), _mig_pod("beta", "b", resource)]
    return world([gpu, *pods], (ALPHA, BETA))


@pytest.mark.parametrize(
    ("strategy", "product", "capacity"),
    [
        # single: GFD names MIG devices "<model>-MIG-<profile>"; a whole-GPU name is no MIG.
        ("single", "NVIDIA-A100-SXM4-80GB", {"nvidia.com/gpu": "8"}),
        # mixed: the MIG devices would be nvidia.com/mig-* resources; only whole GPUs are.
        ("mixed", "NVIDIA-A100-SXM4-80GB", {"nvidia.com/gpu": "8"}),
    ],
)
def test_a_requested_layout_never_applied_is_not_judged_as_mig(strategy, product, capacity):
    inputs = _unreported(strategy, product, capacity)
    (draft,) = run("SHARE-009", inputs)
    assert draft.tenants == ("alpha", "beta")
    assert draft.evidence["mig_config_state"] == "not applied"
    assert "MIG Manager never reported a state" in draft.evidence["why"]
    assert "all-1g.10gb not applied" in draft.title
    # The tenants' GPUs are not called MIG GPU instances (no mig_gi approval is asked for).
    assert run("SHARE-004", inputs) == []


@pytest.mark.parametrize(
    ("strategy", "product", "capacity", "labels"),
    [
        # GFD sees the MIG devices: the layout holds, whoever applied it.
        ("single", "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", {"nvidia.com/gpu": "56"}, {}),
        ("mixed", "NVIDIA-A100-SXM4-80GB", {"nvidia.com/mig-1g.10gb": "56"}, {}),
        # MIG Manager reported success: its word, not a guess from labels that may lag.
        ("single", "NVIDIA-A100-SXM4-80GB", {"nvidia.com/gpu": "8"}, {STATE: "success"}),
    ],
)
def test_a_layout_in_effect_or_reported_is_no_finding(strategy, product, capacity, labels):
    assert run("SHARE-009", _unreported(strategy, product, capacity, **labels)) == []


def test_no_product_label_says_nothing_about_the_devices():
    gpu = Node("n", labels={}, mig_strategy="single", mig_config="all-1g.10gb")
    assert mig_layout_problem(gpu) is None
