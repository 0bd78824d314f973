"""Every layout in mig-parted's real configs (../shared/realworld/mig/, read in place) places
validly on every model of our table it targets, and loads as a node's layout; no database."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from inventory.mig_profiles import DEVICE_IDS, MODELS
from inventory.sources.mig_parted import (
    MigPartedConfig,
    MigPartedEntry,
    mig_parted_from_configmap,
    parse_mig_parted_yaml,
)
from partitioner.config import ConfigSource, default_config, node_layout, requests_of
from partitioner.layout import validate_layout
from tests.realworld import realworld, realworld_dir

# The three plain configs, and the GPU Operator's ConfigMap that embeds the default one.
FILES = (
    "mig-parted-config-default.yaml",
    "mig-parted-examples-config.yaml",
    "mig-parted-dgx-station-80gb-config.yaml",
)
CONFIGMAP = "gpu-operator-default-mig-parted-config-configmap.yaml"
# The examples file has no device filter and is written for an A100-40GB (SOURCES.md).
EXAMPLES_MODEL = "A100-40GB"


def load(name: str) -> MigPartedConfig:
    return parse_mig_parted_yaml(realworld("mig", name).read_text(encoding="utf-8"))


def models_of(entry: MigPartedEntry, file: str) -> set[str]:
    """Our models this entry applies to: its device filter's, or (no filter) those whose
    profiles include every profile it names (the examples file: its A100-40GB)."""
    if entry.device_filter:
        index = 0 if entry.devices == "all" else entry.devices[0]
        return {m for m, ids in DEVICE_IDS.items() if any(entry.applies_to(i, index) for i in ids)}
    if file == "mig-parted-examples-config.yaml":
        return {EXAMPLES_MODEL}
    return {m for m, gpu in MODELS.items() if set(entry.mig_devices) <= set(gpu.profiles)}


def every_layout() -> list[tuple[str, str, int, str]]:
    """(file, config name, entry index, model) for every MIG-enabled entry with instances."""
    cases = []
    for file in FILES:
        path = realworld_path(file)
        if path is None:
            continue
        config = parse_mig_parted_yaml(path.read_text(encoding="utf-8"))
        for name, entries in config.configs.items():
            for i, entry in enumerate(entries):
                if entry.mig_enabled and entry.mig_devices:
                    for model in sorted(models_of(entry, file)):
                        cases.append((file, name, i, model))
    return cases


def realworld_path(file: str) -> Path | None:
    path = realworld_dir() / "mig" / file
    return path if path.exists() else None


LAYOUTS = every_layout()


@pytest.mark.skipif(
    not LAYOUTS, reason="real-world mig-parted samples absent (GPUPOSTURE_REALWORLD)"
)
@pytest.mark.parametrize(("file", "name", "index", "model"), LAYOUTS)
def test_real_layout_places_validly(file: str, name: str, index: int, model: str) -> None:
    entry = load(file).configs[name][index]
    result = validate_layout(model, list(requests_of(entry)))
    assert result.valid, (file, name, model, result.errors)
    assert len(result.placements) == sum(entry.mig_devices.values())
    assert result.compute_slices_used == entry.gpu_instance_slices <= 7


def test_the_real_configs_cover_every_model() -> None:
    if not LAYOUTS:
        pytest.skip("real-world mig-parted samples absent (GPUPOSTURE_REALWORLD)")
    assert {model for *_, model in LAYOUTS} == set(MODELS)
    names = {(file, name) for file, name, *_ in LAYOUTS}
    assert ("mig-parted-config-default.yaml", "all-balanced") in names
    assert ("mig-parted-examples-config.yaml", "custom-config") in names
    assert ("mig-parted-dgx-station-80gb-config.yaml", "balanced-k8s-dgx-station-80") in names
    assert len(LAYOUTS) >= 60


def test_balanced_per_model_matches_sources_md() -> None:
    config = load("mig-parted-config-default.yaml")
    balanced = {}
    for entry in config.configs["all-balanced"]:
        for model in models_of(entry, "mig-parted-config-default.yaml"):
            balanced[model] = dict(sorted(entry.mig_devices.items()))
    assert balanced["A100-40GB"] == {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}
    assert balanced["H100-94GB"] == {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1}
    assert balanced["H200-141GB"] == {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}
    assert balanced["B200"] == {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1}
    assert balanced["GB200"] == {"1g.23gb": 2, "2g.47gb": 1, "3g.93gb": 1}
    assert balanced["GB300"] == {"1g.35gb": 2, "2g.70gb": 1, "3g.139gb": 1}
    assert balanced["B300"] == {"1g.34gb": 2, "2g.67gb": 1, "3g.135gb": 1}
    assert balanced["H100-80GB"] == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}  # H800's too


def test_all_profile_counts_are_our_max_instances() -> None:
    config = load("mig-parted-config-default.yaml")
    for name, entries in config.configs.items():
        for entry in entries:
            if len(entry.mig_devices) != 1 or not name.startswith("all-"):
                continue
            ((profile, count),) = entry.mig_devices.items()
            for model in models_of(entry, "mig-parted-config-default.yaml"):
                most = MODELS[model].profiles[profile].max_instances
                assert count == most, (name, model)
                assert not validate_layout(model, list(requests_of(entry)) * 2).valid


def test_derived_default_config_is_the_real_one_for_every_model() -> None:
    """default_config (used when the sync kept no ConfigMap contents) gives each model what the
    real default config gives it, for every config name the real file has for that model."""
    config = load("mig-parted-config-default.yaml")
    source = ConfigSource("gpu-operator", "default-mig-parted-config", {"config.yaml": _text()})
    checked = 0
    for model in DEVICE_IDS:
        for name in config.configs:
            real = node_layout(gpu_model=model, mig_config=name, sources=[source])
            derived = default_config(MODELS[model], name)
            profiles = {r.profile for r in real.instances}
            if real.error or not profiles <= set(MODELS[model].profiles):
                continue  # no entry for this model, or one for another family's profiles
            assert derived is not None, (model, name)
            assert (derived.mig_enabled, requests_of(derived)) == (
                real.mig_enabled,
                real.instances,
            ), (model, name)
            checked += 1
    assert checked >= 50


def _text() -> str:
    return realworld("mig", "mig-parted-config-default.yaml").read_text(encoding="utf-8")


def test_operator_configmap_embeds_the_default_config() -> None:
    obj = yaml.safe_load(realworld("mig", CONFIGMAP).read_text(encoding="utf-8"))
    (embedded,) = mig_parted_from_configmap(obj).values()
    assert embedded.configs.keys() == load("mig-parted-config-default.yaml").configs.keys()
    layout = node_layout(
        gpu_model="NVIDIA-H100-80GB-HBM3",
        mig_config="all-balanced",
        sources=[ConfigSource("gpu-operator", obj["metadata"]["name"], obj["data"])],
    )
    assert layout.error is None and layout.source.endswith("key config.yaml")
    assert sorted(r.profile for r in layout.instances) == [
        "1g.10gb",
        "1g.10gb",
        "2g.20gb",
        "3g.40gb",
    ]
    assert validate_layout(layout.model or "", list(layout.instances)).valid


@pytest.mark.parametrize(
    ("device", "profiles", "mig_enabled"),
    [
        (0, [], False),
        (4, ["1g.5gb"] * 7, True),
        (5, ["2g.10gb"] * 3, True),
        (6, ["3g.20gb"] * 2, True),
        (7, ["1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"], True),
    ],
)
def test_per_device_custom_config(device: int, profiles: list[str], mig_enabled: bool) -> None:
    text = realworld("mig", "mig-parted-examples-config.yaml").read_text(encoding="utf-8")
    layout = node_layout(
        gpu_model="NVIDIA-A100-SXM4-40GB",
        mig_config="custom-config",
        configmap="custom-mig",
        sources=[ConfigSource("gpu-operator", "custom-mig", {"config.yaml": text})],
        device=device,
        gpu_count=8,
    )
    assert layout.error is None
    assert (layout.mig_enabled, [r.profile for r in layout.instances]) == (mig_enabled, profiles)
    assert any("different layouts (GPUs 0-3: MIG off; GPU 4: 7 x 1g.5gb" in n for n in layout.notes)
