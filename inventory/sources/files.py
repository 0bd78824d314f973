"""Source: kubectl JSON (or YAML) snapshot files and directories."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inventory.sources.base import Progress, SourceError
from inventory.sources.images import component_of
from inventory.sources.normalise import SnapshotError
from inventory.sources.nul_strings import NulReplaced
from inventory.sources.snapshot_file import load_snapshot_objects

# Kinds whose absence the checks read as "none in the cluster". `kubectl get` lists only the
# kinds it is asked for, so a snapshot with pods and none of one of these may not have asked.
ABSENCE_READ = {
    "ResourceQuota": ("resourcequotas", "K8S-001 reads every tenant namespace as without quota"),
    "NetworkPolicy": ("networkpolicies", "K8S-007 reads every GPU pod's egress as unrestricted"),
    # Every cluster has a Service (`default/kubernetes`): none means none was asked for.
    "Service": (
        "services,ingresses",
        "K8S-006 sees no notebook or dashboard reached through a NodePort, LoadBalancer or Ingress",
    ),
    "ClusterRoleBinding": (
        "roles,clusterroles,rolebindings,clusterrolebindings",
        "the RBAC checks (K8S-003/004/005/008, DRA-001) see no binding at all",
    ),
    "ServiceAccount": (
        "serviceaccounts",
        "POD-010 sees no cloud identity federated through ServiceAccount annotations (GKE "
        "Workload Identity; IRSA or Azure Workload Identity where pods carry no env)",
    ),
    # Every cluster has namespaces (default, kube-system): none means none was asked for.
    "Namespace": (
        "namespaces",
        "tenants that claim namespaces by label, platform labels and Pod Security labels are "
        "read from the namespaces the last sync that read them stored (the run says when), "
        "and unknown where none did (TEN-001 and K8S-009 say so)",
    ),
}


class SnapshotFileSource:
    def __init__(self, paths: Sequence[str | Path]) -> None:
        if not paths:
            raise SourceError("no snapshot files given", retryable=False)
        self.paths = [str(p) for p in paths]
        self.warnings: list[str] = []
        self.unlisted: list[str] = []  # kinds certainly not read (inventory.kinds_read)
        # Files read, for the run's summary: a directory is read to any depth.
        self.files_read: int | None = None

    def describe(self) -> str:
        return "snapshot: " + ", ".join(self.paths)

    def read(self, progress: Progress) -> list[dict[str, Any]]:
        nul, read = NulReplaced(), []
        try:
            objects = load_snapshot_objects(self.paths, nul, read)
        except (SnapshotError, OSError) as exc:
            raise SourceError(f"the snapshot could not be read: {exc}", retryable=False) from exc
        self.files_read = len(read)
        counts = Counter(o.get("kind", "?") for o in objects if isinstance(o, dict))
        for kind, count in counts.items():
            progress(kind, count)
        self.warnings = absence_warnings(counts) + openshift_warnings(objects, counts)
        self.warnings += gpu_operator_warnings(objects)
        if replaced := nul.warning():
            self.warnings.append(replaced)
        # ResourceClaims, ResourceSlices and RuntimeClasses the pods and claims name but none
        # exported: inventory.kinds_read, from the normalised snapshot (the sync says them).
        self.unlisted = []
        if volumes := volumes_unread(objects, counts):
            self.unlisted += volumes
            self.warnings.append(VOLUMES_UNREAD)
        return objects


def absence_warnings(counts: Counter[str]) -> list[str]:
    """What a snapshot of a cluster (it holds pods) leaves the checks to read as absent."""
    if not counts.get("Pod"):
        return []
    return [
        f"the snapshot holds pods but no {kind}, so {effect}; if it did not ask for them, "
        f"add {resources} to `kubectl get`"
        for kind, (resources, effect) in ABSENCE_READ.items()
        if not counts.get(kind)
    ]


SCC_WARNING = (
    "the snapshot is of an OpenShift cluster but holds no SecurityContextConstraints, so "
    "K8S-009 cannot tell what its pod admission refuses and says unknown; snapshot them with "
    "a separate `kubectl get securitycontextconstraints -o json` (docs/clusters.md)"
)


def openshift_warnings(objects: list[dict[str, Any]], counts: Counter[str]) -> list[str]:
    """OpenShift admits pods by its SecurityContextConstraints, a kind only it serves: a
    snapshot of it (its `openshift-*` namespaces, Routes or node labels) without them."""
    if not counts.get("Pod") or counts.get("SecurityContextConstraints"):
        return []
    return [SCC_WARNING] if any(_openshift_sign(o) for o in objects) else []


def _openshift_sign(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    kind, name = obj.get("kind"), str(metadata.get("name") or "")
    if kind == "Namespace":
        return name == "openshift" or name.startswith("openshift-")
    if kind == "Route":
        return str(obj.get("apiVersion") or "").startswith("route.openshift.io/")
    labels = metadata.get("labels")
    return kind == "Node" and isinstance(labels, dict) and "node.openshift.io/os_id" in labels


CLUSTERPOLICY_WARNING = (
    "the snapshot runs the GPU Operator ({where}) but holds no ClusterPolicy "
    "(clusterpolicies.nvidia.com), so what it sets (which device-plugin and MIG configs it "
    "names, CDI, how drivers are managed) is not read: the device-plugin and mig-parted "
    "configs of the platform namespaces are matched to nodes by their labels instead, as "
    "docs/clusters.md describes (a warning names each one matched so); K8S-004 reports "
    "writes to it "
    "without the object (`target_seen` false); add clusterpolicies.nvidia.com to "
    "`kubectl get`, or snapshot it separately on a cluster that serves it (docs/clusters.md)"
)


VOLUMES_UNREAD = (
    "the snapshot holds pods that name PersistentVolumeClaims (spec.volumes[]."
    "persistentVolumeClaim or a generic ephemeral volume) but no PersistentVolume, so claims "
    "bound to hostPath or local PersistentVolumes are not judged (POD-003, POD-005): the "
    "findings that came through a claim are kept as they were, not re-judged; add "
    "persistentvolumes to `kubectl get`"
)


def volumes_unread(objects: list[dict[str, Any]], counts: Counter[str]) -> list[str]:
    """["PersistentVolume"] when a pod names a PersistentVolumeClaim and the snapshot holds no
    PersistentVolume: a Bound claim always has one, and the kubernetes.io/pvc-protection and
    pv-protection finalizers keep both while a pod uses the claim, so none was read."""
    if counts.get("PersistentVolume") or not counts.get("Pod"):
        return []
    return ["PersistentVolume"] if any(_names_volume_claims(o) for o in objects) else []


def _names_volume_claims(obj: Any) -> bool:
    if not isinstance(obj, dict) or obj.get("kind") != "Pod":
        return False
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    volumes = spec.get("volumes") if isinstance(spec.get("volumes"), list) else []
    return any(
        isinstance(v, dict) and ("persistentVolumeClaim" in v or "ephemeral" in v) for v in volumes
    )


def gpu_operator_warnings(objects: list[dict[str, Any]]) -> list[str]:
    """The GPU Operator always has a ClusterPolicy (it does nothing without one): a snapshot
    with the operator's Deployment or pod and none left it out of `kubectl get`. Kyverno's
    ClusterPolicy is another kind of the same name."""
    if any(_nvidia_policy(o) for o in objects):
        return []
    where = sorted({ref for o in objects if (ref := _operator_ref(o))})
    return [CLUSTERPOLICY_WARNING.format(where=", ".join(where))] if where else []


def _nvidia_policy(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and obj.get("kind") == "ClusterPolicy"
        and str(obj.get("apiVersion") or "").startswith("nvidia.com/")
    )


def _operator_ref(obj: Any) -> str | None:
    """ "Deployment NS/NAME" (or the Pod) when it runs the GPU Operator's image."""
    if not isinstance(obj, dict) or obj.get("kind") not in ("Deployment", "Pod"):
        return None
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    if obj.get("kind") == "Deployment":
        template = spec.get("template") if isinstance(spec.get("template"), dict) else {}
        spec = template.get("spec") if isinstance(template.get("spec"), dict) else {}
    containers = spec.get("containers") if isinstance(spec.get("containers"), list) else []
    images = [str(c.get("image") or "") for c in containers if isinstance(c, dict)]
    if not any(component_of(image) == "gpu_operator" for image in images if image):
        return None
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return f"{obj['kind']} {metadata.get('namespace') or ''}/{metadata.get('name') or ''}"
