"""GPU Operator ClusterPolicy / Helm values -> GpuOperatorSpec; wrong types read as unstated."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
import yaml

from inventory.sources.gpu_operator import (
    DEFAULT_MIG_PARTED_CONFIGMAP,
    GpuOperatorError,
    GpuOperatorSpec,
    normalise_version,
    parse_cluster_policy,
    parse_gpu_operator_values,
)
from tests.realworld import realworld


def sample(name: str) -> Any:
    text = realworld("gpu-operator", name).read_text(encoding="utf-8")
    return json.loads(text) if name.endswith(".json") else yaml.safe_load(text)


def policy(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "spec": spec}


def upgrades(count: Any) -> dict[str, Any]:
    return {"driver": {"upgradePolicy": {"maxParallelUpgrades": count}}}


UNSTATED = GpuOperatorSpec(
    mig_strategy=None,
    device_plugin_enabled=None,
    device_plugin_config_name="",
    device_plugin_config_default="",
    mig_manager_enabled=None,
    mig_manager_config_name="",
    cdi_enabled=None,
    cdi_default=None,
    driver_enabled=None,
    driver_version=None,
    driver_auto_upgrade=None,
    driver_max_parallel_upgrades=None,
    toolkit_version=None,
    device_plugin_version=None,
    dcgm_exporter_version=None,
    dcgm_exporter_host_pid=None,
    dcgm_exporter_host_network=None,
    mig_manager_version=None,
    sandbox_workloads_enabled=None,
    sandbox_workloads_mode=None,
    vgpu_manager_enabled=None,
    psp_enabled=None,
    kernel_module_type=None,
)


# --- real samples (NVIDIA/gpu-operator @ a22dbf67) ---------------------------------------------


def test_cluster_policy_sample():
    obj = sample("clusterpolicy-sample-v1.yaml")
    assert (obj["kind"], obj["metadata"]["name"]) == ("ClusterPolicy", "gpu-cluster-policy")
    spec = parse_cluster_policy(obj)
    assert spec.mig_strategy == "single"
    assert spec.device_plugin_enabled is True
    assert (spec.device_plugin_config_name, spec.device_plugin_config_default) == ("", "")
    assert spec.mig_manager_enabled is True
    assert spec.mig_manager_config_name == ""
    assert spec.mig_parted_configmap == DEFAULT_MIG_PARTED_CONFIGMAP == "default-mig-parted-config"
    assert spec.psp_enabled is False
    assert (spec.driver_auto_upgrade, spec.driver_max_parallel_upgrades) == (True, 1)
    assert spec.sandbox_workloads_enabled is False
    assert spec.vgpu_manager_enabled is True
    assert spec.driver_enabled is True
    assert (spec.cdi_enabled, spec.cdi_default) == (None, None)  # `cdi: {}` states nothing
    # The sample pins no images: the operator's environment supplies them.
    assert spec.driver_version is None and spec.toolkit_version is None


def test_cluster_policy_olm_example():
    spec = parse_cluster_policy(sample("clusterpolicy-olm-alm-example.json"))
    assert spec.cdi_enabled is True
    assert (spec.sandbox_workloads_enabled, spec.sandbox_workloads_mode) == (False, "kubevirt")
    assert spec.kernel_module_type == "auto"
    assert spec.mig_strategy == "single"
    assert spec.vgpu_manager_enabled is False
    assert (spec.driver_auto_upgrade, spec.driver_max_parallel_upgrades) == (True, 1)
    assert spec.driver_use_crd is False  # the ClusterPolicy's driver.version is in force
    # migManager has no config section: same as "", the default ConfigMap.
    assert spec.mig_manager_config_name == ""
    assert spec.mig_parted_configmap == DEFAULT_MIG_PARTED_CONFIGMAP


def test_helm_chart_values():
    spec = parse_gpu_operator_values(sample("helm-values.yaml"))
    assert spec.mig_strategy == "single"
    assert spec.driver_version == "595.91.07"
    assert spec.toolkit_version == "1.20.0"
    assert spec.device_plugin_version == "0.20.0"
    assert spec.dcgm_exporter_version == "4.6.0-4.8.3"
    assert (spec.dcgm_exporter_host_pid, spec.dcgm_exporter_host_network) == (False, False)
    assert spec.mig_manager_version == "0.15.0"
    assert spec.mig_manager_config_name == "" and spec.device_plugin_config_name == ""
    assert (spec.cdi_enabled, spec.kernel_module_type) == (True, "auto")
    assert (spec.sandbox_workloads_enabled, spec.sandbox_workloads_mode) == (False, "kubevirt")
    assert spec.vgpu_manager_enabled is False
    assert spec.psp_enabled is None  # the chart has no psp section any more (psa replaced it)
    assert spec.driver_use_crd is False
    assert (spec.driver_auto_upgrade, spec.driver_max_parallel_upgrades) == (True, 1)


def test_values_and_policy_share_one_reader():
    values = sample("helm-values.yaml")
    assert parse_cluster_policy(policy(values)) == parse_gpu_operator_values(values)


# --- versions ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "version"),
    [
        ("v1.20.0", "1.20.0"),
        ("V0.15.0", "0.15.0"),
        ("595.91.07", "595.91.07"),
        ("4.6.0-4.8.3-distroless", "4.6.0-4.8.3"),
        ("4.6.0-1-ubuntu24.04", "4.6.0-1"),
        ("550.90.07-ubuntu22.04", "550.90.07"),
        ("v0.17.0-ubi9", "0.17.0"),
        ("535.183.01-rhel9.4", "535.183.01"),
        ("535.183.01-rhcos4.16", "535.183.01"),
        ("v1.17.0-ubi9-minimal", "1.17.0"),
        ("3.3.0-3.2.0-ubuntu22.04", "3.3.0-3.2.0"),
        (" v1.2.3 ", "1.2.3"),
        ("sha256:0123abcd", "sha256:0123abcd"),  # digests are kept, never mangled
        ("vgpu", "vgpu"),  # a leading v not followed by a digit is part of the word
        (550, "550"),
        ("", None),
        ("v", "v"),
        (1.2, None),  # YAML read 1.20 as a float; the real tag is unrecoverable
        (True, None),
        (None, None),
        (["v1"], None),
    ],
)
def test_normalise_version(tag, version):
    assert normalise_version(tag) == version


# --- tolerance: missing sections and wrong types ------------------------------------------------


@pytest.mark.parametrize("spec", [None, {}, [], "spec", 3])
def test_empty_or_malformed_spec_states_nothing(spec):
    assert parse_cluster_policy(policy(spec)) == UNSTATED


@pytest.mark.parametrize("values", [None, {}])
def test_empty_values_state_nothing(values):
    assert parse_gpu_operator_values(values) == UNSTATED


@pytest.mark.parametrize(
    ("spec", "field", "expected"),
    [
        ({"mig": "single"}, "mig_strategy", None),
        ({"mig": {"strategy": ""}}, "mig_strategy", None),
        ({"mig": {"strategy": ["mixed"]}}, "mig_strategy", None),
        ({"mig": {"strategy": "mixed"}}, "mig_strategy", "mixed"),
        ({"devicePlugin": {"enabled": "false"}}, "device_plugin_enabled", None),
        ({"devicePlugin": {"enabled": False}}, "device_plugin_enabled", False),
        ({"devicePlugin": {"config": "ts"}}, "device_plugin_config_name", ""),
        ({"devicePlugin": {"config": {"name": 5}}}, "device_plugin_config_name", ""),
        ({"devicePlugin": {"config": {"name": "ts"}}}, "device_plugin_config_name", "ts"),
        ({"devicePlugin": {"config": {"default": "any"}}}, "device_plugin_config_default", "any"),
        ({"migManager": {"config": {"name": "custom"}}}, "mig_manager_config_name", "custom"),
        ({"migManager": {"config": {"name": None}}}, "mig_manager_config_name", ""),
        (
            {"vgpuDeviceManager": {"config": {"name": "vgpu-devices-config"}}},
            "vgpu_device_manager_config_name",
            "vgpu-devices-config",
        ),
        ({"vgpuDeviceManager": {"config": "x"}}, "vgpu_device_manager_config_name", ""),
        ({"migManager": None}, "mig_manager_enabled", None),
        ({"cdi": {"default": True}}, "cdi_default", True),
        ({"driver": {"version": {"tag": "1"}}}, "driver_version", None),
        ({"driver": {"upgradePolicy": True}}, "driver_auto_upgrade", None),
        (upgrades(0), "driver_max_parallel_upgrades", 0),
        (upgrades("3"), "driver_max_parallel_upgrades", None),
        (upgrades(True), "driver_max_parallel_upgrades", None),
        (upgrades(-1), "driver_max_parallel_upgrades", None),
        ({"driver": {"kernelModuleType": "open"}}, "kernel_module_type", "open"),
        ({"driver": {"kernelModuleType": 1}}, "kernel_module_type", None),
        ({"dcgmExporter": {"hostPID": True}}, "dcgm_exporter_host_pid", True),
        ({"dcgmExporter": {"hostNetwork": "yes"}}, "dcgm_exporter_host_network", None),
        ({"sandboxWorkloads": {"mode": "kata"}}, "sandbox_workloads_mode", "kata"),
        ({"vgpuManager": {"enabled": 1}}, "vgpu_manager_enabled", None),
        ({"psp": {"enabled": True}}, "psp_enabled", True),
        ({"toolkit": {"version": "v1.19.1"}}, "toolkit_version", "1.19.1"),
        # NVIDIADriver objects set the driver: the ClusterPolicy's field, the chart's value.
        ({"driver": {"useNvidiaDriverCRD": True}}, "driver_use_crd", True),
        ({"driver": {"nvidiaDriverCRD": {"enabled": False}}}, "driver_use_crd", False),
        ({"driver": {"useNvidiaDriverCRD": "true"}}, "driver_use_crd", None),
    ],
)
def test_field_reading(spec, field, expected):
    for parsed in (parse_cluster_policy(policy(spec)), parse_gpu_operator_values(spec)):
        assert getattr(parsed, field) == expected
        # Nothing else is stated by a one-section spec.
        others = {f.name for f in dataclasses.fields(UNSTATED)} - {field}
        assert all(getattr(parsed, name) == getattr(UNSTATED, name) for name in others)


def test_custom_mig_configmap_name():
    spec = parse_cluster_policy(policy({"migManager": {"config": {"name": "custom-mig"}}}))
    assert spec.mig_parted_configmap == "custom-mig"


# --- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ([], "a ClusterPolicy is a mapping, not list"),
        (None, "a ClusterPolicy is a mapping, not NoneType"),
        ({"kind": "NVIDIADriver", "apiVersion": "nvidia.com/v1alpha1"}, "expected kind"),
        ({"kind": "ClusterPolicy", "apiVersion": "example.com/v1"}, "expected apiVersion"),
        ({"kind": "ClusterPolicy", "apiVersion": 1}, "expected apiVersion"),
    ],
)
def test_cluster_policy_refuses_other_objects(obj, message):
    with pytest.raises(GpuOperatorError, match=message):
        parse_cluster_policy(obj)


def test_bare_spec_holder_without_kind_is_read():
    assert parse_cluster_policy({"spec": {"mig": {"strategy": "mixed"}}}).mig_strategy == "mixed"


@pytest.mark.parametrize("values", [[], "mig: single", 3])
def test_values_must_be_a_mapping(values):
    with pytest.raises(GpuOperatorError, match="chart values are a mapping"):
        parse_gpu_operator_values(values)


def test_spec_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        UNSTATED.mig_strategy = "mixed"
