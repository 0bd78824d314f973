"""PersistentVolumes of type hostPath or local, as a pod reaches them through its claims. PURE.

Pod Security's baseline forbids a hostPath volume but not a PersistentVolumeClaim, so a PV of
type hostPath (or local) bound to a tenant's claim hands the node path to the pod just the same.
The binding is the PV's `spec.claimRef` (namespace and name of the claim), which the PV
controller sets when it binds and an administrator sets to pre-bind; a Released or Failed PV is
bound to nothing. A PV not in the snapshot leaves the claim unresolved (nothing is assumed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from inventory.snapshot import Pod
from inventory.sources.raw import dig, mapping, name_of, text

_UNBOUND_PHASES = ("Released", "Failed")


@dataclass(frozen=True)
class NodePathVolume:
    name: str  # the PersistentVolume
    path: str  # on the node
    local: bool = False  # of type local (a disk, partition or directory), not hostPath


def claim_node_paths(
    persistent_volumes: Iterable[dict[str, Any]],
) -> dict[tuple[str, str], NodePathVolume]:
    """(namespace, claim) -> the hostPath or local PV bound to it."""
    found: dict[tuple[str, str], NodePathVolume] = {}
    for pv in persistent_volumes:
        spec = mapping(pv.get("spec"))
        path = node_path(pv)
        claim = mapping(spec.get("claimRef"))
        namespace, claim_name = text(claim.get("namespace")), text(claim.get("name"))
        if not path or not namespace or not claim_name:
            continue
        if text(dig(pv, "status").get("phase")) in _UNBOUND_PHASES:
            continue
        local = not text(dig(spec, "hostPath").get("path"))
        found[(namespace, claim_name)] = NodePathVolume(name_of(pv), path, local)
    return found


def node_path(pv: dict[str, Any]) -> str | None:
    """The node path of a PV of type hostPath or local, bound or not (None for other types)."""
    spec = mapping(pv.get("spec"))
    return text(dig(spec, "hostPath").get("path")) or text(dig(spec, "local").get("path"))


def with_claim_paths(pod: Pod, claims: Mapping[tuple[str, str], NodePathVolume]) -> Pod:
    """The pod with each claim bound to a hostPath or local PV given that PV and its path."""
    if not claims or not any(v.claim for v in pod.volumes):
        return pod
    volumes = []
    for volume in pod.volumes:
        bound = claims.get((pod.namespace, volume.claim or ""))
        if bound is not None:
            volume = replace(
                volume, persistent_volume=bound.name, pv_path=bound.path, pv_local=bound.local
            )
        volumes.append(volume)
    return replace(pod, volumes=tuple(volumes))
