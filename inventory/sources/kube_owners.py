"""The custom resources a live sync reads so that owner chains reach the top controller, as a
snapshot's do. PURE: inventory/sources/kube.py makes the calls.

A `kubectl get` snapshot that holds RayServices, JobSets, InferenceServices... resolves a
pod to them (inventory/owners.py); a live sync that listed only the built-in kinds stopped at
the first custom resource (a RayCluster, whose own owner was never read), so the same cluster
named different finding subjects live and by snapshot, and a switch between the two resolved
and reopened findings. After the built-in lists, the live sync reads the kinds their
controller ownerReferences name that it did not list (discovered per group/version, listed
whole), then the kinds those name, round by round, within MAX_ROUNDS and MAX_KINDS. Only
controller references count (owner_links reads no other), and only those of objects a pod's
chain can pass through, so an operator that owns a ConfigMap costs no read. Each object read
is cut to what owner resolution needs (slim), so a cluster's RayClusters cost a few hundred
bytes each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from inventory.sources.base import SourceError
from inventory.sources.kube_admission import ADMISSION_CUSTOM_KINDS
from inventory.sources.kube_kinds import DRA_KINDS, KINDS, OPTIONAL_CUSTOM_KINDS
from inventory.sources.owner_links import template_fields
from inventory.sources.raw import dicts, mapping, text

MAX_ROUNDS = 6  # owners of owners: KServe's, the longest known, needs four above a Deployment
MAX_KINDS = 30  # distinct custom kinds read per sync, so a misbehaving operator stays cheap
PREFIX = "owner:"  # listing label: PREFIX + "group/Kind" (its progress, never watched)
# The built-in kinds whose objects may be on a pod's chain (a Pod may own pods).
CHAIN_KINDS = frozenset(
    ("Pod", "ReplicaSet", "Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob")
)
_API_GROUPS = {
    "CoreV1Api": "",
    "AppsV1Api": "apps",
    "BatchV1Api": "batch",
    "RbacAuthorizationV1Api": "rbac.authorization.k8s.io",
    "NetworkingV1Api": "networking.k8s.io",
    "NodeV1Api": "node.k8s.io",
}
# (group, kind) of what the lists before this read: their owners are in hand already.
LISTED: frozenset[tuple[str, str]] = frozenset(
    {(_API_GROUPS[api], kind) for kind, api, _ in KINDS}
    | {(group, label.rpartition("/")[2]) for label, group, _, _ in OPTIONAL_CUSTOM_KINDS}
    | {("resource.k8s.io", kind) for kind in DRA_KINDS}
    | {(group, kind) for _, group, _, _, kind in ADMISSION_CUSTOM_KINDS}
)

# The API groups of the common ML and batch controllers that own pods' controllers (KubeRay,
# JobSet, LeaderWorkerSet, Kubeflow's training operator, notebooks and Katib, Kubeflow Trainer,
# KServe and the Knative Serving under its serverless mode, NVIDIA's NIM Operator, Spark,
# Argo, Volcano, Kueue, CodeFlare's AppWrapper, Run:ai): deploy/rbac.yaml grants `list` on
# each whole group (their controllers' kinds vary by release), tests/test_deploy_rbac.py
# keeps the two in step. Another group's owners are read where the account may list them.
OWNER_GROUPS = (
    "ray.io",
    "jobset.x-k8s.io",
    "leaderworkerset.x-k8s.io",
    "kubeflow.org",
    "trainer.kubeflow.org",
    "serving.kserve.io",
    "serving.knative.dev",
    "apps.nvidia.com",
    "sparkoperator.k8s.io",
    "argoproj.io",
    "batch.volcano.sh",
    "kueue.x-k8s.io",
    "workload.codeflare.dev",
    "run.ai",
    "scheduling.run.ai",
)

OwnerKind = tuple[str, str]  # (apiVersion, kind) as an ownerReference names it


def unread_owner_kinds(
    objects: Iterable[dict[str, Any]], asked: set[tuple[str, str]], *, first: bool
) -> list[OwnerKind]:
    """(apiVersion, kind) of the controller owners of `objects` that no list read and that
    are not in `asked` ((group, kind) already tried), sorted. In the `first` round only the
    CHAIN_KINDS' objects are looked at; later rounds are owners already, all on a chain.
    A core-group owner (apiVersion without a group) is left out: the custom-objects API does
    not reach /api/v1, and the core kinds on a pod's chain (Pod, Node) are listed."""
    found: dict[tuple[str, str], OwnerKind] = {}
    for obj in objects:
        if first and obj.get("kind") not in CHAIN_KINDS:
            continue
        for ref in dicts(mapping(obj.get("metadata")).get("ownerReferences")):
            api_version, kind = text(ref.get("apiVersion")) or "", text(ref.get("kind")) or ""
            group, _, version = api_version.rpartition("/")
            key = (group, kind)
            if ref.get("controller") is not True or not (group and version and kind):
                continue
            if key not in LISTED and key not in asked:
                found.setdefault(key, (api_version, kind))
    return [found[key] for key in sorted(found)]


