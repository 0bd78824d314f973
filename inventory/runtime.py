"""How a GPU node hands devices to containers: CDI on or off, the device plugin's device list
strategy, and whether the toolkit honours NVIDIA_VISIBLE_DEVICES from unprivileged pods.

Bulletins condition some exposures on these ("CDI mode only"), so the node page shows them
next to the condition, each with where it was read, and "not known" when nothing says."""

from __future__ import annotations

import re
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
# GPU Operator v25.10.0 turned an unset ClusterPolicy spec.cdi.enabled on; before, it meant off.
CDI_DEFAULT_ON_FROM = (25, 10, 0)
_RELEASE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")
# Device list strategies by which the plugin names CDI devices for the runtime to inject.
CDI_STRATEGIES = ("cdi-annotations", "cdi-cri")
STRATEGY_FACT = "Device list strategy"


def runtime_facts(
    labels: Mapping[str, str],
    policies: Iterable[tuple[str, Mapping[str, Any]]],
    sharing_configs: Iterable[Mapping[str, Any]],
    operator_version: str | None = None,
    resolved: tuple[str | None, str] | None = None,
    toolkit_here: bool | None = None,
) -> list[dict[str, Any]]:
    """Rows of (fact, value, source); `policies` are (ClusterPolicy name, parsed spec);
    `operator_version` the GPU Operator's (it sets what an unset spec.cdi.enabled means);
    `resolved` the node's device-list strategy and its source as the sync resolved it
    (Node.device_list_strategy, from its plugin pod: the one reading STACK-008 uses too);
    `toolkit_here` whether the GPU Operator's toolkit runs on the node (Node.operator_toolkit):
    where it does not, the ClusterPolicy's `cdi` and `toolkit` settings say nothing of the
    node's runtime (None: not resolved, they are read as before)."""
    policies = sorted(policies)
    # A ClusterPolicy that disables the toolkit leaves every node's runtime to the host.
    off = [n for n, s in policies if toolkit_here is False or s.get("toolkit_enabled") is False]
    runtime = [(n, spec) for n, spec in policies if n not in off]
    strategy = (
        _row(STRATEGY_FACT, resolved[0], resolved[1])
        if resolved is not None and resolved[1]
        else _strategy(labels, policies, sharing_configs)
    )
    return [
        _cdi(labels, runtime, operator_version, strategy, off),
        strategy,
        _envvar(runtime, off),
    ]


def node_facts(
    labels: Mapping[str, str],
    policies: Iterable[tuple[str, Mapping[str, Any]]],
    sharing_configs: Iterable[Mapping[str, Any]],
    sharing_strategy: str | None,
    operator_version: str | None = None,
    resolved: tuple[str | None, str] | None = None,
    toolkit_here: bool | None = None,
) -> NodeFacts:
    """The facts bulletin conditions are judged against (inventory.conditions), from the same
    rows the node page shows, plus MIG and vGPU from GPU Feature Discovery's labels."""
    cdi, strategy, envvar = runtime_facts(
        labels, policies, sharing_configs, operator_version, resolved, toolkit_here
    )
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


def _cdi(
    labels: Mapping[str, str],
    policies: list,
    operator_version: str | None,
    strategy: Mapping[str, Any],
    excluded: list[str],
) -> dict[str, Any]:
    """`policies` the ClusterPolicies that configure this node's runtime; `excluded` those
    that do not (the Operator's toolkit does not run here): the node's own facts decide."""
    fact = "CDI device injection"
    for name, spec in policies:
        if spec.get("cdi_enabled") is not None:
            value = "on" if spec["cdi_enabled"] else "off"
            return _row(fact, value, f"ClusterPolicy {name} spec.cdi.enabled")
    label = labels.get(CDI_NODE_LABEL)
    if label is not None:
        on = label.strip().lower() in CDI_NODE_LABEL_ON
        return _row(fact, "on" if on else "off", f"node label {CDI_NODE_LABEL}={label}")
    if policies:
        unset = f"ClusterPolicy {policies[0][0]} leaves spec.cdi.enabled unset"
        default = operator_cdi_default(operator_version)
        if default is None:
            return _row(
                fact, None, f"{unset}; the GPU Operator's version, which decides, is unknown"
            )
        return _row(
            fact,
            "on" if default else "off",
            f"{unset}: GPU Operator {operator_version} defaults it "
            f"{'on' if default else 'off'} (on from v25.10.0)",
        )
    named = set(str(strategy["value"] or "").split(","))
    if named & set(CDI_STRATEGIES) and excluded:
        # The Operator's plugin names CDI devices as its ClusterPolicy's cdi.enabled says,
        # whatever runtime the node has: the strategy says how devices are listed, not that
        # the node's own runtime (not the Operator's toolkit) injects them by CDI.
        listed = f"{strategy['source']}: deviceListStrategy {strategy['value']} lists devices "
        return _row(
            fact,
            None,
            listed
            + "by CDI, which does not say the node's runtime injects them"
            + _not_here(excluded),
        )
    if named & set(CDI_STRATEGIES):
        # No GPU Operator in the cluster: a plugin deployed to name CDI devices for the node's
        # runtime (the earlier reading, kept; see tests/posture/test_rules_sharing_extra.py).
        return _row(fact, "on", f"{strategy['source']}: deviceListStrategy {strategy['value']}")
    return _row(fact, None, "nothing states it" + _not_here(excluded))


def _not_here(excluded: list[str]) -> str:
    if not excluded:
        return ""
    return (
        f"; ClusterPolicy {', '.join(sorted(excluded))} does not configure it here: the GPU "
        "Operator's container toolkit does not run on the node"
    )


def operator_toolkit(node: Any) -> bool | None:
    """Whether the GPU Operator's toolkit runs on a node as the sync resolved it (a snapshot
    Node or its stored dict); None for a node synced before it was resolved."""
    if isinstance(node, Mapping):
        return node.get("operator_toolkit")
    return getattr(node, "operator_toolkit", None)


def operator_cdi_default(version: str | None) -> bool | None:
    """What an unset spec.cdi.enabled means to this GPU Operator: on from v25.10.0, off
    before; None when the version is not known."""
    found = _RELEASE.match(str(version or "").strip())
    if not found:
        return None
    release = tuple(int(part or 0) for part in found.groups())
    return release >= CDI_DEFAULT_ON_FROM


def resolved_strategy(node: Any) -> tuple[str | None, str]:
    """(device-list strategy, source) the sync stored for a node (a snapshot Node or its
    stored dict); source "" for a node synced before it was resolved."""
    get = node.get if isinstance(node, Mapping) else lambda name: getattr(node, name, None)
    return get("device_list_strategy") or None, get("device_list_strategy_source") or ""


def _strategy(
    labels: Mapping[str, str], policies: list, sharing_configs: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    """A node synced before the sync resolved its strategy: the cluster's objects alone."""
    fact = STRATEGY_FACT
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


def _envvar(policies: list, excluded: list[str]) -> dict[str, Any]:
    fact = "Toolkit honours NVIDIA_VISIBLE_DEVICES from unprivileged pods"
    for name, spec in policies:
        value = spec.get("toolkit_accepts_envvar_unprivileged")
        if value is not None:
            source = f"ClusterPolicy {name} toolkit.env"
            return _row(fact, "yes" if value else "no", source)
    if excluded:  # a toolkit installed on the host keeps it in a file the API never shows
        return _row(fact, None, "not stated" + _not_here(excluded))
    return _row(fact, None, "not stated (the toolkit's default is yes)")


def _row(fact: str, value: str | None, source: str) -> dict[str, Any]:
    return {"fact": fact, "value": value, "source": source}
