"""Device-injection facts the node page shows next to a bulletin's condition: CDI on or off,
the device list strategy, whether unprivileged pods may pick GPUs by env var; each with
where it was read, and "not known" when nothing says."""

from __future__ import annotations

from dataclasses import asdict

from inventory.runtime import runtime_facts
from inventory.sources.gpu_operator import parse_cluster_policy
from inventory.sources.normalise import normalise
from tests.inventory.normalise_helpers import PLATFORM, configmap
from tests.realworld import realworld


def facts(labels=None, policies=(), configs=()):
    return {
        r["fact"]: (r["value"], r["source"]) for r in runtime_facts(labels or {}, policies, configs)
    }


def test_nothing_stated_is_not_known_never_a_default_claimed():
    found = facts()
    assert {value for value, _ in found.values()} == {None}
    assert "nothing states it" in found["CDI device injection"][1]


def test_nvidia_mitigation_in_a_cluster_policy_is_read_from_its_env():
    # NVIDIA's advice for pods bypassing the device plugin (bulletin 5599), as a ClusterPolicy.
    spec = parse_cluster_policy(
        {
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "spec": {
                "cdi": {"enabled": False},
                "toolkit": {
                    "env": [
                        {
                            "name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED",
                            "value": "false",
                        },
                        {"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS", "value": "true"},
                    ]
                },
                "devicePlugin": {
                    "env": [{"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"}]
                },
            },
        }
    )
    assert spec.device_list_strategy == "volume-mounts"
    assert spec.toolkit_accepts_envvar_unprivileged is False
    found = facts(policies=[("cluster-policy", asdict(spec))])
    assert found["CDI device injection"] == ("off", "ClusterPolicy cluster-policy spec.cdi.enabled")
    assert found["Device list strategy"][0] == "volume-mounts"
    assert found["Toolkit honours NVIDIA_VISIBLE_DEVICES from unprivileged pods"][0] == "no"


def test_a_node_label_speaks_for_nodes_without_the_operator():
    found = facts(labels={"gpuposture.io/cdi": "enabled"})
    assert found["CDI device injection"] == ("on", "node label gpuposture.io/cdi=enabled")


def test_realworld_plugin_flags_give_the_device_list_strategy():
    # The device plugin README's flags example sets deviceListStrategy "envvar".
    text = realworld("device-plugin", "readme-L231-flags-config.yaml").read_text()
    (config,) = normalise(
        [configmap("gpu-operator", "plugin-config", {"any": text})], **PLATFORM
    ).sharing_configs
    assert config.device_list_strategy == "envvar"
    row = {"configmap": config.configmap, "key": config.key, "device_list_strategy": "envvar"}
    value, source = facts(configs=[row])["Device list strategy"]
    assert value == "envvar" and "plugin-config/any" in source


def test_a_strategy_list_and_bad_env_values_are_read_carefully():
    text = (
        "version: v1\nflags:\n  migStrategy: none\n"
        "  plugin:\n    deviceListStrategy: [envvar, cdi-annotations]\n"
    )
    (config,) = normalise([configmap("kube-system", "cm", {"k": text})]).sharing_configs
    assert config.device_list_strategy == "envvar,cdi-annotations"
    spec = parse_cluster_policy(
        {
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "spec": {
                "toolkit": {
                    "env": [
                        {
                            "name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED",
                            "value": "maybe",
                        }
                    ]
                },
                "devicePlugin": {"env": "oops"},
            },
        }
    )
    assert spec.toolkit_accepts_envvar_unprivileged is None and spec.device_list_strategy is None


def test_an_unset_cdi_field_reads_by_the_operators_version():
    unset = [("cluster-policy", {"cdi_enabled": None})]
    on = runtime_facts({}, unset, (), "25.10.0")[0]
    assert on["value"] == "on" and "defaults it on" in on["source"]
    assert runtime_facts({}, unset, (), "v25.3.2")[0]["value"] == "off"
    unknown = runtime_facts({}, unset, ())[0]
    assert unknown["value"] is None and "version, which decides, is unknown" in unknown["source"]


def test_a_plugin_config_naming_cdi_devices_is_cdi_injection():
    config = {"configmap": "nvidia-device-plugin", "key": "any", "device_list_strategy": "cdi-cri"}
    value, source = facts(configs=[config])["CDI device injection"]
    assert value == "on" and "nvidia-device-plugin/any" in source
