"""A layout as a mig-parted snippet (and back through our mig-parted parser), and a node's
layout from its mig.config label and the cluster's mig-parted ConfigMaps; no database."""

from __future__ import annotations

from collections import Counter

import pytest
import yaml

from inventory.mig_profiles import MODELS
from inventory.sources.mig_parted import parse_mig_parted_yaml, resolve
from partitioner.compute import ComputeRequest
from partitioner.config import (
    ConfigSource,
    default_config,
    export_name,
    mig_parted_yaml,
    node_layout,
    requests_of,
)
from partitioner.layout import InstanceRequest, validate_layout

R, C = InstanceRequest, ComputeRequest

LAYOUTS = [
    ("H100-80GB", [R("3g.40gb", tenant="alpha"), R("2g.20gb"), R("1g.10gb"), R("1g.10gb")]),
    ("A100-40GB", [R("1g.5gb")] * 7),
    ("H200-141GB", [R("7g.141gb")]),
    ("B200", [R("4g.90gb"), R("3g.90gb", compute_instances=(C("1c"), C("2c")))]),
    ("H100-94GB", [R("3g.47gb", compute_instances=(C("2c"),)), R("1g.12gb+me")]),
]


@pytest.mark.parametrize(("model", "wanted"), LAYOUTS)
def test_snippet_round_trips_through_the_mig_parted_parser(model: str, wanted: list) -> None:
    result = validate_layout(model, wanted)
    assert result.valid, result.errors
    text = mig_parted_yaml("team-a", result.placements)
    assert yaml.safe_load(text)["version"] == "v1"
    parsed = parse_mig_parted_yaml(text)
    entry = resolve(parsed, "team-a", "0x233010DE", 0)
    assert entry is not None and entry.mig_enabled and entry.devices == "all"
    placed = Counter(p.profile for p in result.placements)
    # a GI holding one smaller CI is written as that CI's profile: count the GIs behind them
    back = Counter()
    for req in requests_of(entry):
        back[req.profile] += 1
    assert back == placed
    assert validate_layout(model, list(requests_of(entry))).valid


def test_snippet_says_what_mig_parted_cannot_carry() -> None:
    wanted = [R("3g.40gb", start=4, tenant="alpha", compute_instances=(C("1c"), C("2c", "beta")))]
    text = mig_parted_yaml("x", validate_layout("H100-80GB", wanted).placements)
    assert "records no start slots and no tenants" in text
    assert "#   3g.40gb at slot 4 for alpha" in text
    assert "1c.3g.40gb (alpha), 2c.3g.40gb (beta)" in text and "nvidia-smi mig -cci" in text
    assert yaml.safe_load(text)["mig-configs"]["x"][0]["mig-devices"] == {"3g.40gb": 1}
    single = [R("3g.40gb", compute_instances=(C("2c"),))]
    text = mig_parted_yaml("x", validate_layout("H100-80GB", single).placements)
    assert yaml.safe_load(text)["mig-configs"]["x"][0]["mig-devices"] == {"2c.3g.40gb": 1}


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("team-a", "team-a"),
        ("all-1g.10gb", "all-1g.10gb"),
        ("", "custom-layout"),
        (None, "custom-layout"),
        ("a b", "custom-layout"),
        ("../x", "custom-layout"),
        ('x"; rm', "custom-layout"),
        ("-x", "custom-layout"),
    ],
)
def test_export_name(name: str | None, safe: str) -> None:
    assert export_name(name) == safe


# --- a node's layout -------------------------------------------------------------------------

CONFIG = """
version: v1
mig-configs:
  tenants-ab:
    - devices: all
      mig-enabled: true
      mig-devices:
        "3g.40gb": 1
        "1c.3g.40gb": 1
  split:
    - device-filter: ["0x233010DE"]
      devices: [0, 1]
      mig-enabled: true
      mig-devices: {"7g.80gb": 1}
    - device-filter: ["0x233010DE"]
      devices: [2, 3]
      mig-enabled: false
    - device-filter: "0x20B010DE"
      devices: all
      mig-enabled: true
      mig-devices: {"1g.5gb": 7}
  twice:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 7}
    - devices: all
      mig-enabled: true
      mig-devices: {"2g.20gb": 3}
"""
OPERATOR_CM = "default-mig-parted-config"


def stored(name: str = OPERATOR_CM, text: str = CONFIG) -> ConfigSource:
    return ConfigSource("gpu-operator", name, {"config.yaml": text, "other": "not: mig"})


def profiles(layout) -> list[str]:
    return [r.profile for r in layout.instances]


def test_layout_from_a_stored_configmap() -> None:
    layout = node_layout(
        gpu_model="NVIDIA-H100-80GB-HBM3", mig_config="tenants-ab", sources=[stored()]
    )
    assert layout.error is None and layout.model == "H100-80GB"
    assert layout.source == "ConfigMap gpu-operator/default-mig-parted-config key config.yaml"
    assert layout.instances == (R("3g.40gb"), R("3g.40gb", compute_instances=(C("1c"),)))
    result = validate_layout("H100-80GB", list(layout.instances))
    assert result.valid and [len(p.compute_instances) for p in result.placements] == [0, 1]


