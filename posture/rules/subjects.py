"""THE way to build a finding draft from each kind of subject (DESIGN §5: a finding is one
cause, the thing one action changes). PURE. Every check builds its drafts here, so the
subject, its labels, the tenants affected and the exposure are set alike everywhere:

- a workload (`workload_draft`): the pod's owner chain resolved (inventory/owners.py); each
  pod reports its own draft and registry.merge_drafts joins the replicas of one workload
  into one finding (evidence `pods`, capped, and `replicas`, the count; exposure = pods);
  labels are the pod template's;
- a node (`node_draft`): one finding per node whatever the number of tenants on it; labels
  are the node's; exposure = its GPUs unless the check says otherwise (posture.rules.node_gpus:
  where the node's count is unknown, the GPUs its pods hold or its capacity lists). A bulletin
  exposure on a node (`bulletin_draft`) is one per check and node;
- a pair of parties on a node pool: co-tenancy, built in posture/rules/pairs.py on
  `subject_draft` below;
- a namespace, a ConfigMap, an RBAC binding, a service account, a provider: one finding per
  subject with every tenant it affects;
- a tenant's use of a sharing mode in a node pool (`mode_use_draft`): the tenant is in the
  subject ("alpha/time_slicing"), each tenant's use being approved on its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from inventory.owners import WorkloadRef, owner_chain, template_labels
from inventory.snapshot import TEMPLATE_PHASE, Container, Node, Pod
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import nodes_by_name
from posture.rules.node_gpus import node_gpus
from posture.rules.registry import Covered, FindingDraft
from tenants.mapping import UNCLASSIFIED

Tenants = Iterable[TenantInfo | str | None]
PLATFORM_PARTY = ""  # the party of pods no tenant owns: never a tenant slug


def tenant_slugs(tenants: Tenants) -> tuple[str, ...]:
    """Sorted, unique slugs; None and "" (no tenant, the platform) are left out."""
    slugs = {t.slug if isinstance(t, TenantInfo) else t for t in tenants}
    return tuple(sorted(s for s in slugs if s))


def subject_draft(
    check_id: str,
    *,
    kind: str,
    namespace: str = "",
    name: str,
    tenants: Tenants,
    evidence: dict[str, Any],
    key: str = "",
    title: str = "",
    severity: str = "",
    labels: dict[str, str] | None = None,
    exposure: int = 1,
    covers: tuple[Covered, ...] = (),
    chain: frozenset[tuple[str, str, str]] = frozenset(),
    tenant_exposures: dict[str, int] | None = None,
) -> FindingDraft:
    """The draft every builder below ends in; call it directly only for a subject named by
    something else (a recorded drift event names its own). `covers`, `chain`,
    `tenant_exposures`: FindingDraft's (only those of tenants it affects are kept)."""
    slugs = tenant_slugs(tenants)
    return FindingDraft(
        check_id=check_id,
        tenants=slugs,
        subject_kind=kind,
        subject_namespace=namespace,
        subject_name=name,
        evidence=evidence,
        key=key,
        title=title,
        severity=severity,
        subject_labels=dict(labels or {}),
        exposure=max(1, exposure),
        tenant_exposures={
            slug: max(1, n) for slug, n in (tenant_exposures or {}).items() if slug in slugs
        },
        covers=covers,
        chain=chain,
    )


# --- nodes ---------------------------------------------------------------------------------


def node_named(inputs: PostureInputs, name: str) -> Node:
    """The snapshot's node of that name, or a bare one (telemetry may name a node the last
    inventory no longer has)."""
    return nodes_by_name(inputs).get(name) or Node(name)


def node_draft(
    check_id: str,
    node: Node,
    *,
    inputs: PostureInputs,
    tenants: Tenants,
    evidence: dict[str, Any],
    key: str = "",
    title: str = "",
    severity: str = "",
    exposure: int | None = None,
    covers: tuple[Covered, ...] = (),
) -> FindingDraft:
    """One finding per node (and key), for every tenant on it; exposure = its GPUs
    (node_gpus: where its count is unknown, the GPUs the snapshot proves, said in the evidence's
    `exposure_gpus` and `exposure_gpus_basis`). `covers`: the node's narrower findings of the
    check it replaces (FindingDraft.covers)."""
    if exposure is None:
        gpus = node_gpus(inputs, node)
        exposure = gpus.count
        if gpus.basis:
            evidence = {**evidence, "exposure_gpus": gpus.count, "exposure_gpus_basis": gpus.basis}
    return subject_draft(
        check_id,
        kind="Node",
        name=node.name,
        tenants=tenants,
        evidence=evidence,
        key=key,
        title=title,
        severity=severity,
        labels=node.labels,
        exposure=exposure,
        covers=covers,
    )


