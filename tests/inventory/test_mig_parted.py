"""mig-parted configs -> MigPartedConfig; per-GPU resolution; refusals mirror mig-parted's own."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import yaml

from inventory.sources.mig_parted import (
    MAX_ENTRIES,
    MAX_YAML_BYTES,
    MigPartedConfig,
    MigPartedEntry,
    MigPartedError,
    matching_entries,
    mig_parted_from_configmap,
    parse_mig_parted,
    parse_mig_parted_yaml,
    profile_slices,
    resolve,
)
from tests.realworld import realworld


def load(name: str) -> MigPartedConfig:
    return parse_mig_parted_yaml(realworld("mig", name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def default_config() -> MigPartedConfig:
    return load("mig-parted-config-default.yaml")


def entry(**overrides: Any) -> dict[str, Any]:
    """One raw entry, enabled with a single 1g.10gb unless overridden."""
    raw: dict[str, Any] = {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 1}}
    raw.update(overrides)
    return {key: value for key, value in raw.items() if value is not ...}


def config_with(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"version": "v1", "mig-configs": {"c": list(entries)}}


# --- the real default config (NVIDIA/mig-parted deployments/systemd/config-default.yaml) -------

H100_80GB = [
    "0x233010DE",
    "0x233110DE",
    "0x232210DE",
    "0x20B210DE",
    "0x20B510DE",
    "0x20F310DE",
    "0x20F510DE",
    "0x232410DE",
]
A100_40GB = ["0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"]
H100_NVL = ["0x232110DE", "0x233A10DE"]
H200 = ["0x233510DE", "0x233B10DE"]
BALANCED_7 = {  # device ids -> layout using 7 of the 7 compute slices
    tuple(H100_80GB): {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    tuple(A100_40GB): {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},
    tuple(H100_NVL): {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1},
    tuple(H200): {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1},
    ("0x290110DE",): {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1},  # B200
    ("0x294110DE",): {"1g.23gb": 2, "2g.47gb": 1, "3g.93gb": 1},  # GB200
    ("0x31C210DE",): {"1g.35gb": 2, "2g.70gb": 1, "3g.139gb": 1},  # GB300
    ("0x318210DE",): {"1g.34gb": 2, "2g.67gb": 1, "3g.135gb": 1},  # B300
}
BALANCED_4 = {  # 4 of 4 slices, no 3g profile
    ("0x20B710DE",): {"1g.6gb": 2, "2g.12gb": 1},  # A30
    ("0x2BB510DE",): {"1g.24gb": 2, "2g.48gb": 1},  # RTX PRO 6000 Blackwell
}
BALANCED_CASES = [
    (device_id, layout, slices)
    for table, slices in ((BALANCED_7, 7), (BALANCED_4, 4))
    for ids, layout in table.items()
    for device_id in ids
]


def test_default_config_shape(default_config):
    assert default_config.version == "v1"
    assert len(default_config.configs) == 81
    for entries in default_config.configs.values():
        assert entries and all(isinstance(e, MigPartedEntry) for e in entries)


@pytest.mark.parametrize(("device_id", "layout", "slices"), BALANCED_CASES)
def test_all_balanced_resolves_per_device_filter(default_config, device_id, layout, slices):
    for index in (0, 7):  # devices: all, so every index gets the same layout
        chosen = resolve(default_config, "all-balanced", device_id, index)
        assert chosen is not None and chosen.mig_enabled
        assert chosen.mig_devices == layout
        assert chosen.gpu_instance_slices == slices
        assert device_id in chosen.device_filter


def test_device_ids_compare_case_insensitively(default_config):
    lower = resolve(default_config, "all-balanced", "0x31c210de", 0)
    assert lower == resolve(default_config, "all-balanced", "0x31C210DE", 0)
    assert lower is not None and lower.device_filter == ("0x31C210DE",)  # vendor's form kept


def test_all_balanced_leaves_unlisted_gpus_alone(default_config):
    assert resolve(default_config, "all-balanced", "0x1FB010DE", 0) is None  # not MIG-capable


def test_a30_filter_is_a_bare_string_others_lists(default_config):
    filters = [e.device_filter for e in default_config.configs["all-balanced"]]
    assert ("0x20B710DE",) in filters
    assert tuple(H100_80GB) in filters and tuple(A100_40GB) in filters


def test_all_1g_10gb_depends_on_the_card(default_config):
    big, small = default_config.configs["all-1g.10gb"]
    assert (big.device_filter, big.mig_devices) == (tuple(H100_80GB), {"1g.10gb": 7})
    assert (small.device_filter, small.mig_devices) == (tuple(A100_40GB), {"1g.10gb": 4})
    for device_id in H100_80GB:
        assert resolve(default_config, "all-1g.10gb", device_id, 0) == big
    for device_id in A100_40GB:
        assert resolve(default_config, "all-1g.10gb", device_id, 3) == small


@pytest.mark.parametrize(("device_id", "count"), [("0x233510DE", 4), ("0x31C210DE", 7)])
def test_same_profile_name_different_count(default_config, device_id, count):
    chosen = resolve(default_config, "all-1g.35gb", device_id, 0)
    assert chosen is not None and chosen.mig_devices == {"1g.35gb": count}


def test_all_disabled_and_all_enabled(default_config):
    (disabled,) = default_config.configs["all-disabled"]
    assert disabled == MigPartedEntry("all", False, {}, ())
    (enabled,) = default_config.configs["all-enabled"]
    assert enabled == MigPartedEntry("all", True, {}, ())  # MIG on, zero instances
    assert enabled.gpu_instance_slices == 0
    assert resolve(default_config, "all-disabled", "0xDEADBEEF", 5) == disabled


def test_profiles_with_attributes_parse(default_config):
    counts = {name: e[0].mig_devices for name, e in default_config.configs.items()}
    assert counts["all-1g.24gb.me.all"] == {"1g.24gb+me.all": 1}
    assert counts["all-1g.24gb-me"] == {"1g.24gb-me": 4}
    assert counts["all-4g.96gb.gfx"] == {"4g.96gb+gfx": 1}


# --- examples/config.yaml: per-index device lists ----------------------------------------------

CUSTOM = [
    (0, False, {}),
    (3, False, {}),
    (4, True, {"1g.5gb": 7}),
    (5, True, {"2g.10gb": 3}),
    (6, True, {"3g.20gb": 2}),
    (7, True, {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}),
]


@pytest.mark.parametrize(("index", "enabled", "layout"), CUSTOM)
def test_examples_custom_config_per_index(index, enabled, layout):
    config = load("mig-parted-examples-config.yaml")
    chosen = resolve(config, "custom-config", "0x20B010DE", index)
    assert chosen is not None
    assert (chosen.mig_enabled, chosen.mig_devices) == (enabled, layout)
    assert chosen.devices != "all" and index in chosen.devices


def test_examples_custom_config_shape_and_uncovered_index():
    config = load("mig-parted-examples-config.yaml")
    assert config.configs["custom-config"][0].devices == (0, 1, 2, 3)
    assert resolve(config, "custom-config", "0x20B010DE", 8) is None
    assert config.configs["all-1g.10gb"][0].mig_devices == {"1g.10gb": 4}  # A100-40GB file


def test_dgx_station_filter_and_index_together():
    config = load("mig-parted-dgx-station-80gb-config.yaml")
    name = "balanced-k8s-dgx-station-80"
    display = resolve(config, name, "0x1FB010DE", 3)
    assert display is not None and not display.mig_enabled
    assert resolve(config, name, "0x20B210DE", 3) is None  # index 3 is only the display GPU's
    assert resolve(config, name, "0x20B210DE", 2).mig_devices == {"2g.20gb": 3, "1g.10gb": 1}


# --- the GPU Operator's default ConfigMap ----------------------------------------------------


def test_configmap_embeds_the_same_config(default_config):
    obj = yaml.safe_load(
        realworld("mig", "gpu-operator-default-mig-parted-config-configmap.yaml").read_text()
    )
    found = mig_parted_from_configmap(obj)
    assert list(found) == ["config.yaml"]
    embedded = found["config.yaml"]
    assert set(embedded.configs) == set(default_config.configs)
    # Entry order differs between the two copies; what each GPU gets must not.
    ids = [d for ids, _ in (BALANCED_7 | BALANCED_4).items() for d in ids] + ["0x1FB010DE"]
    for name in embedded.configs:
        for device_id in ids:
            assert resolve(embedded, name, device_id, 0) == resolve(
                default_config, name, device_id, 0
            ), (name, device_id)


def configmap(data: Any, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "data": data, **extra}


VALID_YAML = (
    "version: v1\nmig-configs:\n  all-disabled:\n    - devices: all\n      mig-enabled: false\n"
)


@pytest.mark.parametrize(
    ("data", "keys"),
    [
        ({"config.yaml": VALID_YAML}, ["config.yaml"]),
        ({"a.yaml": VALID_YAML, "b.yaml": VALID_YAML}, ["a.yaml", "b.yaml"]),
        ({"config.yaml": VALID_YAML, "run.sh": "#!/bin/sh\nexit 0\n"}, ["config.yaml"]),
        ({"config.yaml": "version: v2\nmig-configs: {}\n"}, []),  # refused -> left out
        ({"config.yaml": "{{ not yaml"}, []),
        ({"config.yaml": 7}, []),
        (None, []),
        ("config.yaml", []),
    ],
)
def test_configmap_keys_that_parse(data, keys):
    assert list(mig_parted_from_configmap(configmap(data))) == keys


@pytest.mark.parametrize("obj", [[], "config", configmap({}, kind="Secret")])
def test_configmap_refuses_other_objects(obj):
    with pytest.raises(MigPartedError):
        mig_parted_from_configmap(obj)


# --- resolution rules ---------------------------------------------------------------------------


def test_overlapping_entries_last_applied_wins():
    # mig-parted applies every matching entry in file order, each replacing the layout before.
    config = parse_mig_parted(
        config_with(
            entry(**{"mig-devices": {"7g.80gb": 1}}),
            entry(devices=[1], **{"mig-devices": {"1g.10gb": 7}}),
        )
    )
    assert len(matching_entries(config, "c", "0x233010DE", 1)) == 2
    assert resolve(config, "c", "0x233010DE", 1).mig_devices == {"1g.10gb": 7}
    assert resolve(config, "c", "0x233010DE", 0).mig_devices == {"7g.80gb": 1}


@pytest.mark.parametrize(
    ("device_filter", "device_id", "applies"),
    [
        ("", "0x233010DE", True),  # "" means no filter, as in mig-parted
        ([], "0x233010DE", True),
        ("0x233010DE", "0X233010de", True),
        ("0x233010DE", "0x233110DE", False),
        ("0x233010DE:0x16C110DE", "0x233010DE:0x16C110DE", True),  # subsystem-qualified
        ("0x233010DE:0x16C110DE", "0x233010DE:0x17C110DE", False),
        ("0x233010DE", "0x233010DE:0x16C110DE", True),  # unqualified matches any subsystem
        ("H100", "h100", True),  # not a number: compared as text
    ],
)
def test_device_filter_matching(device_filter, device_id, applies):
    config = parse_mig_parted(config_with(entry(**{"device-filter": device_filter})))
    assert (resolve(config, "c", device_id, 0) is not None) is applies


def test_unknown_config_name_is_an_error(default_config):
    with pytest.raises(MigPartedError, match="no mig-config named 'all-2g.99gb'"):
        resolve(default_config, "all-2g.99gb", "0x233010DE", 0)


@pytest.mark.parametrize(
    ("profile", "slices"),
    [("1g.10gb", 1), ("1c.3g.40gb", 3), ("7g.80gb", 7), ("1g.24gb+me.all", 1)],
)
def test_profile_slices(profile, slices):
    assert profile_slices(profile) == slices


def test_entries_are_frozen_and_hashable(default_config):
    (disabled,) = default_config.configs["all-disabled"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        disabled.mig_enabled = True
    assert len({disabled, MigPartedEntry("all", False, {}, ())}) == 1


# --- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "is a mapping, not list"),
        (None, "is a mapping, not nothing"),
        ({"mig-configs": {}}, "missing 'version'"),
        ({"version": "v2", "mig-configs": {}}, "unsupported version 'v2'"),
        ({"version": 1, "mig-configs": {}}, "unsupported version 1"),
        ({"version": "v1", "mig-configs": [], "extra": 1}, "unexpected top-level field"),
        ({"version": "v1", "mig-configs": []}, "'mig-configs' must map config names"),
        ({"version": "v1", "mig-configs": None}, "'mig-configs' must map config names"),
        ({"version": "v1", "mig-configs": {}}, "at least one config"),
        ({"version": "v1", "mig-configs": {"c": []}}, r"mig-configs\.c: needs a non-empty list"),
        ({"version": "v1", "mig-configs": {"c": {"devices": "all"}}}, "non-empty list"),
        (config_with("all"), r"mig-configs\.c\[0\]: an entry is a mapping"),
        (config_with(entry(devices=...)), "missing required field 'devices'"),
        (config_with(entry(**{"mig-enabled": ...})), "missing required field 'mig-enabled'"),
        (config_with(entry(**{"mig-enabled": "yes"})), "'mig-enabled' must be true or false"),
        (config_with(entry(gpus=[0])), r"\[0\]: unexpected field\(s\) gpus"),
        (config_with(entry(devices="some")), "'devices' must be 'all' or a list"),
        (config_with(entry(devices=[0, True])), "'devices' must be 'all' or a list"),
        (config_with(entry(devices=[0.0])), "'devices' must be 'all' or a list"),
        (config_with(entry(**{"device-filter": 0x20B710DE})), "must be a quoted PCI id"),
        (config_with(entry(**{"device-filter": ["0x20B710DE", 1]})), "must be a quoted PCI id"),
        (config_with(entry(**{"mig-devices": ...})), "'mig-devices' is required"),
        (config_with(entry(**{"mig-devices": None})), "'mig-devices' is required"),
        (config_with(entry(**{"mig-devices": [1]})), "must map profiles to counts"),
        (config_with(entry(**{"mig-devices": {"1g.10gb": -1}})), "whole number >= 0, not -1"),
        (config_with(entry(**{"mig-devices": {"1g.10gb": "7"}})), "whole number >= 0, not '7'"),
        (config_with(entry(**{"mig-devices": {"1g.10gb": True}})), "whole number >= 0"),
        (config_with(entry(**{"mig-devices": {"1g.10gb": 1.5}})), "whole number >= 0"),
        (config_with(entry(**{"mig-devices": {"big": 1}})), "'big' is not a MIG profile"),
        (config_with(entry(**{"mig-devices": {7: 1}})), "7 is not a MIG profile"),
        (
            config_with(entry(**{"mig-enabled": False})),
            "'mig-devices' listed while 'mig-enabled' is false",
        ),
    ],
)
def test_refused(data, message):
    with pytest.raises(MigPartedError, match=message):
        parse_mig_parted(data)


def test_disabled_entry_may_list_empty_or_zero_devices():
    config = parse_mig_parted(config_with(entry(**{"mig-enabled": False, "mig-devices": {}})))
    assert config.configs["c"][0].mig_devices == {}


def test_missing_mig_configs_is_an_empty_file():
    assert parse_mig_parted({"version": "v1"}).configs == {}


def test_scalar_config_names_read_as_text():
    raw = {"version": "v1", "mig-configs": {2: [entry()], False: [entry()]}}
    assert set(parse_mig_parted(raw).configs) == {"2", "false"}


def test_names_that_collide_as_text_are_refused():
    raw = {"version": "v1", "mig-configs": {2: [entry()], "2": [entry()]}}
    with pytest.raises(MigPartedError, match="config name '2' appears twice"):
        parse_mig_parted(raw)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is a mapping, not nothing"),
        ("version: v1\nmig-configs: [\n", "not valid YAML"),
        ("- a\n- b\n", "is a mapping, not list"),
        ("[" * 5000 + "]" * 5000, "nested deeper than 64 levels"),
        (" " * (MAX_YAML_BYTES + 1), "the limit is"),
        ("#" + "é" * (MAX_YAML_BYTES // 2), "the limit is"),  # counted in bytes, not chars
        ("version: v1\nmig-configs:\n  c:\n    - devices: all\n      mig-enabled: true\n", "req"),
    ],
)
def test_yaml_refused(text, message):
    with pytest.raises(MigPartedError, match=message):
        parse_mig_parted_yaml(text)


def test_alias_amplification_is_capped():
    # 200 names x one aliased list of 100 entries = 20,000 entries from a ~3 kB document.
    entries = "\n".join("    - *e" for _ in range(99))
    names = "\n".join(f"  n{i}: *l" for i in range(199))
    text = (
        "version: v1\nmig-configs:\n  n: &l\n    - &e {devices: all, mig-enabled: false}\n"
        f"{entries}\n{names}\n"
    )
    assert len(text) < 10_000
    # Refused before it is built: far more aliases than a real config uses.
    with pytest.raises(MigPartedError, match="more than 8 YAML aliases"):
        parse_mig_parted_yaml(text)
    # Built from a dict (no YAML), the entry budget still caps it.
    data = {"version": "v1", "mig-configs": {f"n{i}": [entry()] * 100 for i in range(200)}}
    with pytest.raises(MigPartedError, match=f"more than {MAX_ENTRIES} entries"):
        parse_mig_parted(data)


def test_bytes_input_accepted():
    assert (
        parse_mig_parted_yaml(VALID_YAML.encode()).configs["all-disabled"][0].mig_enabled is False
    )
