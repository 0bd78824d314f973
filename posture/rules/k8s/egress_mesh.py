"""K8S-007 and Istio's mesh-wide REGISTRY_ONLY: what it does for a GPU pod's egress.

`meshConfig.outboundTrafficPolicy.mode: REGISTRY_ONLY` makes every sidecar refuse traffic to
hosts not in the mesh's registry (Services and ServiceEntries). It is not a NetworkPolicy: it
acts only where a pod runs the istio-proxy sidecar, and a container can go around the proxy
(running as the proxy's UID 1337, holding NET_ADMIN to rewrite the redirect, or by the
`traffic.sidecar.istio.io/excludeOutbound*` annotations), and a ServiceEntry for any host
opens it again. So a pod it covers is "mesh-restricted", with the reason, never "restricted".
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from inventory.snapshot import ConfigMap, Pod
from inventory.sources.cni_config import ISTIO_MESH_PURPOSE, OUTBOUND_MODE

SIDECAR = "istio-proxy"
MESH_RESTRICTED = "mesh-restricted"
MESH_NOTE = (
    "Istio's outboundTrafficPolicy REGISTRY_ONLY lets these pods' sidecars reach only "
    "registered services (ServiceEntries); it is no NetworkPolicy: a container that skips "
    "the sidecar (UID 1337, NET_ADMIN, excluded outbound IP ranges or ports) reaches the "
    "internet, and a ServiceEntry opens any host"
)


def registry_only(configmaps: Iterable[ConfigMap]) -> list[str]:
    """The Istio mesh configs ("namespace/name"), when every one seen says REGISTRY_ONLY
    (with revisions, which one a pod follows is not read); [] otherwise."""
    meshes = [c for c in configmaps if c.purpose == ISTIO_MESH_PURPOSE]
    if not meshes or any(c.data.get(OUTBOUND_MODE) != "REGISTRY_ONLY" for c in meshes):
        return []
    return sorted(f"{c.namespace}/{c.name}" for c in meshes)


def behind_sidecar(pod: Pod) -> bool:
    """The pod runs Istio's sidecar (as injected: a container, or a native sidecar init
    container, named istio-proxy) and sends its internet traffic through it. A hostNetwork
    pod's traffic is not redirected to it; nor is a pod's whose annotations let it skip the
    sidecar (skips_sidecar). A pod with `sidecar.istio.io/inject: "false"` has no istio-proxy
    container, so it is not behind one."""
    return (
        not pod.host_network
        and any(c.name == SIDECAR for c in pod.containers)
        and not skips_sidecar(pod)
    )


def skips_sidecar(pod: Pod) -> bool:
    """Istio's per-pod capture annotations send some of its traffic to the internet around the
    sidecar: excluded outbound ports (any: that port reaches every address), excluded outbound
    ranges holding much of the internet (0.0.0.0/0, ::/0, anything wider than a /8), or
    included outbound ranges that are not all traffic ("*"): the rest is not captured."""
    notes = pod.annotations
    if notes.get(EXCLUDE_PORTS, "").strip(" ,"):
        return True
    if any(_wide(r) for r in _ranges(notes.get(EXCLUDE_RANGES, ""))):
        return True
    if INCLUDE_RANGES in notes:
        return not any(r == "*" or _wide(r) for r in _ranges(notes[INCLUDE_RANGES]))
    return False


EXCLUDE_RANGES = "traffic.sidecar.istio.io/excludeOutboundIPRanges"
EXCLUDE_PORTS = "traffic.sidecar.istio.io/excludeOutboundPorts"
INCLUDE_RANGES = "traffic.sidecar.istio.io/includeOutboundIPRanges"


def _ranges(value: str) -> list[str]:
    return [r.strip() for r in value.split(",") if r.strip()]


def _wide(cidr: str) -> bool:
    """A range of /0 to /7: much of the internet. One not read counts as wide (never hides)."""
    try:
        return ipaddress.ip_network(cidr, strict=False).prefixlen < 8
    except ValueError:
        return cidr != "*"
