"""A node GPU Feature Discovery labels under the MIG single strategy counts MIG devices in
`nvidia.com/gpu.count` (GFD's README: 8 GPUs x 7 = 56). Its physical GPUs are that count over
the instances each GPU holds, where the node's mig-parted config or the GPU Operator's
`all-<profile>` config states it; else unknown, and `gpu_count_basis` always says which
(rtholdout5 k01, rtpeerio k98: the node read `gpu_count: null` with no reason, so its findings
spanned 1 GPU instead of 8)."""

from __future__ import annotations

import pytest

import posture.rules  # noqa: F401  (registers the checks)
from inventory.sources.normalise import normalise
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.registry import run_checks
from posture.rules.share.parties import physical_units
from tests.inventory.normalise_helpers import PLATFORM, configmap, ctr, node, only_node, pod
from tests.posture.builders import trust_class

H100 = "NVIDIA-H100-80GB-HBM3"


def mig_node(
    count: int = 56,
    product: str = H100 + "-MIG-1g.10gb",
    config: str | None = "all-1g.10gb",
    **extra: str,
) -> dict:
    labels = {
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": str(count),
        **({"nvidia.com/mig.config": config} if config else {}),
        **extra,
    }
    return node("mig-1", labels, capacity={"nvidia.com/gpu": count})


def mig_parted(configs: str, name: str = "default-mig-parted-config") -> dict:
    return configmap("gpu-operator", name, {"config.yaml": f"version: v1\nmig-configs:\n{configs}"})


FOUR_SMALL = """\
  four-small:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 4
"""
BY_INDEX = """\
  halves:
    - devices: [0, 1, 2, 3]
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
    - devices: [4, 5, 6, 7]
      mig-enabled: true
      mig-devices:
        "1g.10gb": 4
"""
# As mig-parted's config-default.yaml writes it: per PCI id, the H100 SXM (0x2330) among them.
PER_MODEL = """\
  all-1g.10gb:
    - device-filter: ["0x233010DE", "0x233110DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
    - device-filter: ["0x20B010DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 4
"""


def test_gfd_count_of_mig_devices_gives_the_physical_gpus_of_the_operator_config():
    # rtholdout5 k01: 8 H100s all-1g.10gb, no mig-parted ConfigMap in the snapshot.
    result = only_node([mig_node()])
    assert result.gpu_model == H100
    assert result.gpu_count == 8
    assert result.gpu_count_basis.startswith(
        "label nvidia.com/gpu.count=56 counts 1g.10gb MIG devices, not GPUs"
    )
    assert "most 1g.10gb instances one H100-80GB GPU holds, 7: 56 / 7 = 8" in result.gpu_count_basis
    assert result.sharing_strategy == "mig" and result.mig_strategy == "single"


def test_the_same_profile_fits_fewer_times_on_another_model():
    # 1g.10gb is A100-40GB's double-memory 1g profile: 4 per GPU, so 28 devices are 7 GPUs.
    result = only_node([mig_node(28, "NVIDIA-A100-SXM4-40GB-MIG-1g.10gb")])
    assert result.gpu_count == 7
    assert result.gpu_count_basis.endswith("one A100-40GB GPU holds, 4: 28 / 4 = 7")


def test_the_config_the_snapshot_holds_decides_over_the_table():
    result = only_node([mig_parted(FOUR_SMALL), mig_node(config="four-small")])
    assert result.gpu_count == 14
    assert (
        "mig-parted config four-small (ConfigMap gpu-operator/default-mig-parted-config key "
        "config.yaml) gives each H100-80GB GPU 4 x 1g.10gb: 56 / 4 = 14"
    ) in result.gpu_count_basis


def test_a_config_with_entries_per_model_uses_the_nodes_model():
    result = only_node([mig_parted(PER_MODEL), mig_node()])
    assert result.gpu_count == 8
    assert "gives each H100-80GB GPU 7 x 1g.10gb: 56 / 7 = 8" in result.gpu_count_basis


def test_an_a30_counts_by_its_own_profiles():
    result = only_node([mig_node(16, "NVIDIA-A30-MIG-1g.6gb", "all-1g.6gb")])
    assert result.gpu_count == 4
    assert "one A30-24GB GPU holds, 4: 16 / 4 = 4" in result.gpu_count_basis


UNKNOWN = "the profile's instances per GPU are not known: "


@pytest.mark.parametrize(
    ("objects", "why"),
    [
        # A config of another name that no ConfigMap holds: its count per GPU is not read.
        (
            [mig_node(config="custom")],
            "mig-parted config custom is in no mig-parted ConfigMap the snapshot holds",
        ),
        ([mig_node(config=None)], "no nvidia.com/mig.config label names the node's layout"),
        (
            [mig_parted(BY_INDEX), mig_node(config="halves")],
            "gives H100-80GB GPUs layouts by GPU index",
        ),
        (
            [mig_node(**{"nvidia.com/mig.config.state": "failed"})],
            "nvidia.com/mig.config.state=failed, so the layout all-1g.10gb may not be in force",
        ),
        ([mig_node(50)], "one H100-80GB GPU holds, 7, which 50 does not divide"),
        (
            [mig_node(product="NVIDIA-L40S-MIG-1g.10gb")],
            "'NVIDIA-L40S' is not a MIG model whose profiles are known here",
        ),
    ],
    ids=["not-held", "no-config-label", "by-index", "state-failed", "not-divisible", "model"],
)
def test_a_count_no_input_states_stays_unknown_and_says_why(objects, why):
    result = only_node(objects)
    assert result.gpu_count is None
    assert result.gpu_count_basis.startswith("label nvidia.com/gpu.count=")
    assert UNKNOWN in result.gpu_count_basis and why in result.gpu_count_basis


def test_time_sliced_mig_devices_stay_the_units_of_nvidia_com_gpu():
    # GFD appends -SHARED; 16 3g.40gb devices of 8 GPUs, each time-sliced twice (32 advertised).
    labels = {
        "nvidia.com/gpu.replicas": "2",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
    }
    raw = mig_node(16, H100 + "-MIG-3g.40gb-SHARED", "all-3g.40gb", **labels)
    raw["status"]["capacity"] = {"nvidia.com/gpu": 32}
    result = only_node([raw])
    assert (result.gpu_count, result.sharing_strategy) == (8, "time_slicing")
    # The co-tenancy checks count the devices the replicas share: 16 MIG devices, not 8 GPUs.
    assert physical_units(result, "nvidia.com/gpu") == 16


def test_a_finding_on_the_node_spans_its_physical_gpus():
    # K8S-002 on an untainted MIG pool a tenant uses: it spans the node's 8 GPUs, not 1.
    holder = ctr("infer", resources={"limits": {"nvidia.com/gpu": "1"}})
    objects = [mig_node(), pod("acme", "infer-0", holder, node_name="mig-1")]
    tenants = (TenantInfo("acme", "Acme", trust_class("external"), ("acme",), ()),)
    inputs = PostureInputs("lab", normalise(objects, **PLATFORM), tenants)
    (draft,) = run_checks(inputs, only=["K8S-002"])
    assert draft.exposure == 8
    assert draft.evidence["gpu_count"] == 8
    assert "56 / 7 = 8" in draft.evidence["gpu_count_basis"]
