"""Attribution of DCGM-Exporter samples to tenants, with confidence (ATTR-002)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from telemetry.attribution import (
    ATTRIBUTIONS,
    CONFIDENCES,
    Attributed,
    attribute,
    worst_confidence,
)
from telemetry.samples import GpuSample

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
OWNERS = {"team-a": "alpha", "team-a-batch": "alpha", "team-b": "beta"}
PLATFORM = frozenset({"kube-system", "gpu-operator"})


def sample(namespace: str = "", pod: str = "", host: str = "node-1") -> GpuSample:
    return GpuSample(T0, host, "0", "GPU-1", util=50.0, namespace=namespace, pod=pod)


def one(s: GpuSample, shared: tuple[str, ...] = ()) -> Attributed:
    [a] = attribute([s], owners=OWNERS, shared_nodes=shared, platform=PLATFORM)
    return a


@pytest.mark.parametrize(
    ("namespace", "pod", "shared", "expected"),
    [
        # owned namespace, pod labels, exclusive node: the figure is the tenant's
        ("team-a", "train-0", (), ("alpha", "tenant", "exact")),
        # a tenant may own several namespaces
        ("team-a-batch", "job-1", (), ("alpha", "tenant", "exact")),
        ("team-b", "infer-0", (), ("beta", "tenant", "exact")),
        # a namespace no tenant owns is the platform's
        ("gpu-operator", "dcgm-diag", (), (None, "platform", "exact")),
        # namespace without pod label: owner known, workload not
        ("team-a", "", (), ("alpha", "tenant", "none")),
        ("kube-system", "", (), (None, "platform", "none")),
        # time-sliced node: labels present but the value is GPU-wide
        ("team-a", "train-0", ("node-1",), ("alpha", "tenant", "shared")),
        ("gpu-operator", "x", ("node-1",), (None, "platform", "shared")),
        # time-sliced node that dropped the pod labels: none beats shared
        ("team-a", "", ("node-1",), ("alpha", "tenant", "none")),
        # another node is shared, this one is not
        ("team-a", "train-0", ("node-2",), ("alpha", "tenant", "exact")),
        # a namespace nobody claims and that is not the platform's: the unclassified party's
        # (DESIGN §3), charged as a tenant, never as the platform
        ("ml-scratch", "train-0", (), ("unclassified", "tenant", "exact")),
        ("ml-scratch", "", (), ("unclassified", "tenant", "none")),
        ("ml-scratch", "x", ("node-1",), ("unclassified", "tenant", "shared")),
        # no namespace: unattributed, with no confidence even if a pod label survived
        ("", "", (), (None, "unattributed", "none")),
        ("", "stray", (), (None, "unattributed", "none")),
        ("", "stray", ("node-1",), (None, "unattributed", "none")),
    ],
)
def test_attribute(namespace, pod, shared, expected):
    a = one(sample(namespace, pod), shared)
    assert (a.tenant, a.attribution, a.confidence) == expected
    assert a.attribution in ATTRIBUTIONS
    assert a.confidence in CONFIDENCES


def test_attribute_keeps_order_and_sample():
    samples = [sample("team-b", "p"), sample(), sample("team-a", "q")]
    result = attribute(iter(samples), owners=OWNERS, shared_nodes=["node-9"], platform=PLATFORM)
    assert [a.sample for a in result] == samples
    assert [a.tenant for a in result] == ["beta", None, "alpha"]


def test_attribute_empty():
    assert attribute([], owners=OWNERS, shared_nodes=(), platform=PLATFORM) == []


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["exact"], "exact"),
        (["exact", "shared"], "shared"),
        (["shared", "exact", "none"], "none"),
        (("none", "none"), "none"),
        ({"exact", "shared"}, "shared"),
        ([], "none"),
    ],
)
def test_worst_confidence(values, expected):
    assert worst_confidence(values) == expected


def test_worst_confidence_rejects_unknown():
    with pytest.raises(ValueError):
        worst_confidence(["exact", "high"])


def test_a_claim_wins_over_a_platform_list():
    # A namespace a tenant owns is the tenant's even if a platform list names it.
    [a] = attribute([sample("team-a", "p")], owners=OWNERS, shared_nodes=(), platform={"team-a"})
    assert (a.tenant, a.attribution) == ("alpha", "tenant")


@pytest.mark.parametrize(
    ("namespace", "pod", "shared", "expected"),
    [
        # the last sync has the pod on another node: the label names no owner
        ("team-b", "tok-0", (), (None, "unattributed", "none")),
        ("team-b", "tok-0", ("node-1",), (None, "unattributed", "none")),
        ("kube-system", "ks-0", (), (None, "unattributed", "none")),
        ("ml-scratch", "nb-0", (), (None, "unattributed", "none")),
    ],
)
def test_a_label_the_sync_binds_elsewhere_is_nobodys(namespace, pod, shared, expected):
    s = sample(namespace, pod)
    [a] = attribute(
        [s],
        owners=OWNERS,
        shared_nodes=shared,
        platform=PLATFORM,
        elsewhere={("node-1", namespace, pod)},
    )
    assert (a.tenant, a.attribution, a.confidence) == expected
    assert a.sample == s  # the label stays on the sample: the findings read it


@pytest.mark.parametrize(
    ("namespace", "pod", "shared", "expected"),
    [
        # a pod the sync does not list: booked as the label says, never exact nor shared
        ("team-b", "sweep-0", (), ("beta", "tenant", "none")),
        ("team-b", "sweep-0", ("node-1",), ("beta", "tenant", "none")),
        ("ml-scratch", "nb-0", (), ("unclassified", "tenant", "none")),
        ("gpu-operator", "diag-0", (), (None, "platform", "none")),
    ],
)
def test_a_label_the_sync_does_not_list_is_booked_unverified(namespace, pod, shared, expected):
    [a] = attribute(
        [sample(namespace, pod)],
        owners=OWNERS,
        shared_nodes=shared,
        platform=PLATFORM,
        unlisted={("node-1", namespace, pod)},
    )
    assert (a.tenant, a.attribution, a.confidence) == expected


def test_label_checks_are_per_node():
    # The same pod named from its own node (node-2) is its tenant's, exactly.
    here, there = sample("team-b", "tok-0"), sample("team-b", "tok-0", host="node-2")
    found = attribute(
        [here, there],
        owners=OWNERS,
        shared_nodes=(),
        platform=PLATFORM,
        elsewhere={("node-1", "team-b", "tok-0")},
    )
    assert [(a.tenant, a.confidence) for a in found] == [(None, "none"), ("beta", "exact")]
