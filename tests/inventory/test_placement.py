"""Would a DaemonSet run a pod on a node: nodeSelector, required node affinity and taints
against tolerations, as the GPU Operator's own DaemonSets spell them (pure)."""

from __future__ import annotations

import pytest

from inventory.placement import daemonset_fit
from inventory.snapshot import Taint

GPU_TAINT = Taint("nvidia.com/gpu", "", "NoSchedule")
CLASS_TAINT = Taint("gpuposture.io/trust-class", "sensitive", "NoSchedule")
# What the operator's DaemonSets tolerate by default (ClusterPolicy daemonsets.tolerations).
OPERATOR_TOLERATIONS = ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},)
DCGM_SELECTOR = {"nvidia.com/gpu.deploy.dcgm-exporter": "true"}


def fit(labels=None, taints=(), selector=None, tolerations=(), terms=(), name="gpu-1"):
    return daemonset_fit(
        name,
        labels or {},
        taints,
        node_selector=selector or {},
        tolerations=tolerations,
        affinity_terms=terms,
    ).fits


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"nvidia.com/gpu.deploy.dcgm-exporter": "true"}, True),
        # The operator's per-node switch: the admin turned the exporter off on this node.
        ({"nvidia.com/gpu.deploy.dcgm-exporter": "false"}, False),
        ({}, False),
    ],
)
def test_node_selector(labels, expected):
    assert fit(labels, (GPU_TAINT,), DCGM_SELECTOR, OPERATOR_TOLERATIONS) is expected


@pytest.mark.parametrize(
    ("taints", "tolerations", "expected"),
    [
        ((GPU_TAINT,), OPERATOR_TOLERATIONS, True),
        ((GPU_TAINT,), (), False),
        # A class taint the operator's DaemonSets do not tolerate keeps them off the pool.
        ((GPU_TAINT, CLASS_TAINT), OPERATOR_TOLERATIONS, False),
        ((CLASS_TAINT,), ({"operator": "Exists"},), True),  # tolerate everything
        ((CLASS_TAINT,), ({"key": "gpuposture.io/trust-class", "value": "sensitive"},), True),
        ((CLASS_TAINT,), ({"key": "gpuposture.io/trust-class", "value": "external"},), False),
        ((Taint("dedicated", "x", "PreferNoSchedule"),), (), True),  # never blocks
        # The DaemonSet controller tolerates a cordoned or pressured node itself.
        ((Taint("node.kubernetes.io/unschedulable", "", "NoSchedule"),), (), True),
        ((Taint("nvidia.com/gpu", "", "NoExecute"),), OPERATOR_TOLERATIONS, False),
    ],
)
def test_taints_and_tolerations(taints, tolerations, expected):
    assert fit({}, taints, {}, tolerations) is expected


GPU_PRESENT = {
    "matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]
}


@pytest.mark.parametrize(
    ("labels", "terms", "expected"),
    [
        ({"nvidia.com/gpu.present": "true"}, (GPU_PRESENT,), True),
        ({}, (GPU_PRESENT,), False),
        # Terms are ORed; requirements within a term are ANDed.
        (
            {"a": "1"},
            (GPU_PRESENT, {"matchExpressions": [{"key": "a", "operator": "Exists"}]}),
            True,
        ),
        ({"a": "1"}, ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]},), False),
        (
            {"gen": "9"},
            ({"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["8"]}]},),
            True,
        ),
        (
            {"gen": "x"},
            ({"matchExpressions": [{"key": "gen", "operator": "Lt", "values": ["8"]}]},),
            False,
        ),
        (
            {},
            ({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-1"]}]},),
            True,
        ),
        (
            {},
            (
                {
                    "matchFields": [
                        {"key": "metadata.name", "operator": "NotIn", "values": ["gpu-1"]}
                    ]
                },
            ),
            False,
        ),
        ({}, ({},), False),  # an empty term matches no node
        # An operator gpuposture does not know: it cannot tell, and says so.
        (
            {"a": "1"},
            ({"matchExpressions": [{"key": "a", "operator": "Near", "values": []}]},),
            None,
        ),
    ],
)
def test_required_node_affinity(labels, terms, expected):
    assert fit(labels, (), {}, (), terms) is expected


def test_why_names_what_excluded_the_node():
    result = daemonset_fit(
        "gpu-1",
        {},
        (CLASS_TAINT,),
        node_selector={},
        tolerations=OPERATOR_TOLERATIONS,
        affinity_terms=(),
    )
    assert result.fits is False
    assert "gpuposture.io/trust-class=sensitive:NoSchedule" in result.why
