"""What a stored GPU node's stack components are, as the pages, API and checks read them. PURE.

inventory.components decides, at sync time, which components a node runs and where each
version came from; this module reads that record back (a snapshot Node or its stored dict):
each component's state, version and source, what STACK-004 reports as deployed but unknown,
and the firmware coverage the checklist shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inventory.components import (
    COMPONENT_FIELDS,
    ESSENTIAL,
    FIRMWARE_SOURCE,
    FIRMWARE_UNKNOWN,
    HOST_ONLY,
    HOST_READ,
    INSTALLED,
    NOT_INSTALLED,
    NOT_READ_ON_HOST,
    OTHER_PLUGIN,
    UNKNOWN,
)


def node_components(node: Any) -> dict[str, dict[str, str | None]]:
    """component -> {"state", "version", "source"} for a snapshot Node or its stored dict."""
    get = node.get if isinstance(node, Mapping) else lambda name: getattr(node, name, None)
    deployed, absent = get("deployed") or {}, get("not_installed") or {}
    result: dict[str, dict[str, str | None]] = {}
    for component, field_name in COMPONENT_FIELDS.items():
        version = get(field_name) or None
        if version:
            state, source = INSTALLED, _installed_source(component, deployed, get)
        elif component in absent:
            state, source = NOT_INSTALLED, absent[component]
        elif get("described_by") == HOST_ONLY and component not in HOST_READ:
            state, source = UNKNOWN, NOT_READ_ON_HOST
        else:
            state, source = UNKNOWN, deployed.get(component) or _unknown_source(component)
        result[component] = {"state": state, "version": version, "source": source}
    return result


# Where a driver version read from the node itself comes from, where a driver pod may say
# otherwise (an upgrade its pod has not finished: the label is what the loaded driver reports).
READ_FROM_NODE = {
    "gfd-label": "GPU Feature Discovery's label nvidia.com/cuda.driver-version.*",
    "gfd-label-legacy": "GPU Feature Discovery's labels nvidia.com/cuda.driver.*",
    "nvidia-smi": "the node's nvidia-smi -q -x import",
}


def _installed_source(component: str, deployed: Mapping[str, str], get: Any) -> str | None:
    """Where an installed component's version was read: its pod, or for a driver whose version
    the node itself reports (READ_FROM_NODE), that, with the pod that deploys it."""
    read = READ_FROM_NODE.get(get("driver_version_source")) if component == "driver" else None
    if read is None:
        return deployed.get(component) or _essential_source(component, get)
    pod = deployed.get(component)
    return f"{read} (the version the loaded driver reports); deployed by {pod}" if pod else read


def _essential_source(component: str, get: Any) -> str | None:
    if component == "driver":
        return get("driver_version_source")
    return FIRMWARE_SOURCE if component == "firmware" else None


def _unknown_source(component: str) -> str:
    if component == "firmware":
        return FIRMWARE_UNKNOWN
    if component in ESSENTIAL:
        return "no pod shows it: it runs on the host, where the API does not show its version"
    return "the snapshot does not show whether it is deployed"


def deployed_unknown(node: Any) -> list[str]:
    """Components whose version is unknown although they are deployed on the node (or, for the
    driver, toolkit and device plugin, may be): what STACK-004 reports. On a node described by
    nvidia-smi only, just what nvidia-smi shows (HOST_READ)."""
    get = node.get if isinstance(node, Mapping) else lambda name: getattr(node, name, None)
    deployed = get("deployed") or {}
    host_only = get("described_by") == HOST_ONLY
    # Another project's plugin (HAMi's) runs there: its version is its image's, known, only
    # not one NVIDIA's bulletins name; nothing a user could do would make it "known".
    other_plugin = str(deployed.get("device_plugin") or "").endswith(OTHER_PLUGIN)
    return [
        component
        for component, entry in node_components(node).items()
        if entry["state"] == UNKNOWN
        and (component in (*ESSENTIAL, "device_plugin") or component in deployed)
        and (not host_only or component in HOST_READ)
        and not (component == "device_plugin" and other_plugin)
    ]


def firmware_coverage(gpu_nodes: int, firmware_known: int) -> dict[str, object]:
    """How many GPU nodes have a known VBIOS version: coverage, never a finding by itself."""
    percent = round(100 * firmware_known / gpu_nodes, 1) if gpu_nodes else None
    return {
        "gpu_nodes": gpu_nodes,
        "firmware_known": firmware_known,
        "firmware_percent": percent,  # None: no GPU node, so nothing to cover
        "firmware_source": "nvidia-smi -q -x imports (the Kubernetes API never shows the VBIOS)",
    }
