"""POD-009 from the pool's side: a GPU pod of another class inside a dedicated pool. A taint
keeps out only pods scheduled after it, by tolerations the tenant writes; a pod that predates
it, is bound by nodeName, or tolerates broadly runs in the pool all the same."""

from __future__ import annotations

import pytest

import posture.rules  # noqa: F401  (registers the checks)
from inventory.snapshot import Taint
from tests.posture.builders import gpu_node, inputs, pod, run, tenant

KEY = "gpuposture.io/trust-class"
SENS = tenant("sens", "sensitive", namespaces=("sens-a",))
EXT = tenant("ext", "external", namespaces=("ext-a",))
INT = tenant("int", "internal", namespaces=("int-a",))
OPS = tenant("ops", "platform", namespaces=("ops-a",))
GPU = {"nvidia.com/gpu": 1}


def _node(*classes: str):
    return gpu_node("gpu-1", taints=tuple(Taint(KEY, c, "NoSchedule") for c in classes))


def _fired(node, *pods):
    world = inputs(nodes=(node,), pods=pods, tenants=(SENS, EXT, INT, OPS))
    return {d.subject_name: d for d in run("POD-009", world)}


def test_an_internal_gpu_pod_inside_the_sensitive_pool_affects_both():
    found = _fired(_node("sensitive"), pod("sens-a", "s", gpu=GPU), pod("int-a", "i", gpu=GPU))
    assert set(found) == {"i"}
    draft = found["i"]
    assert draft.tenants == ("int", "sens")
    assert "inside the sensitive pool" in draft.title
    (entry,) = draft.evidence["pods"]
    assert entry["inside_pool_of"] == [{"class": "sensitive"}]
    assert entry["pool_tenants_on_node"] == ["sens"]


def test_an_external_pod_in_the_sensitive_pool_names_the_pool_tenants_too():
    found = _fired(_node("sensitive"), pod("sens-a", "s", gpu=GPU), pod("ext-a", "e", gpu=GPU))
    assert set(found) == {"e"}
    assert found["e"].tenants == ("ext", "sens")


@pytest.mark.parametrize(
    ("node", "pods"),
    [
        # Each class in its own pool.
        (_node("sensitive"), (pod("sens-a", "s", gpu=GPU),)),
        (_node("internal"), (pod("int-a", "i", gpu=GPU),)),
        # An internal pod on an untainted node or another non-dedicated class's pool.
        (_node(), (pod("int-a", "i", gpu=GPU),)),
        (_node("internal_trusted"), (pod("int-a", "i", gpu=GPU),)),
        # A tenant of the platform class: the platform's own workloads run in every pool.
        (_node("sensitive"), (pod("sens-a", "s", gpu=GPU), pod("ops-a", "o", gpu=GPU))),
        # A CPU pod of another tenant holds no GPU (POD-009 judges GPU pods).
        (_node("sensitive"), (pod("sens-a", "s", gpu=GPU), pod("int-a", "i"))),
    ],
)
def test_quiet(node, pods):
    assert _fired(node, *pods) == {}


def test_a_shared_node_is_read_once_however_many_intruding_pods_it_carries(monkeypatch):
    """A node's pool classes and the tenants on it are read once per node, not per pod (a
    shared node carries twenty pods); each intruder still names them."""
    from posture.rules.pod import placement

    calls: list[str] = []
    for name in ("node_pool_classes", "tenants_on_node"):
        real = getattr(placement, name)
        monkeypatch.setattr(
            placement, name, lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a)
        )
    intruders = [pod("int-a", f"i{n}", gpu=GPU) for n in range(3)]
    found = _fired(_node("sensitive"), pod("sens-a", "s", gpu=GPU), *intruders)
    assert set(found) == {"i0", "i1", "i2"}
    for draft in found.values():
        (entry,) = draft.evidence["pods"]
        assert entry["node_pool_for"] == ["sensitive"]
        assert entry["pool_tenants_on_node"] == ["sens"]
        assert draft.tenants == ("int", "sens")
    assert sorted(calls) == ["node_pool_classes", "tenants_on_node"]
