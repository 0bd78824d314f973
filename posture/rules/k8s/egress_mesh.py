"""K8S-007 and Istio's mesh-wide REGISTRY_ONLY: what it does for a GPU pod's egress.

`meshConfig.outboundTrafficPolicy.mode: REGISTRY_ONLY` makes every sidecar refuse traffic to
hosts not in the mesh's registry (Services and ServiceEntries). It is not a NetworkPolicy: it
acts only where a pod runs the istio-proxy sidecar, and a container can go around the proxy
(running as the proxy's UID 1337, holding NET_ADMIN to rewrite the redirect, or by the
`traffic.sidecar.istio.io/excludeOutbound*` annotations), and a ServiceEntry for any host
opens it again. So a pod it covers is "mesh-restricted", with the reason, never "restricted".
"""

from __future__ import annotations

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
    container, named istio-proxy). A hostNetwork pod's traffic is not redirected to it."""
    return not pod.host_network and any(c.name == SIDECAR for c in pod.containers)
