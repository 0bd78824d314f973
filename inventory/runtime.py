"""How a GPU node hands devices to containers: CDI on or off, the device plugin's device list
strategy, and whether the toolkit honours NVIDIA_VISIBLE_DEVICES from unprivileged pods.

Bulletins condition some exposures on these ("CDI mode only"), so the node page shows them
next to the condition, each with where it was read, and "not known" when nothing says."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# Nothing upstream labels a node with its CDI state; the platform records it on nodes the
# GPU Operator does not manage (e.g. `nvidia-ctk runtime configure --cdi.enabled`).
CDI_NODE_LABEL = "gpuposture.io/cdi"
CDI_NODE_LABEL_ON = ("true", "enabled")


def runtime_facts(
    labels: Mapping[str, str],
    policies: Iterable[tuple[str, Mapping[str, Any]]],
    sharing_configs: Iterable[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Rows of (fact, value, source); `policies` are (ClusterPolicy name, parsed spec)."""
    policies = sorted(policies)
    return [_cdi(labels, policies), _strategy(policies, sharing_configs), _envvar(policies)]


def _cdi(labels: Mapping[str, str], policies: list) -> dict[str, Any]:
    fact = "CDI device injection"
    for name, spec in policies:
        if spec.get("cdi_enabled") is not None:
            value = "on" if spec["cdi_enabled"] else "off"
            return _row(fact, value, f"ClusterPolicy {name} spec.cdi.enabled")
    label = labels.get(CDI_NODE_LABEL)
    if label is not None:
        on = label.strip().lower() in CDI_NODE_LABEL_ON
        return _row(fact, "on" if on else "off", f"node label {CDI_NODE_LABEL}={label}")
    source = "ClusterPolicy leaves spec.cdi.enabled unset" if policies else "nothing states it"
    return _row(fact, None, source)


def _strategy(policies: list, sharing_configs: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    fact = "Device list strategy"
    for name, spec in policies:
        if spec.get("device_list_strategy"):
            source = f"ClusterPolicy {name} devicePlugin.env DEVICE_LIST_STRATEGY"
            return _row(fact, spec["device_list_strategy"], source)
    for config in sorted(sharing_configs, key=lambda c: (c["configmap"], c["key"])):
        if config.get("device_list_strategy"):
            source = f"device-plugin config {config['configmap']}/{config['key']}"
            return _row(fact, config["device_list_strategy"], source)
    return _row(fact, None, "not stated (the plugin's default is envvar)")


def _envvar(policies: list) -> dict[str, Any]:
    fact = "Toolkit honours NVIDIA_VISIBLE_DEVICES from unprivileged pods"
    for name, spec in policies:
        value = spec.get("toolkit_accepts_envvar_unprivileged")
        if value is not None:
            source = f"ClusterPolicy {name} toolkit.env"
            return _row(fact, "yes" if value else "no", source)
    return _row(fact, None, "not stated (the toolkit's default is yes)")


def _row(fact: str, value: str | None, source: str) -> dict[str, Any]:
    return {"fact": fact, "value": value, "source": source}
