"""The workload behind a pod: its owner chain resolved. PURE: no Django, no network.

A pod-level finding is about the thing to change, which is the pod's template in the controller
at the top of its chain: a Deployment (pod -> ReplicaSet -> Deployment), a StatefulSet, a
DaemonSet, a Job, a CronJob (pod -> Job -> CronJob), the custom resource that controls any of
these (an InferenceService above Knative's Revision and its Deployment, a RayJob or RayService
above the RayCluster it generates, a TrainJob above its JobSet, a NIMService above its
Deployment), or the bare Pod. Each controller reverts an edit of what it generates, and the
generated names change at every rollout: only the top one is the thing one action changes,
and stays the same finding across upgrades.

The chain is read from the snapshot's owner links (inventory.snapshot.OwnerLink: the controller
ownerReference of every object of the snapshot a pod's chain passes through) and followed up to
MAX_DEPTH links, to the owner the highest object present names (that owner itself may be absent: a
snapshot without it, or a live sync whose account may not list its group; a live sync reads the
custom owners it may, inventory/sources/kube_owners.py). A namespaced object's owner is in its
namespace, or cluster-scoped (the GPU Operator's ClusterPolicy owns its DaemonSets): the subject is
then the cluster-scoped object, with no namespace. A pod owned by a pod (Spark's executors by their
driver) is the owner pod's workload when that pod is in the snapshot, else `Pod <owner>`. Where the
snapshot lacks the pod's own owner, what real clusters guarantee:
- the Deployment controller names each ReplicaSet `<deployment>-<pod-template-hash>` and
  labels its pods `pod-template-hash: <hash>`;
- the CronJob controller names each Job `<cronjob>-<scheduled time in minutes>` and its pods
  carry `batch.kubernetes.io/job-name` (and the older `job-name`): it is the CronJob's only
  when a CronJob of that name exists in the snapshot;
- a LeaderWorkerSet (sigs.k8s.io/lws) runs its leaders in a StatefulSet named after it and
  each group's workers in a StatefulSet named after the group's leader pod
  (`<lws>-<group index>`), and labels every pod `leaderworkerset.sigs.k8s.io/name: <lws>`:
  a pod of such a StatefulSet is the LeaderWorkerSet's, so its 1 + N StatefulSets are one
  workload (the template is changed on the LeaderWorkerSet, never on the StatefulSets);
- a Kubeflow Notebook runs in a StatefulSet of its own name whose pods are labelled
  `notebook-name` and `statefulset` with that name: the pod is the Notebook's (its
  controller reverts any edit of the StatefulSet).
A custom resource that shares a built-in kind's name (Volcano's `batch.volcano.sh` Job,
Knative's `serving.knative.dev` Service) is named with its group (`Job.batch.volcano.sh`, as
kubectl takes it), so it is never taken for, or looked up as, the built-in one.
Anything else stays at the nearest owner known for certain (the ReplicaSet, the Job) or the
bare Pod: never a guess.

Kubernetes knows an owner by its uid (the garbage collector takes an owner whose uid is gone as
absent). Where the snapshot says what it holds of the owner a reference names (`owner_found`,
OWNER_FOUND, inventory/sources/owner_links.py), the chain:
- stops below an owner "replaced" by another object of its name (a Deployment deleted and
  made anew; its stale ReplicaSet still names the old uid): the ReplicaSet (or the pod) is the
  subject, never the new Deployment, whose template may hold nothing of it;
- stops below an owner "elsewhere" (its uid is another namespace's object's: a reference
  across namespaces, which Kubernetes never follows, and no object of this namespace can be
  that owner): the dependent is the subject, never an owner invented in its namespace nor one
  guessed from its labels, and never the other namespace's object;
- names an owner "absent" from the snapshot as its reference gives it, and says so (the
  WorkloadRef's `note`): it was deleted, or its kind was not read.
Each stop is said in the WorkloadRef's `note`.
An Argo Rollout with `spec.workloadRef` runs the pod template of the workload it names there
(a Deployment it scales down): that workload is the top of the chain, since its template is
the one to edit and the Rollout has none. One finding then covers the Rollout's pods and the
Deployment's template (and any pod the Deployment still runs).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from inventory.snapshot import TEMPLATE_PHASE, OwnerLink, Pod

POD_TEMPLATE_HASH = "pod-template-hash"
JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
# `<cronjob>-<digits>`: the CronJob controller appends the scheduled time in minutes.
CRONJOB_JOB_NAME = re.compile(r"^(?P<cronjob>.+)-\d+$")
# The built-in kinds a pod's owner chain may name, and Service (Knative's Service is in
# KServe's chain). Their groups ("", apps, batch, extensions) hold no dot; a custom resource's
# group must (CRD validation), so a dotted group marks another resource of the same kind name.
BUILTIN_KINDS = frozenset(
    ("ReplicaSet", "Deployment", "DaemonSet", "StatefulSet", "Job", "CronJob", "Node")
    + ("Pod", "Service")
)
# How many owner links a chain is followed up (KServe's, the longest known, has six above a
# pod: ReplicaSet, Deployment, Revision, Configuration, Service, InferenceService).
MAX_DEPTH = 8
# What the snapshot holds of the owner a reference names (OwnerLink.owner_found and
# Pod.owner_found; "" where not recorded).
READ = "read"  # the object of that kind and name, with the uid named (or no uid to compare)
ABSENT = "absent"  # no object of that kind and name
REPLACED = "replaced"  # an object of that kind and name with another uid: the owner is gone
ELSEWHERE = "elsewhere"  # none here; the uid named is an object's in another namespace
OWNER_FOUND = (READ, ABSENT, REPLACED, ELSEWHERE)
# An owner no object of the dependent's namespace can be: the chain stops at the dependent (a
# pod's WorkloadRef is then resolved by these words).
OWNER_GONE = {REPLACED: "owner replaced", ELSEWHERE: "owner across namespaces"}
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
NOTEBOOK_LABELS = ("notebook-name", "statefulset")  # Kubeflow's notebook controller sets both
# Labels the controllers set per pod (or per rollout, per Job): not part of the template a
# person wrote, so they are left out of a workload's labels.
PER_POD_LABELS = frozenset(
    {
        POD_TEMPLATE_HASH,
        "controller-revision-hash",
        "pod-template-generation",
        "statefulset.kubernetes.io/pod-name",
        "apps.kubernetes.io/pod-index",
        "controller-uid",
        "job-name",
        "batch.kubernetes.io/controller-uid",
        "batch.kubernetes.io/job-name",
        "batch.kubernetes.io/job-completion-index",
        # LeaderWorkerSet: the group and the pod's place in it, a hash per group and one per
        # revision of the template (like pod-template-hash).
        "leaderworkerset.sigs.k8s.io/group-index",
        "leaderworkerset.sigs.k8s.io/worker-index",
        "leaderworkerset.sigs.k8s.io/group-key",
        "leaderworkerset.sigs.k8s.io/template-revision-hash",
    }
)


@dataclass(frozen=True)
class WorkloadRef:
    """The controller (or bare Pod) a pod-level finding is about, and how that was found."""

    kind: str  # Deployment, StatefulSet, DaemonSet, Job, CronJob, ReplicaSet, Pod, or any
    # other controller kind a pod's owner chain names (e.g. a RayCluster)
    namespace: str  # "" for a cluster-scoped controller (a ClusterPolicy)
    name: str
    # "owner index", "pod-template-hash label", "job-name label", "leaderworkerset label",
    # "notebook-name label", "owner reference", "bare pod", "workloadRef" (an Argo Rollout's),
    # "owner replaced" / "owner across namespaces" (a pod whose owner reference names no
    # object of its namespace: OWNER_GONE)
    resolved_by: str
    # What a reader must know of how the chain ended (an owner not in the snapshot, one
    # replaced, a Rollout running this template): said in the finding's evidence. Not part of
    # the identity, nor is the apiVersion its reference gave ("" where none did).
    note: str = field(default="", compare=False)
    api_version: str = field(default="", compare=False)

    def ref(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


def qualified_kind(kind: str, api_version: str) -> str:
    """`kind`, or `<kind>.<group>` when a built-in controller's kind name comes from a custom
    resource's API group."""
    group = api_version.rpartition("/")[0]
    if kind in BUILTIN_KINDS and "." in group:
        return f"{kind}.{group}"
    return kind