def resource_of(discovery: Any, kind: str) -> str | None:
    """The plural an APIResourceList serves `kind` under (subresources left out), None when
    the group/version does not serve it. Listed across namespaces either way: the same path
    lists a namespaced resource in all namespaces and a cluster-scoped one."""
    resources = discovery.get("resources") if isinstance(discovery, dict) else None
    for resource in dicts(resources):
        name = text(resource.get("name")) or ""
        if resource.get("kind") == kind and name and "/" not in name:
            verbs = resource.get("verbs")
            if isinstance(verbs, list) and "list" not in verbs:
                return None  # served, but cannot be listed: nothing to read
            return name
    return None


def slim(item: dict[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """Only what owner resolution reads: kind, apiVersion, the metadata naming the object, its
    scope and its owners, and an Argo Rollout's workloadRef (inventory/sources/owner_links.py)."""
    metadata = mapping(item.get("metadata"))
    kept = ("name", "namespace", "uid", "ownerReferences", "labels")
    slimmed = {
        "apiVersion": text(item.get("apiVersion")) or api_version,
        "kind": text(item.get("kind")) or kind,
        "metadata": {key: metadata[key] for key in kept if key in metadata},
    }
    # An Argo Rollout's workloadRef names the workload whose template it runs: the top of
    # its pods' chain, as a snapshot of the same cluster has it.
    if spec := template_fields({**item, **slimmed}):
        slimmed["spec"] = spec
    return slimmed


def label_of(api_version: str, kind: str) -> str:
    return f"{PREFIX}{api_version.rpartition('/')[0]}/{kind}"


def owner_warning(api_version: str, kind: str, error: str) -> str:
    """The run's warning for an owner kind that could not be read (not "not served")."""
    group = api_version.rpartition("/")[0]
    return (
        f"{kind} ({api_version}) could not be read, so owner chains stop below it: a pod it "
        f"controls is filed under the object it owns (e.g. a RayCluster, not its RayService), "
        f"unlike a snapshot that holds it; grant list on {group} (deploy/rbac.yaml): "
        f"{error}"
    )[:600]


def limit_warning(left: Iterable[OwnerKind]) -> str:
    """More owner kinds than MAX_KINDS or MAX_ROUNDS allow: the ones left unread."""
    names = ", ".join(f"{kind} ({api})" for api, kind in left)
    return (
        f"owner chains stop at {names}: a live sync reads at most {MAX_KINDS} custom owner "
        f"kinds, {MAX_ROUNDS} owners deep"
    )[:600]


Discover = Callable[[str, str], Any]  # (group, version) -> its APIResourceList
ListOwner = Callable[[str, str, str], list[dict[str, Any]]]  # (apiVersion, kind, plural)


def owners_read(
    objects: list[dict[str, Any]], discover: Discover, list_owner: ListOwner
) -> tuple[list[dict[str, Any]], list[str]]:
    """The owner objects the chains of `objects` name, round by round, and the run's warnings.
    `discover` and `list_owner` raise SourceError; not served (HTTP 404) is nothing to read,
    any other failure a warning: never a failed sync, only shorter chains."""
    read: list[dict[str, Any]] = []
    warnings: list[str] = []
    asked: set[tuple[str, str]] = set()
    discovered: dict[str, Any] = {}  # apiVersion -> its discovery, or the SourceError it gave
    batch = objects
    for depth in range(MAX_ROUNDS + 1):
        wanted = unread_owner_kinds(batch, asked, first=depth == 0)
        room = MAX_KINDS - len(asked) if depth < MAX_ROUNDS else 0
        if wanted[room:]:
            warnings.append(limit_warning(wanted[room:]))
        if not wanted[:room]:
            break
        batch = []
        for api_version, kind in wanted[:room]:
            asked.add((api_version.rpartition("/")[0], kind))
            batch.extend(_read_kind(api_version, kind, discover, list_owner, discovered, warnings))
        read.extend(batch)
    return read, warnings


def _read_kind(
    api_version: str,
    kind: str,
    discover: Discover,
    list_owner: ListOwner,
    discovered: dict[str, Any],
    warnings: list[str],
) -> list[dict[str, Any]]:
    if api_version not in discovered:  # each group/version is discovered once per sync
        group, _, version = api_version.rpartition("/")
        try:
            discovered[api_version] = discover(group, version)
        except SourceError as exc:
            discovered[api_version] = exc
    found = discovered[api_version]
    if isinstance(found, SourceError):
        return _failed(api_version, kind, found, warnings)
    plural = resource_of(found, kind)
    if plural is None:
        return []  # the group/version is served without this kind: nothing to read
    try:
        return list_owner(api_version, kind, plural)
    except SourceError as exc:
        return _failed(api_version, kind, exc, warnings)


def _failed(
    api_version: str, kind: str, error: SourceError, warnings: list[str]
) -> list[dict[str, Any]]:
    if "HTTP 404" not in str(error):  # not served (no CRD, no such version) is an answer
        warnings.append(owner_warning(api_version, kind, str(error)))
    return []