def bulletin_draft(check_id: str, node: Node, *, key: str = "", **fields: Any) -> FindingDraft:
    """A bulletin exposure on a node: one per check (component family) and node, or per
    change that closes it where one check's exposures take several (stack/upgrade_by.py)."""
    return node_draft(check_id, node, key=key or check_id, **fields)


# --- workloads -----------------------------------------------------------------------------


def workload_draft(
    check_id: str,
    inputs: PostureInputs,
    pod: Pod,
    tenant: TenantInfo,
    evidence: dict[str, Any],
    *,
    key: str = "",
    title: str = "",
    severity: str = "",
    pod_facts: dict[str, Any] | None = None,
) -> FindingDraft:
    """A pod-level cause, reported for one pod and filed under its workload: the replicas'
    drafts merge into one (registry.merge_drafts). `pod_facts` are what differs per pod
    (its node's taints, say); they go into the pod's entry of `pods`."""
    workload = inputs.workload_of(pod)
    entry = {"pod": f"{pod.namespace}/{pod.name}", "node": pod.node_name, "phase": pod.phase}
    context = {
        "workload": workload.ref(),
        "resolved_by": workload.resolved_by,
        "tenant": tenant.slug,
        "trust_class": tenant.trust_class.slug,
    }
    if workload.note:
        # How the chain ended where the snapshot could not show it as read (an owner not in
        # it, one replaced by another object of its name) or a Rollout runs this template.
        context["owner_note"] = workload.note
    if tenant.slug == UNCLASSIFIED:
        # Fail closed (DESIGN §3), and say how the namespace gets its owner.
        context["why_unclassified"] = (
            f"namespace {pod.namespace} is claimed by no tenant and is not a platform namespace, "
            f"so its pods are judged as class {tenant.trust_class.slug}: claim it for its tenant, "
            f'or label it gpuposture.io/platform="true" if it is the platform\'s'
        )
    chain = inputs.owner_chain(pod)
    if workload.kind != "Pod" and _debug_containers(pod, evidence):
        # `kubectl debug` adds its container to one running pod, never to the workload's
        # template: the pod (and who may debug it) is the thing to change.
        pod_workload = WorkloadRef("Pod", pod.namespace, pod.name, "debug container")
        title = title.replace(workload.ref(), pod_workload.ref())
        context |= {"workload": pod_workload.ref(), "resolved_by": pod_workload.resolved_by}
        context["debug_container_in"] = workload.ref()
        workload = pod_workload
        # Not the workload's template: an exemption of the workload does not cover it.
        chain = frozenset({("Pod", pod.namespace, pod.name)})
    if workload.api_version:
        # As the owner reference gave it: a custom resource's (argoproj.io/v1alpha1) is known
        # nowhere else (posture.policy_reports references the subject by it).
        context["workload_api_version"] = workload.api_version
    if pod.phase == TEMPLATE_PHASE:
        # No pod of the workload runs: its template was judged (PostureInputs.template_pods).
        context["resolved_by"] = "pod template"
        evidence = {**context, **evidence, **_template_facts(inputs, pod)}
    else:
        evidence = {**context, **evidence, "pods": [{**entry, **(pod_facts or {})}], "replicas": 1}
    return subject_draft(
        check_id,
        kind=workload.kind,
        namespace=workload.namespace,
        name=workload.name,
        tenants=(tenant,),
        evidence=evidence,
        key=key,
        title=title,
        severity=severity,
        labels=template_labels(pod),
        covers=_narrower(inputs, pod, workload, key),
        chain=chain,
    )


def _narrower(
    inputs: PostureInputs, pod: Pod, workload: WorkloadRef, key: str
) -> tuple[Covered, ...]:
    """The subject the pod's finding may have had before (FindingDraft.covers), as one group:
    every object of its owner chain below `workload`, nearest first. A sync that read less of
    the chain (an account that may not list serving.knative.dev, a snapshot of `kubectl get
    deploy,rs,pods`, a version that stopped at the nearest controller) filed the pod under
    one of them (the Revision its Deployment names, that Deployment, a RayJob's generated
    RayCluster, a Spark driver Pod, the pod itself before a ReplicaSet adopted it): a risk
    accepted there is carried to this finding when it first opens, and its first-seen kept."""
    if workload.resolved_by == "debug container":
        return ()
    top = (workload.kind, workload.namespace, workload.name)
    chain = owner_chain(pod, inputs.owner_index)  # ordered, from the pod up
    group = tuple((kind, ns, name, key) for kind, ns, name in chain if (kind, ns, name) != top)
    return (group,) if group else ()