class OwnerIndex:
    """The snapshot's owner links by (kind, namespace, name), a cluster-scoped object's under
    namespace "", and its pods by (namespace, name): a pod may own pods."""

    def __init__(self, links: Iterable[OwnerLink], pods: Iterable[Pod] = ()) -> None:
        self._links = {(link.kind, link.namespace, link.name): link for link in links}
        self._pods = {(pod.namespace, pod.name): pod for pod in pods}

    def get(self, kind: str, namespace: str, name: str) -> OwnerLink | None:
        return self._links.get((kind, namespace, name))

    def has(self, kind: str, namespace: str, name: str) -> bool:
        return (kind, namespace, name) in self._links

    def pod(self, namespace: str, name: str) -> Pod | None:
        return self._pods.get((namespace, name))

    def scope_of(self, kind: str, namespace: str, name: str) -> str | None:
        """The namespace of the object an ownerReference from `namespace` names: its own, or
        "" for a cluster-scoped one (an ownerReference says neither); None: no link for it."""
        if (kind, namespace, name) in self._links:
            return namespace
        return "" if (kind, "", name) in self._links else None


def workload_of(pod: Pod, index: OwnerIndex) -> WorkloadRef:
    """The workload behind `pod` (see the module docstring for the rules): its nearest owner,
    then up the snapshot's owner links to the top controller they name."""
    # A static pod's mirror is owned by its Node: the pod is the thing to change.
    if not pod.owner_kind or not pod.owner_name or pod.owner_kind == "Node":
        return WorkloadRef("Pod", pod.namespace, pod.name, "bare pod")
    return _controllers(pod, index)[-1]


