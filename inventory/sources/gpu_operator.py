"""What an NVIDIA GPU Operator deployment asks for: its ClusterPolicy, or its Helm chart values.

Pure: no Django, no network. The ClusterPolicy `.spec` and the chart's values share section
names (`mig`, `devicePlugin`, `migManager`, `driver`, ...), so one reader serves both.

Fields hold what the document says, None when it says nothing usable: a missing section, a
wrong type or an empty string is "not stated", never a crash. What the operator does with an
unstated field depends on its version (an unset cdi.enabled once meant false, now true), so
defaults are left to the caller, except for config names where "" and absent mean the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from inventory.sources.raw import dig, mapping

DEFAULT_MIG_PARTED_CONFIGMAP = "default-mig-parted-config"
# The ConfigMap the vGPU Device Manager reads when `vgpuDeviceManager.config.name` is unset
# (the operator's VgpuDMDefaultConfigMapName).
DEFAULT_VGPU_DEVICES_CONFIGMAP = "default-vgpu-devices-config"
CLUSTER_POLICY_KIND = "ClusterPolicy"
CLUSTER_POLICY_GROUP = "nvidia.com"

# Image tags carry the base image after the version ("-distroless", "-ubuntu22.04", "-ubi9",
# "-rhel9.4", "-rhcos4.16"); the version is what matters when comparing against advisories.
_FLAVOUR_SUFFIX = re.compile(
    r"-(?:distroless|minimal|ubuntu[\d.]*|ubi\d*|rhel[\d.]*|rhcos[\d.]*|centos\d*|"
    r"debian\d*|sles[\d.]*|amzn\d*|al\d+|alpine[\d.]*)$",
    re.IGNORECASE,
)
_LEADING_V = re.compile(r"^[vV](?=\d)")


class GpuOperatorError(ValueError):
    """The object is not a ClusterPolicy (or the values are not a mapping)."""


@dataclass(frozen=True, slots=True)
class GpuOperatorSpec:
    mig_strategy: str | None
    device_plugin_enabled: bool | None
    device_plugin_config_name: str  # "" = no time-slicing/MPS config ConfigMap
    device_plugin_config_default: str
    mig_manager_enabled: bool | None
    mig_manager_config_name: str  # "" = the operator's default-mig-parted-config
    cdi_enabled: bool | None
    cdi_default: bool | None
    driver_enabled: bool | None
    driver_version: str | None
    driver_auto_upgrade: bool | None
    driver_max_parallel_upgrades: int | None
    toolkit_version: str | None
    device_plugin_version: str | None
    dcgm_exporter_version: str | None
    dcgm_exporter_host_pid: bool | None
    dcgm_exporter_host_network: bool | None
    mig_manager_version: str | None
    sandbox_workloads_enabled: bool | None
    sandbox_workloads_mode: str | None
    vgpu_manager_enabled: bool | None
    psp_enabled: bool | None
    kernel_module_type: str | None
    # The device-plugin's DEVICE_LIST_STRATEGY and the toolkit's acceptance of
    # NVIDIA_VISIBLE_DEVICES from unprivileged containers: NVIDIA's mitigation for pods that
    # bypass the device plugin (bulletin 5599) sets "volume-mounts" and "false".
    device_list_strategy: str | None = None
    toolkit_accepts_envvar_unprivileged: bool | None = None
    # The workload of nodes without nvidia.com/gpu.workload.config: container, vm-passthrough
    # or vm-vgpu (only while sandboxWorkloads is enabled).
    sandbox_workloads_default: str | None = None
    # false: the toolkit / exporter is not the Operator's (pre-installed on the host, or a
    # deployment of its own), so its version is not the ClusterPolicy's to set.
    toolkit_enabled: bool | None = None
    dcgm_exporter_enabled: bool | None = None
    # true: NVIDIADriver objects set each node pool's driver (`driver.useNvidiaDriverCRD`, the
    # chart's `driver.nvidiaDriverCRD.enabled`), and the ClusterPolicy's driver.version is unused.
    driver_use_crd: bool | None = None
    # true: the Operator runs a precompiled driver image, tagged <branch>-<kernel>-<os>
    # ("535-5.15.0-1048-aws-ubuntu22.04"); driver.version then names the branch, not a version.
    driver_use_precompiled: bool | None = None
    # The ConfigMap of vGPU types the vGPU Device Manager splits each GPU of a vm-vgpu node
    # into (`vgpuDeviceManager.config.name`); "" = the operator's default-vgpu-devices-config.
    vgpu_device_manager_config_name: str = ""

    @property
    def mig_parted_configmap(self) -> str:
        """The ConfigMap MIG Manager reads its mig-parted configs from."""
        return self.mig_manager_config_name or DEFAULT_MIG_PARTED_CONFIGMAP


def parse_cluster_policy(obj: Any) -> GpuOperatorSpec:
    """The spec of a ClusterPolicy object (apiVersion nvidia.com/v1); GpuOperatorError when the
    object is of another kind, so a mix-up never reads as "nothing configured"."""
    if not isinstance(obj, dict):
        raise GpuOperatorError(f"a ClusterPolicy is a mapping, not {type(obj).__name__}")
    kind = obj.get("kind")
    if kind is not None and kind != CLUSTER_POLICY_KIND:
        raise GpuOperatorError(f"expected kind {CLUSTER_POLICY_KIND}, got {kind!r}")
    api_version = obj.get("apiVersion")
    if api_version is not None and (
        not isinstance(api_version, str) or api_version.split("/")[0] != CLUSTER_POLICY_GROUP
    ):
        raise GpuOperatorError(
            f"expected apiVersion {CLUSTER_POLICY_GROUP}/v1, got {api_version!r}"
        )
    return _from_spec(mapping(obj.get("spec")))


def parse_gpu_operator_values(values: Any) -> GpuOperatorSpec:
    """The settings in gpu-operator Helm chart values (`helm get values --all`, or values.yaml).
    Empty values (None) give an all-unstated spec."""
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise GpuOperatorError(f"chart values are a mapping, not {type(values).__name__}")
    return _from_spec(values)


def normalise_version(value: Any) -> str | None:
    """An image tag as a comparable version: "v1.20.0" -> "1.20.0",
    "4.6.0-4.8.3-distroless" -> "4.6.0-4.8.3", "550.90.07-ubuntu22.04" -> "550.90.07".
    A digest ("sha256:...") is kept as written; a YAML float (1.20 read as 1.2) is refused."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    tag = str(value).strip()
    if tag.startswith("sha256:"):
        return tag
    while (stripped := _FLAVOUR_SUFFIX.sub("", tag)) != tag:
        tag = stripped
    return _LEADING_V.sub("", tag) or None


