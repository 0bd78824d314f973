"""EKS Auto Mode (a managed Karpenter) labels a node's GPUs `eks.amazonaws.com/instance-gpu-name`,
`-count` and `-manufacturer`, the spelling of Karpenter's `karpenter.k8s.aws/instance-gpu-*`:
read alike, the node's GPU model and count are known (before: both null)."""

from __future__ import annotations

from tests.inventory.normalise_helpers import node, only_node

AUTO = "eks.amazonaws.com/"
G5G = {
    AUTO + "compute-type": "auto",
    AUTO + "instance-gpu-name": "t4g",
    AUTO + "instance-gpu-count": "1",
    AUTO + "instance-gpu-manufacturer": "nvidia",
    "karpenter.sh/nodepool": "gpu",
    "node.kubernetes.io/instance-type": "g5g.2xlarge",  # in no instance table
}


def test_auto_mode_labels_give_the_model_and_count():
    result = only_node([node("i-0abc123def4567890", G5G, capacity={"nvidia.com/gpu": "1"})])
    assert (result.gpu_model, result.gpu_count) == ("NVIDIA-T4G", 1)


def test_auto_mode_names_an_nvidia_model_only_for_an_nvidia_manufacturer():
    unsaid = {k: v for k, v in G5G.items() if k != AUTO + "instance-gpu-manufacturer"}
    # No manufacturer: the name is kept as written, never mapped by guess.
    assert only_node([node("n", unsaid, capacity={"nvidia.com/gpu": "1"})]).gpu_model == "t4g"
    amd = {
        **G5G,
        AUTO + "instance-gpu-name": "radeon pro v520",
        AUTO + "instance-gpu-manufacturer": "amd",
    }
    result = only_node([node("n", amd)])
    assert (result.gpu_model, result.gpu_count) == (None, None)


def test_a_garbled_auto_mode_count_is_unreadable_not_a_count():
    labels = {**G5G, AUTO + "instance-gpu-count": "one"}
    result = only_node([node("n", labels, capacity={"nvidia.com/gpu": "1"})])
    # STACK-007 says the label could not be read.
    assert [u.name for u in result.unreadable_configs] == [AUTO + "instance-gpu-count"]