def owner_chain(pod: Pod, index: OwnerIndex) -> tuple[tuple[str, str, str], ...]:
    """(kind, namespace, name) of every object from the pod up to its workload (workload_of,
    last): the pod itself (not a template pod: no such pod exists), the owner its
    ownerReference names (a ReplicaSet or Job the snapshot lacks, where the naming showed the
    controller above it), and each controller above. What an exemption naming a nearer
    controller than the finding's subject is matched against (posture.exemptions.Exemption)."""
    chain = [] if pod.phase == TEMPLATE_PHASE else [("Pod", pod.namespace, pod.name)]
    if not pod.owner_kind or not pod.owner_name or pod.owner_kind == "Node":
        return tuple(chain) or (("Pod", pod.namespace, pod.name),)
    controllers = _controllers(pod, index)
    if controllers[0].resolved_by in OWNER_GONE.values():
        return tuple(chain) or (("Pod", pod.namespace, pod.name),)  # its owner is gone
    if controllers[0].resolved_by not in ("owner index", "owner reference"):
        # Guessed from the naming: the pod's own owner is certain all the same.
        chain.append((pod.owner_kind, pod.namespace, pod.owner_name))
    chain.extend((ref.kind, ref.namespace, ref.name) for ref in controllers)
    return tuple(chain)


def _controllers(pod: Pod, index: OwnerIndex) -> list[WorkloadRef]:
    """The pod's nearest owner and each controller above, up to the top (workload_of)."""
    # Not the pod itself: a workload's template pod is named after its controller, which may
    # be named after a pod (a LeaderWorkerSet's group StatefulSet after its leader pod).
    seen: set[tuple[str, str, str]] = set()
    chain = [_nearest(pod, index)]
    for _ in range(MAX_DEPTH):
        ref = chain[-1]
        key = (ref.kind, ref.namespace, ref.name)
        if key in seen:  # an owner cycle (a hand-made snapshot): stop where it closes
            break
        seen.add(key)
        link = index.get(ref.kind, ref.namespace, ref.name) if ref.kind != "Pod" else None
        if link is not None and link.owner_found in OWNER_GONE:
            # The owner it names by uid is no object of its namespace: the chain stops here.
            chain[-1] = replace(ref, note=_gone_note(ref.ref(), link))
            break
        above = _owner_of(ref, index)
        if above is None:
            break
        chain.append(above)
    return chain


def _nearest(pod: Pod, index: OwnerIndex) -> WorkloadRef:
    """The pod's own owner; where the snapshot lacks it, what the controllers' naming shows."""
    kind, name, namespace = pod.owner_kind or "", pod.owner_name or "", pod.namespace
    here = f"Pod {namespace}/{pod.name}"
    if pod.owner_found in OWNER_GONE:
        resolved_by = OWNER_GONE[pod.owner_found]
        return WorkloadRef("Pod", namespace, pod.name, resolved_by, note=_gone_note(here, pod))
    version = pod.owner_api_version
    scope = index.scope_of(kind, namespace, name)
    if scope is not None:
        return WorkloadRef(kind, scope, name, "owner index", api_version=version)
    named = WorkloadRef(kind, namespace, name, "owner reference", api_version=version)
    note = _missing_note(named, here, pod.owner_found, pod.owner_uid)
    guessed = _guessed(pod, index)
    if guessed is not None and note:
        told = f"{note}; its controller, {guessed.ref()}, is named from the {guessed.resolved_by}"
        return replace(guessed, note=told)
    return guessed or replace(named, note=note)


def _guessed(pod: Pod, index: OwnerIndex) -> WorkloadRef | None:
    """The controller the naming of the pod's owner and its labels show (module docstring)."""
    kind, name = pod.owner_kind, pod.owner_name or ""
    if kind == "ReplicaSet":
        return _deployment(pod, name)
    if kind == "Job":
        return _cronjob(pod, name, index)
    if kind == "StatefulSet":
        return _statefulset_controller(pod, name)
    return None