def _from_spec(spec: dict[str, Any]) -> GpuOperatorSpec:
    driver = mapping(spec.get("driver"))
    upgrade = mapping(driver.get("upgradePolicy"))
    dcgm_exporter = mapping(spec.get("dcgmExporter"))
    return GpuOperatorSpec(
        mig_strategy=_word(dig(spec, "mig").get("strategy")),
        device_plugin_enabled=_enabled(spec, "devicePlugin"),
        device_plugin_config_name=_name(dig(spec, "devicePlugin", "config").get("name")),
        device_plugin_config_default=_name(dig(spec, "devicePlugin", "config").get("default")),
        mig_manager_enabled=_enabled(spec, "migManager"),
        mig_manager_config_name=_name(dig(spec, "migManager", "config").get("name")),
        cdi_enabled=_enabled(spec, "cdi"),
        cdi_default=_bool(dig(spec, "cdi").get("default")),
        driver_enabled=_bool(driver.get("enabled")),
        driver_version=normalise_version(driver.get("version")),
        driver_auto_upgrade=_bool(upgrade.get("autoUpgrade")),
        driver_max_parallel_upgrades=_count(upgrade.get("maxParallelUpgrades")),
        driver_use_crd=_bool(driver.get("useNvidiaDriverCRD"))
        if "useNvidiaDriverCRD" in driver
        else _bool(mapping(driver.get("nvidiaDriverCRD")).get("enabled")),
        driver_use_precompiled=_bool(driver.get("usePrecompiled")),
        toolkit_enabled=_enabled(spec, "toolkit"),
        toolkit_version=_version(spec, "toolkit"),
        device_plugin_version=_version(spec, "devicePlugin"),
        dcgm_exporter_enabled=_enabled(spec, "dcgmExporter"),
        dcgm_exporter_version=_version(spec, "dcgmExporter"),
        dcgm_exporter_host_pid=_bool(dcgm_exporter.get("hostPID")),
        dcgm_exporter_host_network=_bool(dcgm_exporter.get("hostNetwork")),
        mig_manager_version=_version(spec, "migManager"),
        sandbox_workloads_enabled=_enabled(spec, "sandboxWorkloads"),
        sandbox_workloads_mode=_word(dig(spec, "sandboxWorkloads").get("mode")),
        sandbox_workloads_default=_word(dig(spec, "sandboxWorkloads").get("defaultWorkload")),
        vgpu_manager_enabled=_enabled(spec, "vgpuManager"),
        vgpu_device_manager_config_name=_name(dig(spec, "vgpuDeviceManager", "config").get("name")),
        psp_enabled=_enabled(spec, "psp"),
        kernel_module_type=_word(driver.get("kernelModuleType")),
        device_list_strategy=_word(_env(spec, "devicePlugin").get("DEVICE_LIST_STRATEGY")),
        toolkit_accepts_envvar_unprivileged=_env_flag(
            _env(spec, "toolkit").get("ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED")
        ),
    )


def _env(spec: dict[str, Any], section: str) -> dict[str, Any]:
    """A section's `env` list as name -> value (values as written: env values are strings)."""
    entries = dig(spec, section).get("env")
    if not isinstance(entries, list):
        return {}
    return {
        e["name"]: e.get("value")
        for e in entries
        if isinstance(e, dict) and isinstance(e.get("name"), str)
    }


def _env_flag(value: Any) -> bool | None:
    # Env values are strings; only an unambiguous spelling counts.
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def _enabled(spec: dict[str, Any], section: str) -> bool | None:
    return _bool(dig(spec, section).get("enabled"))


def _version(spec: dict[str, Any], section: str) -> str | None:
    return normalise_version(dig(spec, section).get("version"))


def _bool(value: Any) -> bool | None:
    # Only a real boolean: the string "false" is truthy, so guessing would invert a setting.
    return value if isinstance(value, bool) else None


def _word(value: Any) -> str | None:
    return (value.strip() or None) if isinstance(value, str) else None


def _name(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value
