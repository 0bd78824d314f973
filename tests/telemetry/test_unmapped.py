"""An exporter that names no pod (its Kubernetes mapping off): a busy GPU there is judged by
counting busy GPUs against the GPUs the node's pods hold, never taken as a hijack alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from telemetry.samples import GpuSample
from telemetry.unmapped import unmapped_nodes

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


GPU_PODS = {("team-a", "trainer-0")}


def sample(
    node: str, uuid: str, busy: float, minute: int = 0, pod: str = "", ns: str = ""
) -> GpuSample:
    return GpuSample(
        time=T0 + timedelta(minutes=minute),
        hostname=node,
        gpu="0",
        uuid=uuid,
        util=busy,
        namespace=ns,
        pod=pod,
    )


def test_a_node_whose_samples_name_no_pod_is_unmapped_with_its_counts():
    samples = [sample("n1", "GPU-a", 90), sample("n1", "GPU-b", 5), sample("n1", "GPU-a", 95, 1)]
    (found,) = unmapped_nodes(samples, {"n1": 2}, GPU_PODS, threshold=20).values()
    assert (found.node, found.busy_devices, found.held_by_pods) == ("n1", 1, 2)
    assert found.explained and "may be a held one" in found.note()


def test_more_busy_gpus_than_held_ones_is_not_explained():
    samples = [sample("n1", f"GPU-{i}", 80) for i in range(3)]
    (found,) = unmapped_nodes(samples, {"n1": 1}, GPU_PODS, threshold=20).values()
    assert not found.explained and "at least 2 run(s) outside the scheduler" in found.note()


def test_one_labelled_sample_shows_the_mapping_is_on():
    samples = [sample("n1", "GPU-a", 90, pod="trainer-0", ns="team-a"), sample("n1", "GPU-b", 90)]
    assert unmapped_nodes(samples, {"n1": 1}, GPU_PODS, threshold=20) == {}


def test_the_scrapes_own_pod_label_is_not_a_mapping():
    # Prometheus stamped its target, the exporter's pod, on samples the exporter left bare.
    exporter = ("gpu-operator", "nvidia-dcgm-exporter-7hx2q")
    samples = [sample("n1", "GPU-a", 90, pod=exporter[1], ns=exporter[0])]
    (found,) = unmapped_nodes(samples, {"n1": 1}, GPU_PODS, threshold=20).values()
    assert found.explained


def test_a_node_no_pod_holds_a_gpu_on_is_left_to_the_plain_rule():
    # Nothing scheduled holds a GPU there: an unlabelled busy GPU is unexplained as it is.
    assert unmapped_nodes([sample("n1", "GPU-a", 90)], {}, GPU_PODS, threshold=20) == {}
    assert unmapped_nodes([sample("n1", "GPU-a", 90)], {"n1": 0}, GPU_PODS, threshold=20) == {}


def test_busy_means_strictly_over_the_threshold():
    (found,) = unmapped_nodes(
        [sample("n1", "GPU-a", 20)], {"n1": 1}, GPU_PODS, threshold=20
    ).values()
    assert found.busy_devices == 0
