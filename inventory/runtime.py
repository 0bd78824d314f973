"""How a GPU node hands devices to containers: CDI on or off, the device plugin's device list
strategy, and whether the toolkit honours NVIDIA_VISIBLE_DEVICES from unprivileged pods.

Bulletins condition some exposures on these ("CDI mode only"), so the node page shows them
next to the condition, each with where it was read, and "not known" when nothing says."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from inventory.conditions import NodeFacts

# Nothing upstream labels a node with its CDI state; the platform records it on nodes the
# GPU Operator does not manage (e.g. `nvidia-ctk runtime configure --cdi.enabled`).
CDI_NODE_LABEL = "gpuposture.io/cdi"
CDI_NODE_LABEL_ON = ("true", "enabled")
PRODUCT_LABEL, MIG_CAPABLE = "nvidia.com/gpu.product", "nvidia.com/mig.capable"
VGPU_LABEL, PLUGIN_CONFIG_LABEL = "nvidia.com/vgpu.present", "nvidia.com/device-plugin.config"
_GFD_SOURCE = "GPU Feature Discovery's node labels"


def runtime_facts(
    labels: Mapping[str, str],
    policies: Iterable[tuple[str, Mapping[str, Any]]],
    sharing_configs: Iterable[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Rows of (fact, value, source); `policies` are (ClusterPolicy name, parsed spec)."""
    policies = sorted(policies)
    return [
        _cdi(labels, policies),
        _strategy(labels, policies, sharing_configs),
        _envvar(policies),
    ]


def node_facts(
    labels: Mapping[str, str],
    policies: Iterable[tuple[str, Mapping[str, Any]]],
    sharing_configs: Iterable[Mapping[str, Any]],
    sharing_strategy: str | None,
) -> NodeFacts:
    """The facts bulletin conditions are judged against (inventory.conditions), from the same
    rows the node page shows, plus MIG and vGPU from GPU Feature Discovery's labels."""
    cdi, strategy, envvar = runtime_facts(labels, policies, sharing_configs)
    strategies = strategy["value"]
    return NodeFacts(
        cdi=None if cdi["value"] is None else cdi["value"] == "on",
        device_list_strategies=frozenset(strategies.split(",")) if strategies else None,
        mig=_gfd_flag(labels, sharing_strategy == "mig", labels.get(MIG_CAPABLE) == "false"),
        vgpu=_gfd_flag(
            labels, sharing_strategy == "vgpu" or labels.get(VGPU_LABEL) == "true", False
        ),
        sharing=None if sharing_strategy in (None, "unknown") else sharing_strategy,
        envvar_unprivileged=None if envvar["value"] is None else envvar["value"] == "yes",
        sources={
            "cdi": cdi["source"],
            "device_list_strategy": strategy["source"],
            "envvar_unprivileged": envvar["source"],
            "mig": _GFD_SOURCE,
            "vgpu": _GFD_SOURCE,
            "sharing": "the node's sharing strategy",
        },
    )


def _gfd_flag(labels: Mapping[str, str], on: bool, off: bool) -> bool | None:
    """On, off, or unknown: where GPU Feature Discovery labelled the node (it has a product
    label), its silence about MIG or vGPU means they are not there."""
    if on:
        return True
    return False if off or PRODUCT_LABEL in labels else None


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


def _strategy(
    labels: Mapping[str, str], policies: list, sharing_configs: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    fact = "Device list strategy"
    for name, spec in policies:
        if spec.get("device_list_strategy"):
            source = f"ClusterPolicy {name} devicePlugin.env DEVICE_LIST_STRATEGY"
            return _row(fact, spec["device_list_strategy"], source)
    # The node's own device-plugin config (its label names the key) first, then any.
    own = labels.get(PLUGIN_CONFIG_LABEL)
    ordered = sorted(sharing_configs, key=lambda c: (c["key"] != own, c["configmap"], c["key"]))
    for config in ordered:
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
