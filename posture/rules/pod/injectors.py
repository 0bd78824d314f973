"""What an injector added to a pod, as the pod's own annotations record it. PURE.

An admission webhook that injects containers (and volumes) changes the Pod at its creation and
never the workload's template: the thing to change is the injector's configuration, not the
tenant's manifest (DESIGN §5). The pod-hardening checks keep each workload's finding (its tenant
runs what was injected) and mark what an injector added (`injected_by` on the container's or
volume's entry), and posture.actions makes the fix one action at the injector:
- a mesh's sidecar: Istio's `sidecar.istio.io/status` lists the containers it injected,
  Linkerd's `linkerd.io/proxy-version` says its proxy (and init container) were ("istio",
  "linkerd": their image is set in the mesh's injector config, POD-007);
- an OpenKruise SidecarSet: `kruise.io/sidecarset-hash` lists, per SidecarSet, the containers
  it injected (`sidecarList`; an older Kruise wrote no list: then, where it names one SidecarSet
  alone, the containers Kruise marks with the `IS_INJECTED` env variable). A volume is the
  SidecarSet's where only its containers mount it and the workload's template, where the
  snapshot holds it, has no volume of that name (Kruise adds the SidecarSet's volumes but keeps
  the pod's own of the same name): "SidecarSet <name>".
"""

from __future__ import annotations

import json
from typing import Any

from inventory.snapshot import Pod, VolumeMount
from inventory.snapshot.pod_annotations import KRUISE_SIDECARSET_HASH, KRUISE_SIDECARSET_LIST

# Linkerd's injector adds these containers and records its proxy's version on the pod.
LINKERD_CONTAINERS = ("linkerd-proxy", "linkerd-init", "linkerd-network-validator")
KRUISE_INJECTED_ENV = "IS_INJECTED"  # Kruise sets it on every container a SidecarSet injects
SIDECARSET = "SidecarSet "  # the start of a SidecarSet injector's label


def mesh_containers(pod: Pod) -> dict[str, str]:
    """container name -> the mesh ("istio", "linkerd") whose injector added it."""
    found: dict[str, str] = {}
    listed = _json(pod.annotations.get("sidecar.istio.io/status", ""))
    for field in ("containers", "initContainers"):
        names = listed.get(field)
        found.update({str(n): "istio" for n in names if n} if isinstance(names, list) else {})
    if pod.annotations.get("linkerd.io/proxy-version"):
        found.update({n: "linkerd" for n in LINKERD_CONTAINERS})
    return found


def sidecarset_containers(pod: Pod) -> dict[str, str]:
    """container name -> "SidecarSet <name>" for each container a Kruise SidecarSet injected."""
    recorded = _json(pod.annotations.get(KRUISE_SIDECARSET_HASH, ""))
    listed = {n.strip() for n in pod.annotations.get(KRUISE_SIDECARSET_LIST, "").split(",")}
    names = sorted({str(n) for n in recorded} | (listed - {""}))
    found: dict[str, str] = {}
    for name in names:
        entry = recorded.get(name)
        sidecars = entry.get("sidecarList") if isinstance(entry, dict) else None
        if isinstance(sidecars, list):
            found.update({str(c): SIDECARSET + name for c in sidecars if c})
    if not found and len(names) == 1:
        # No list recorded: the one SidecarSet named injected the containers Kruise marked.
        marked = (
            c.name for c in pod.containers if any(e.name == KRUISE_INJECTED_ENV for e in c.env)
        )
        found = {c: SIDECARSET + names[0] for c in marked}
    return found


def injected_containers(pod: Pod) -> dict[str, str]:
    """container name -> the injector that added it: a mesh, or "SidecarSet <name>"."""
    return {**sidecarset_containers(pod), **mesh_containers(pod)}


def injected_volumes(pod: Pod, template: Pod | None) -> dict[str, str]:
    """volume name -> "SidecarSet <name>" for each volume a SidecarSet added to the pod: only
    containers that SidecarSet injected mount it, and the workload's template (`template`,
    None where the snapshot holds none) has no volume of that name. A volume no container
    mounts, or one the workload's own containers mount too, is the workload's."""
    injected = sidecarset_containers(pod)
    if not injected:
        return {}
    own = {v.name for v in template.volumes} if template is not None else set()
    found = {}
    for volume in pod.volumes:
        mounters = {
            c.name for c in pod.containers for m in c.volume_mounts if m.name == volume.name
        }
        injectors = {injected.get(name, "") for name in mounters}
        if mounters and len(injectors) == 1 and "" not in injectors and volume.name not in own:
            found[volume.name] = injectors.pop()
    return found


def sidecarset_of(entries: Any) -> str | None:
    """The one SidecarSet ("SidecarSet <name>") that injected every entry (containers' and
    volumes' evidence, each with `injected_by`), None where any is the workload's own or
    another injector's, or there is none."""
    if not isinstance(entries, list) or not entries:
        return None
    found = {str(e.get("injected_by") or "") if isinstance(e, dict) else "" for e in entries}
    one = found.pop() if len(found) == 1 else ""
    return one if one.startswith(SIDECARSET) else None


def _mounts(mounts: tuple[VolumeMount, ...], volume: str) -> bool:
    return any(m.name == volume for m in mounts)


def _json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