def test_entries_per_model_and_per_gpu_are_explained() -> None:
    h100 = node_layout(gpu_model="H100-80GB", mig_config="split", sources=[stored()], gpu_count=4)
    assert profiles(h100) == ["7g.80gb"]
    assert "'split' has entries per GPU model; using the one for H100-80GB (0x233010DE)" in (
        h100.notes
    )
    assert any(
        "different layouts (GPUs 0-1: 1 x 7g.80gb; GPUs 2-3: MIG off)" in n for n in h100.notes
    )
    off = node_layout(gpu_model="H100-80GB", mig_config="split", sources=[stored()], device=2)
    assert off.error is None and not off.mig_enabled and off.instances == ()
    a100 = node_layout(gpu_model="NVIDIA-A100-SXM4-40GB", mig_config="split", sources=[stored()])
    assert profiles(a100) == ["1g.5gb"] * 7
    h200 = node_layout(gpu_model="NVIDIA-H200", mig_config="split", sources=[stored()])
    assert h200.error == (
        "config 'split' has no entry for GPU 0 of a H200-141GB: mig-parted leaves that GPU as it is"
    )


def test_overlapping_entries_the_last_one_stays() -> None:
    layout = node_layout(gpu_model="H100-80GB", mig_config="twice", sources=[stored()])
    assert profiles(layout) == ["2g.20gb"] * 3
    assert any("mig-parted applies them in order, so the last one stays" in n for n in layout.notes)


def test_config_found_outside_the_operator_configmap_is_said() -> None:
    empty = stored(OPERATOR_CM, "version: v1\nmig-configs: {}\n")
    layout = node_layout(
        gpu_model="H100-80GB", mig_config="twice", sources=[empty, stored("team-configs")]
    )
    assert profiles(layout) == ["2g.20gb"] * 3
    assert layout.notes[0] == (
        "MIG Manager reads ConfigMap default-mig-parted-config; config 'twice' was found in "
        "gpu-operator/team-configs instead"
    )


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        (
            {"gpu_model": "NVIDIA-A30", "mig_config": "all-balanced"},
            "the node's GPU model 'NVIDIA-A30' is not a MIG model the partitioner knows",
        ),
        (
            {"gpu_model": "", "mig_config": "all-balanced"},
            "the node's GPU model unknown (no nvidia.com/gpu.product label) is not a MIG model",
        ),
        (
            {"gpu_model": "NVIDIA-H100-80GB-HBM3", "mig_config": ""},
            "the node has no nvidia.com/mig.config label: MIG Manager applies no config to it",
        ),
        (
            {"gpu_model": "NVIDIA-H100-80GB-HBM3", "mig_config": "nope", "sources": [stored()]},
            "no mig-parted config named 'nope' in this cluster (MIG Manager reads ConfigMap "
            "default-mig-parted-config; 1 mig-parted ConfigMap(s) seen)",
        ),
        (
            {
                "gpu_model": "NVIDIA-H100-80GB-HBM3",
                "mig_config": "team-x",
                "configmap": "custom",
                "sources": [ConfigSource("gpu-operator", "custom")],
            },
            "mig-parted config 'team-x' cannot be read: the last sync kept no contents "
            "(sync again) of ConfigMap gpu-operator/custom",
        ),
        (
            {"gpu_model": "NVIDIA-H100-80GB-HBM3", "mig_config": "all-1g.5gb"},
            "no mig-parted config named 'all-1g.5gb' in this cluster",
        ),
    ],
)
def test_what_cannot_be_loaded_says_why(kwargs: dict, error: str) -> None:
    layout = node_layout(**kwargs)
    assert layout.error is not None and layout.error.startswith(error)
    assert layout.instances == ()


def test_operator_default_config_without_stored_contents() -> None:
    # The sync keeps a ConfigMap's name, not its contents: the operator's default config is
    # known, so its standard names still load.
    unread = [ConfigSource("gpu-operator", OPERATOR_CM)]
    layout = node_layout(
        gpu_model="NVIDIA-A100-SXM4-80GB", mig_config="all-balanced", sources=unread
    )
    assert layout.source == "GPU Operator default config"
    assert sorted(profiles(layout)) == ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]
    assert "ConfigMap contents were not kept by the last sync" in layout.notes[0]
    nothing_seen = node_layout(gpu_model="NVIDIA-B200", mig_config="all-1g.23gb.me")
    assert profiles(nothing_seen) == ["1g.23gb+me"]
    assert "no ConfigMap holds 'all-1g.23gb.me'" in nothing_seen.notes[0]


@pytest.mark.parametrize("model", list(MODELS))
def test_default_config_names_fit_every_model(model: str) -> None:
    gpu = MODELS[model]
    names = ["all-disabled", "all-enabled", "all-balanced"] + [
        "all-" + name.replace("+me", ".me") for name in gpu.profiles
    ]
    for name in names:
        entry = default_config(gpu, name)
        assert entry is not None, name
        result = validate_layout(model, list(requests_of(entry)))
        assert result.valid, (name, result.errors)
    assert default_config(gpu, "all-9g.1gb") is None and default_config(gpu, "custom") is None
