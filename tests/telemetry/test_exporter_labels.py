"""An exporter's own pod name as `Hostname` is read as the node that pod runs on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from telemetry.exporter_labels import (
    PodLabels,
    exporter_labels_strip,
    hosts_placed,
    hosts_resolve,
    node_aliases,
    unique_names,
)
from telemetry.samples import GpuSample

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def at(hostname: str) -> GpuSample:
    return GpuSample(time=T0, hostname=hostname, gpu="0", uuid="GPU-a", util=50)


def test_a_pod_name_becomes_its_node_and_a_node_name_stays():
    pods = {"dcgm-exporter-x1": "gpu-07", "gpu-01": "gpu-09"}
    resolved = hosts_resolve(
        [at("dcgm-exporter-x1"), at("gpu-01"), at("elsewhere")], {"gpu-01"}, pods
    )
    assert [s.hostname for s in resolved] == ["gpu-07", "gpu-01", "elsewhere"]


def test_a_pod_name_two_namespaces_share_names_no_node():
    rows = [("dcgm-exporter-x1", "gpu-07"), ("dcgm-exporter-x1", "gpu-08"), ("other", "gpu-01")]
    assert unique_names(rows) == {"other": "gpu-01"}
    assert unique_names([("a", "n1"), ("a", "n1")]) == {"a": "n1"}


def test_the_exporters_own_pod_is_no_workload():
    bare = GpuSample(time=T0, hostname="n1", gpu="0", uuid="GPU-a", namespace="ops", pod="dcgm-1")
    held = GpuSample(time=T0, hostname="n1", gpu="1", uuid="GPU-b", namespace="t", pod="job-0")
    stripped, kept = exporter_labels_strip([bare, held], {("ops", "dcgm-1")})
    assert (stripped.namespace, stripped.pod) == ("", "") and kept == held


def test_a_hosts_own_name_finds_its_node():
    nodes = [
        ("ip-10-0-1-23.ec2.internal", {"kubernetes.io/hostname": "ip-10-0-1-23.ec2.internal"}),
        ("gpu-a", {"kubernetes.io/hostname": "metal-rack4-07"}),
        ("gpu-b", {}),
    ]
    aliases = unique_names(node_aliases(nodes))
    assert aliases == {"ip-10-0-1-23": "ip-10-0-1-23.ec2.internal", "metal-rack4-07": "gpu-a"}
    names = {n for n, _ in nodes}
    resolved = hosts_resolve(
        [at("ip-10-0-1-23"), at("metal-rack4-07"), at("gpu-b")], names, aliases
    )
    assert [s.hostname for s in resolved] == ["ip-10-0-1-23.ec2.internal", "gpu-a", "gpu-b"]


LABELS = PodLabels(
    holding={("t", "run-0")},
    finished={("t", "done-0"): T0},
    known={("t", "run-0"), ("t", "done-0"), ("t", "web-0"), ("ops", "dcgm-exp-aaaaa")},
    exporter_sets={("ops", "dcgm-exp")},
    placed={("t", "run-0"): "n1", ("t", "done-0"): "n1", ("t", "far-0"): "n2"},
    nodes={"n1", "n2"},
)


@pytest.mark.parametrize(
    ("namespace", "pod", "minutes", "held"),
    [
        ("t", "run-0", 30, True),  # an active GPU pod
        ("t", "done-0", 0, True),  # finished, but not yet when a sync saw it so
        ("t", "done-0", 1, False),  # a label past the sync that saw it finished
        ("t", "web-0", 0, False),  # a known pod holding no GPU
        ("t", "new-0", 30, True),  # newer than the read (or deleted since): the kubelet's
        ("ops", "dcgm-exp-bbbbb", 0, False),  # an exporter pod the read did not see
        ("ops", "dcgm-exp-aaaaa", 0, False),
        ("", "", 0, False),
    ],
)
def test_a_pod_label_holds_its_gpu_as_of_the_samples_time(namespace, pod, minutes, held):
    assert LABELS.held(namespace, pod, T0 + timedelta(minutes=minutes), "n1") is held


def test_a_pod_label_holds_nothing_on_a_node_the_inventory_does_not_bind_it_to():
    far = PodLabels(**{**LABELS.__dict__, "holding": {("t", "run-0"), ("t", "far-0")}})
    assert far.held("t", "far-0", T0, "n2") is True
    assert far.held("t", "far-0", T0, "n1") is False  # stale, mislabelled or forged
    assert far.elsewhere("t", "far-0", "n1") == "n2"
    # A host the inventory does not list may be that node under another name: not judged.
    assert far.held("t", "far-0", T0, "host-x") is True


def test_a_pod_label_the_inventory_does_not_list_is_unknown_not_an_exporters():
    assert LABELS.unknown("t", "new-0", "n1") is True
    assert LABELS.unknown("t", "run-0", "n1") is False
    assert LABELS.unknown("ops", "dcgm-exp-bbbbb", "n1") is False
    assert LABELS.unknown("t", "new-0", "host-x") is False  # a host the inventory lacks


def test_a_host_is_placed_where_its_pods_and_gpus_agree():
    def sample(host: str, uuid: str, pod: str = "") -> GpuSample:
        return GpuSample(time=T0, hostname=host, gpu="0", uuid=uuid, namespace="t", pod=pod)

    samples = [
        sample("exp-new", "GPU-a", "job-0"),  # the pod is on n1
        sample("exp-new", "GPU-b"),  # no pod, and a GPU never placed
        sample("exp-two", "GPU-c", "job-0"),  # n1 by its pod, n2 by its GPU
        sample("exp-none", "GPU-d"),
        sample("n1", "GPU-e"),  # a node already
    ]
    pods = {("t", "job-0"): "n1"}
    assert hosts_placed(samples, {"n1", "n2"}, pods, {"GPU-c": "n2"}) == {"exp-new": "n1"}