def _owner_of(ref: WorkloadRef, index: OwnerIndex) -> WorkloadRef | None:
    """The controller above `ref`, None at the top: a Pod that owns pods (a Spark driver owns
    its executors) is resolved as a pod; anything else by its owner link."""
    if ref.kind == "Pod":
        pod = index.pod(ref.namespace, ref.name)
        if pod is None or not pod.owner_kind or not pod.owner_name or pod.owner_kind == "Node":
            return None  # not in the snapshot, or a bare pod: the pod is the workload
        return _nearest(pod, index)
    link = index.get(ref.kind, ref.namespace, ref.name)
    if link is None or not link.owner_kind or not link.owner_name:
        return None
    # A namespaced object's owner is in its namespace or cluster-scoped (a ClusterPolicy).
    scope = index.scope_of(link.owner_kind, link.namespace, link.owner_name)
    namespace = link.namespace if scope is None else scope
    above = WorkloadRef(
        link.owner_kind,
        namespace,
        link.owner_name,
        "owner index",
        api_version=link.owner_api_version,
    )
    note = (
        ""
        if scope is not None
        else _missing_note(above, ref.ref(), link.owner_found, link.owner_uid)
    )
    if link.owner_via:
        # An Argo Rollout running this workload's template (spec.workloadRef): the template
        # is edited here, and the Rollout rolls it out.
        via = f"{ref.ref()} runs this {link.owner_kind}'s pod template ({link.owner_via})"
        note = f"{via}; {note}" if note else via
        return replace(above, resolved_by="workloadRef", note=note)
    return replace(above, note=note)


def _missing_note(owner: WorkloadRef, dependent: str, found: str, uid: str) -> str:
    """What the evidence says of an owner the snapshot lacks ("" for one it holds, or where
    it cannot tell: a link or pod stored before it was recorded, a watched pod)."""
    by = f" (uid {uid})" if uid else ""
    if found == ABSENT:
        return (
            f"{owner.ref()} is not in the snapshot: {dependent} names it as its owner{by}, and "
            f"no {owner.kind} of that name was read (deleted, or its kind not exported or not "
            f"listable by the sync's account)"
        )
    return ""


def _gone_note(dependent: str, named: Pod | OwnerLink) -> str:
    """Why the chain stops at `dependent`: the owner it names by uid is no object of its
    namespace (OWNER_GONE)."""
    owner = f"{named.owner_kind} {named.owner_name}"
    by = f" by uid {named.owner_uid}" if named.owner_uid else ""
    if named.owner_found == ELSEWHERE:
        why = (
            f"{dependent} names {owner} as its owner{by}, an object of another namespace: "
            f"Kubernetes never follows an owner reference across namespaces (its garbage "
            f"collector takes the owner as absent), and no {named.owner_kind} of this namespace "
            f"is that owner"
        )
    else:
        why = (
            f"{dependent} names {owner} as its owner{by}, but the {owner} in the snapshot is "
            f"another object (another uid): the owner it names was deleted and its name reused"
        )
    return f"{why}; so {dependent} is the thing to change"


def _deployment(pod: Pod, replica_set: str) -> WorkloadRef | None:
    digest = pod.labels.get(POD_TEMPLATE_HASH, "")
    suffix = f"-{digest}"
    if digest and replica_set.endswith(suffix) and len(replica_set) > len(suffix):
        name = replica_set.removesuffix(suffix)
        return WorkloadRef("Deployment", pod.namespace, name, "pod-template-hash label")
    return None


def _cronjob(pod: Pod, job: str, index: OwnerIndex) -> WorkloadRef | None:
    if not any(pod.labels.get(label) == job for label in JOB_NAME_LABELS):
        return None
    match = CRONJOB_JOB_NAME.match(job)
    if match and index.has("CronJob", pod.namespace, match["cronjob"]):
        return WorkloadRef("CronJob", pod.namespace, match["cronjob"], "job-name label")
    return None


def _statefulset_controller(pod: Pod, stateful_set: str) -> WorkloadRef | None:
    """The LeaderWorkerSet whose leader (`<lws>`) or group (`<lws>-<index>`) StatefulSet runs
    the pod, or the Kubeflow Notebook whose StatefulSet does. The StatefulSet's name must fit
    the labels, so a label alone never moves a pod elsewhere."""
    lws = pod.labels.get(LWS_NAME, "")
    group = stateful_set.removeprefix(f"{lws}-")
    of_group = group != stateful_set and group.isascii() and group.isdigit()
    if lws and (stateful_set == lws or of_group):
        return WorkloadRef("LeaderWorkerSet", pod.namespace, lws, "leaderworkerset label")
    if all(pod.labels.get(label) == stateful_set for label in NOTEBOOK_LABELS):
        return WorkloadRef("Notebook", pod.namespace, stateful_set, "notebook-name label")
    return None


def template_labels(pod: Pod) -> dict[str, str]:
    """The pod's labels less the ones its controllers set per pod: the template's labels,
    alike on every replica (what an exemption by label matches)."""
    return {k: v for k, v in pod.labels.items() if k not in PER_POD_LABELS}
