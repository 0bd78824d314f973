"""normalise(): GPU nodes of managed clouds that run no GPU Feature Discovery (GKE, Karpenter on
EKS, older EKS AMIs) read their model, physical count and sharing from the cloud's own labels;
GFD's labels, where present, still come first."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.hostfacts import merge_host_facts
from inventory.mig_profiles import model_key
from inventory.node_components import deployed_unknown, node_components
from inventory.patching.versions import model_matches
from inventory.snapshot import LABEL_KIND
from inventory.sources.normalise import normalise
from partitioner.config import partition_layout
from posture.rules.leak.leftoverlocals import leftoverlocals_match
from tests.inventory.normalise_helpers import PLATFORM, configmap, node, only_node

GKE = "cloud.google.com/"
L4_POOL = {GKE + "gke-accelerator": "nvidia-l4", GKE + "gke-nodepool": "l4-shared"}


def gke_node(capacity: int, **labels: str) -> dict[str, Any]:
    return node("gke-l4-1", {**L4_POOL, **labels}, capacity={"nvidia.com/gpu": str(capacity)})


def shared(strategy: str, clients: str) -> dict[str, str]:
    return {
        GKE + "gke-gpu-sharing-strategy": strategy,
        GKE + "gke-max-shared-clients-per-gpu": clients,
    }


def test_gke_time_sharing_reads_time_slicing_with_its_clients_per_gpu():
    channel = {GKE + "gke-gpu-driver-version": "latest"}  # a channel, never a driver version
    result = only_node([gke_node(4, **shared("time-sharing", "4"), **channel)])
    assert result.sharing_strategy == "time_slicing"
    assert result.time_slicing_replicas == 4
    assert result.gpu_count == 1  # 4 shared GPUs / 4 clients each: one physical GPU
    assert result.gpu_model == "NVIDIA-L4"
    assert result.unreadable_configs == ()
    assert (result.driver_version, result.driver_version_source) == (None, None)


def test_gke_mps_reads_mps():
    result = only_node([gke_node(6, **shared("mps", "3"))])
    assert (result.sharing_strategy, result.time_slicing_replicas, result.gpu_count) == (
        "mps",
        3,
        2,
    )


def test_a_sharing_value_gke_never_writes_is_unknown_and_said_to_be_unreadable():
    result = only_node([gke_node(4, **shared("timeshare", "4"))])
    assert result.sharing_strategy == "unknown"  # never "none"
    assert result.gpu_count is None  # the capacity of a node shared somehow is no count
    (problem,) = result.unreadable_configs
    assert (problem.kind, problem.name) == (LABEL_KIND, GKE + "gke-gpu-sharing-strategy")
    assert "'timeshare'" in problem.error


def test_a_garbled_clients_label_is_unreadable_and_gives_no_count():
    result = only_node([gke_node(4, **shared("time-sharing", "four"))])
    assert result.sharing_strategy == "time_slicing"
    assert (result.time_slicing_replicas, result.gpu_count) == (None, None)
    assert [p.name for p in result.unreadable_configs] == [GKE + "gke-max-shared-clients-per-gpu"]


def test_a_shared_capacity_that_does_not_divide_gives_no_count():
    result = only_node([gke_node(5, **shared("time-sharing", "2"))])
    assert (result.sharing_strategy, result.gpu_count) == ("time_slicing", None)


def test_autopilot_count_label_gives_the_physical_count():
    labels = {**shared("time-sharing", "2"), GKE + "gke-accelerator-count": "2"}
    assert only_node([gke_node(4, **labels)]).gpu_count == 2


def test_gfd_labels_come_first():
    # GFD's count and product win; GKE's label says what GFD leaves unsaid (the sharing).
    labels = {
        **shared("time-sharing", "4"),
        "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.product": "NVIDIA-L4-Custom",
        GKE + "gke-accelerator-count": "3",
    }
    result = only_node([gke_node(4, **labels)])
    assert (result.gpu_count, result.gpu_model) == (1, "NVIDIA-L4-Custom")
    assert result.sharing_strategy == "time_slicing"


def test_a_partition_size_makes_the_node_mig():
    labels = {
        GKE + "gke-accelerator": "nvidia-tesla-a100",
        GKE + "gke-gpu-partition-size": "3g.20gb",
    }
    result = only_node([node("gke-a100-1", labels, capacity={"nvidia.com/gpu": "2"})])
    assert result.sharing_strategy == "mig"
    assert result.gpu_model == "NVIDIA-A100-40GB"
    assert result.mig_config == "3g.20gb"  # GKE's layout, where the node records MIG layout
    assert result.gpu_count is None  # two MIG instances: the capacity counts partitions


def test_time_sharing_of_mig_partitions_counts_no_gpus():
    labels = {
        **shared("time-sharing", "2"),
        GKE + "gke-accelerator": "nvidia-tesla-a100",
        GKE + "gke-gpu-partition-size": "1g.5gb",
    }
    result = only_node([gke_node(14, **labels)])  # 7 partitions x 2 clients, on one A100
    assert (result.sharing_strategy, result.time_slicing_replicas) == ("time_slicing", 2)
    assert result.gpu_count is None  # 14 / 2 counts partitions, not GPUs
    assert result.mig_config == "1g.5gb"


def test_a_cluster_device_plugin_configmap_does_not_decide_a_gke_node():
    data = {
        "default": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
        "    - name: nvidia.com/gpu\n      replicas: 8\n"
    }
    objects = [
        gke_node(4, **shared("mps", "4")),
        configmap("gpu-operator", "device-plugin-config", data),
    ]
    (result,) = normalise(objects, **PLATFORM).nodes
    assert (result.sharing_strategy, result.time_slicing_replicas) == ("mps", 4)
    assert result.resource_sharing == ()


@pytest.mark.parametrize(
    ("accelerator", "model", "family", "mig_key"),
    [
        ("nvidia-tesla-t4", "NVIDIA-T4", "T4", None),
        ("nvidia-l4", "NVIDIA-L4", "L4", None),
        ("nvidia-tesla-a100", "NVIDIA-A100-40GB", "A100", "A100-40GB"),
        ("nvidia-a100-80gb", "NVIDIA-A100-80GB", "A100", "A100-80GB"),
        ("nvidia-h100-80gb", "NVIDIA-H100-80GB", "H100", "H100-80GB"),
        ("nvidia-h100-mega-80gb", "NVIDIA-H100-80GB", "H100", "H100-80GB"),
        ("nvidia-h200-141gb", "NVIDIA-H200-141GB", "H200", "H200-141GB"),
        ("nvidia-b200", "NVIDIA-B200", "B200", "B200"),
        ("nvidia-gb200", "NVIDIA-GB200", "GB200", "GB200"),
        ("nvidia-tesla-v100", "NVIDIA-V100", "V100", None),
        ("nvidia-rtx-pro-6000", "NVIDIA-RTX-PRO-6000", "6000", None),
    ],
)
def test_gke_accelerators_read_as_the_models_the_product_matches(
    accelerator, model, family, mig_key
):
    labels = {GKE + "gke-accelerator": accelerator}
    result = only_node([node("n", labels, capacity={"nvidia.com/gpu": "1"})])
    assert result.gpu_model == model
    assert model_matches(family, result.gpu_model)  # a firmware bulletin's model line
    assert model_key(result.gpu_model) == mig_key  # the MIG profile tables
    assert leftoverlocals_match(result) is None  # NVIDIA: not LEAK-002's


def test_an_unknown_accelerator_is_kept_as_written_and_matched_by_nothing():
    labels = {GKE + "gke-accelerator": "nvidia-tesla-x9"}
    result = only_node([node("n", labels, capacity={"nvidia.com/gpu": "1"})])
    assert result.gpu_model == "nvidia-tesla-x9"
    assert model_key(result.gpu_model) is None


@pytest.mark.parametrize(
    ("labels", "model", "count"),
    [
        (
            {
                "karpenter.k8s.aws/instance-gpu-name": "a100",
                "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
                "karpenter.k8s.aws/instance-gpu-count": "8",
            },
            "NVIDIA-A100",  # EC2 has both A100 sizes: no memory, so no MIG table guessed
            8,
        ),
        (
            {
                "karpenter.k8s.aws/instance-gpu-name": "l4",
                "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
            },
            "NVIDIA-L4",
            None,
        ),
        ({"k8s.amazonaws.com/accelerator": "nvidia-tesla-v100"}, "NVIDIA-V100", None),
        ({"k8s.amazonaws.com/accelerator": "vendor-board-7"}, "vendor-board-7", None),
    ],
)
def test_eks_and_aks_labels(labels, model, count):
    result = only_node([node("n", labels, capacity={"nvidia.com/gpu": "8"})])
    assert (result.gpu_model, result.gpu_count) == (model, count)
    if model == "NVIDIA-A100":
        assert model_key(model) is None


GKE_PLUGIN = "gke.gcr.io/nvidia-gpu-device-plugin"


def plugin_objects(tag: str) -> list[dict[str, Any]]:
    ds = {
        "kind": "DaemonSet",
        "metadata": {"name": "nvidia-gpu-device-plugin-small-cos", "namespace": "kube-system"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "nvidia-gpu-device-plugin", "image": GKE_PLUGIN + tag}],
                    "tolerations": [{"operator": "Exists"}],
                }
            }
        },
    }
    plugin_pod = {
        "kind": "Pod",
        "metadata": {
            "name": "nvidia-gpu-device-plugin-small-cos-x1",
            "namespace": "kube-system",
            "ownerReferences": [
                {"kind": "DaemonSet", "name": "nvidia-gpu-device-plugin-small-cos"}
            ],
        },
        "spec": {
            "nodeName": "gke-l4-1",
            "containers": [{"name": "nvidia-gpu-device-plugin", "image": GKE_PLUGIN + tag}],
        },
        "status": {"phase": "Running"},
    }
    return [gke_node(4, **shared("time-sharing", "4")), ds, plugin_pod]


def test_gkes_device_plugin_is_the_device_plugin_and_a_gke_build_is_no_version():
    (result,) = normalise(plugin_objects(":v0.0.35-gke.1"), **PLATFORM).nodes
    plugin = node_components(result)["device_plugin"]
    assert plugin["state"] == "unknown"  # deployed, not "not installed"
    assert result.device_plugin_version is None
    assert "GKE build" in (plugin["source"] or "")
    assert "v0.0.35-gke.1" in (plugin["source"] or "")
    assert "device_plugin" in deployed_unknown(result)  # STACK-004 says so


def test_gkes_device_plugin_with_a_plain_version_tag_has_that_version():
    (result,) = normalise(plugin_objects(":v0.0.36"), **PLATFORM).nodes
    assert result.device_plugin_version == "0.0.36"
    assert node_components(result)["device_plugin"]["state"] == "installed"


@pytest.mark.parametrize(
    ("model", "size", "instances", "error"),
    [
        ("NVIDIA-A100-40GB", "3g.20gb", 2, None),
        ("NVIDIA-A100-40GB", "1g.5gb", 7, None),
        ("NVIDIA-H100-80GB", "1g.20gb", 4, None),
        (
            "NVIDIA-A100-40GB",
            "3g.40gb",
            0,
            "GKE partition size '3g.40gb' is not a MIG profile of A100-40GB",
        ),
        ("NVIDIA-L4", "1g.5gb", 0, "'NVIDIA-L4' is not a MIG model the partitioner knows"),
    ],
)
def test_a_gke_partition_size_is_a_layout_only_where_it_fits_the_model(
    model, size, instances, error
):
    layout = partition_layout(gpu_model=model, size=size)
    assert len(layout.instances) == instances
    assert {i.profile for i in layout.instances} <= {size}
    assert (error in (layout.error or "")) if error else layout.error is None


@pytest.mark.parametrize(
    ("labels", "capacity", "model", "count", "mig_key"),
    [
        # AKS labels only `accelerator: nvidia`: the VM size fixes one A100 80GB (PCIe).
        (
            {
                "kubernetes.azure.com/accelerator": "nvidia",
                "node.kubernetes.io/instance-type": "Standard_NC24ads_A100_v4",
            },
            {"nvidia.com/mig-1g.10gb": "7"},
            "NVIDIA-A100-80GB",
            1,
            "A100-80GB",
        ),
        # An EKS managed node group of g5 with its AMI's accelerator label: GFD's and
        # Karpenter's name for the A10G, not the raw `nvidia-a10g`.
        (
            {
                "k8s.amazonaws.com/accelerator": "nvidia-a10g",
                "node.kubernetes.io/instance-type": "g5.xlarge",
            },
            {"nvidia.com/gpu": "4"},
            "NVIDIA-A10G",
            1,
            None,
        ),
        (
            {"node.kubernetes.io/instance-type": "p4d.24xlarge"},
            {},
            "NVIDIA-A100-40GB",
            8,
            "A100-40GB",
        ),
        (
            {"node.kubernetes.io/instance-type": "a3-highgpu-8g"},
            {},
            "NVIDIA-H100-80GB",
            8,
            "H100-80GB",
        ),
        # A type the table does not know: no model, never a guess.
        (
            {"node.kubernetes.io/instance-type": "n1-standard-8"},
            {"nvidia.com/gpu": "1"},
            None,
            None,
            None,
        ),
    ],
)
def test_the_instance_type_names_the_model_no_label_names(labels, capacity, model, count, mig_key):
    result = only_node([node("n", labels, capacity=capacity)])
    assert (result.gpu_model, result.gpu_count) == (model, count)
    assert (model_key(model) if model else None) == mig_key  # the MIG profile tables


def test_a_gfd_product_outranks_the_instance_type():
    labels = {"node.kubernetes.io/instance-type": "p4d.24xlarge"}
    labels["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-40GB"
    assert only_node([node("n", labels, capacity={"nvidia.com/gpu": "8"})]).gpu_model == (
        "NVIDIA-A100-SXM4-40GB"
    )


@pytest.mark.parametrize(
    ("labels", "model"),
    [
        # EKS's AMI label names the A100 family; p4d is always the 40 GB part, p4de the 80 GB.
        ({"k8s.amazonaws.com/accelerator": "nvidia-tesla-a100"}, "NVIDIA-A100-40GB"),
        (
            {
                "karpenter.k8s.aws/instance-gpu-name": "a100",
                "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
            },
            "NVIDIA-A100-40GB",
        ),
    ],
)
def test_the_instance_type_makes_a_cloud_label_of_the_same_family_specific(labels, model):
    p4d = only_node([node("n", {**labels, **P4D}, capacity={"nvidia.com/gpu": "8"})])
    assert p4d.gpu_model == model
    assert model_key(p4d.gpu_model) == "A100-40GB"  # the MIG profile tables find it
    p4de = {**labels, "node.kubernetes.io/instance-type": "p4de.24xlarge"}
    assert only_node([node("n", p4de)]).gpu_model == "NVIDIA-A100-80GB"


def test_a_cloud_label_of_another_family_is_kept_over_the_instance_type():
    """The label says what runs: an instance type naming another GPU never overrides it."""
    labels = {"k8s.amazonaws.com/accelerator": "nvidia-tesla-v100", **P4D}
    assert only_node([node("n", labels)]).gpu_model == "NVIDIA-V100"
    # L4 is no family of the L40S's: "NVIDIA-L4" is not made "NVIDIA-L40S".
    g6e = {
        "karpenter.k8s.aws/instance-gpu-name": "l4",
        "node.kubernetes.io/instance-type": "g6e.xlarge",
    }
    g6e["karpenter.k8s.aws/instance-gpu-manufacturer"] = "nvidia"
    assert only_node([node("n", g6e)]).gpu_model == "NVIDIA-L4"


P4D = {"node.kubernetes.io/instance-type": "p4d.24xlarge"}


def test_nvidia_smi_names_the_gpu_better_than_the_instance_type_but_not_than_a_label():
    aks = {"node.kubernetes.io/instance-type": "Standard_NC24ads_A100_v4"}
    synced = only_node([node("n", aks, capacity={"nvidia.com/gpu": "1"})])
    assert synced.gpu_model == "NVIDIA-A100-80GB"  # the VM size's
    smi = {"gpu_model": "NVIDIA A100 80GB PCIe"}
    assert merge_host_facts(synced, smi).gpu_model == "NVIDIA A100 80GB PCIe"  # the host's own
    gfd = {**aks, "nvidia.com/gpu.product": "NVIDIA-A100-80GB-PCIe"}
    labelled = only_node([node("n", gfd, capacity={"nvidia.com/gpu": "1"})])
    assert merge_host_facts(labelled, smi).gpu_model == "NVIDIA-A100-80GB-PCIe"  # live API wins