def _template_facts(inputs: PostureInputs, pod: Pod) -> dict[str, Any]:
    """What a finding judged from a template says of it: no pods, replicas as the spec says."""
    spec = inputs.template_workload(pod)
    return {
        "from_template": True,
        "suspended": spec.suspended if spec else False,
        "pods": [],
        "replicas": spec.replicas if spec else None,
    }


def container_subject(inputs: PostureInputs, pod: Pod, container: Container) -> WorkloadRef:
    """What a finding about one container of the pod is filed under: the pod's workload, but a
    debug container's own pod (workload_draft says why)."""
    workload = inputs.workload_of(pod)
    if workload.kind != "Pod" and container.ephemeral:
        return WorkloadRef("Pod", pod.namespace, pod.name, "debug container")
    return workload


def _debug_containers(pod: Pod, evidence: dict[str, Any]) -> bool:
    """Whether the containers the evidence names (its `container`, or each of `containers`)
    are all ephemeral (debug) containers of the pod; names are unique across a pod's
    containers of every kind. The pod checks file a pod's debug containers apart from its
    others (container_subject), so they are all or none."""
    named = evidence.get("containers")
    names = [c.get("container") for c in named] if isinstance(named, list) else []
    if not names and evidence.get("container"):
        names = [evidence["container"]]
    debug = {c.name for c in pod.containers if c.ephemeral}
    return bool(names) and all(name in debug for name in names)


# --- namespaces, objects, identities, providers ----------------------------------------------


def namespace_draft(
    check_id: str, inputs: PostureInputs, namespace: str, **fields: Any
) -> FindingDraft:
    """One finding per namespace; labels are the namespace's. `fields`: tenants, evidence
    and optionally key, title, severity, exposure (as subject_draft takes them)."""
    labels = next((n.labels for n in inputs.snapshot.namespaces if n.name == namespace), {})
    return subject_draft(check_id, kind="Namespace", name=namespace, labels=labels, **fields)


def configmap_draft(check_id: str, namespace: str, name: str, **fields: Any) -> FindingDraft:
    """One finding per ConfigMap (and key in it), for every tenant whose nodes read it."""
    return subject_draft(check_id, kind="ConfigMap", namespace=namespace, name=name, **fields)


def binding_draft(
    check_id: str, kind: str, namespace: str | None, name: str, **fields: Any
) -> FindingDraft:
    """One finding per RoleBinding or ClusterRoleBinding, for every tenant it reaches."""
    return subject_draft(check_id, kind=kind, namespace=namespace or "", name=name, **fields)


def service_account_draft(check_id: str, namespace: str, name: str, **fields: Any) -> FindingDraft:
    """One finding per service account, for every tenant whose work runs as it."""
    return subject_draft(check_id, kind="ServiceAccount", namespace=namespace, name=name, **fields)


def provider_draft(
    check_id: str,
    inputs: PostureInputs,
    provider: str,
    *,
    evidence: dict[str, Any],
    key: str = "",
    title: str,
) -> FindingDraft:
    """A cluster's provider: every tenant present in the cluster; exposure = its GPU nodes."""
    gpu_nodes = sum(1 for n in inputs.snapshot.nodes if n.is_gpu_node)
    return subject_draft(
        check_id,
        kind="Provider",
        name=provider,
        tenants=inputs.tenants_present,
        evidence=evidence,
        key=key,
        title=title,
        exposure=gpu_nodes,
    )


def mode_use_name(tenant: str, mode: str) -> str:
    """The subject name of a tenant's use of a sharing mode: "alpha/time_slicing"."""
    return f"{tenant}/{mode}"


def mode_use_draft(
    check_id: str,
    tenant: str,
    mode: str,
    pool: str,
    *,
    evidence: dict[str, Any],
    title: str,
    severity: str = "",
    exposure: int = 1,
) -> FindingDraft:
    """A tenant's use of a sharing mode in a node pool (what its sharing request covers). Each
    tenant's use is approved on its own, so the tenant is in the subject, not only the key:
    `tenant/mode` in the pool ("alpha/time_slicing" in "shared-ts"), the approval to ask for
    or the configuration to restore, which a reader or a tool keyed on the subject tells
    apart from another tenant's use of the same mode there (DESIGN §5). The key stays the
    tenant: migration posture.0016 moved stored findings to this subject."""
    return subject_draft(
        check_id,
        kind="SharingMode",
        namespace=pool,
        name=mode_use_name(tenant, mode),
        tenants=(tenant,),
        evidence=evidence,
        key=tenant,
        title=title,
        severity=severity,
        exposure=exposure,
    )
