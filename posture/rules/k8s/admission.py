"""K8S-009: tenant GPU namespaces where no admission control enforces the pod rules."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from inventory.snapshot_admission import NOT_IN_SNAPSHOT, NOT_SERVED, READ, AdmissionRead
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import tenant_pods
from posture.rules.dra_holdings import uses_accelerator
from posture.rules.k8s.admission_cover import (
    Verdict,
    covered,
    lacking_names,
    missing,
    psa_labels,
    verdicts,
)
from posture.rules.k8s.kyverno_flags import honoured
from posture.rules.k8s.scc import (
    SCC_GROUP,
    SCC_RESOURCE,
    is_openshift,
    opening_said,
    rbac_unread,
    scc_verdicts,
    sccs_of,
)
from posture.rules.k8s.scc_unread import grantable_evidence
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import namespace_draft

KYVERNO_EXCEPTIONS = "kyverno.io/policyexceptions"  # the AdmissionRead of their list


@check(
    id="K8S-009",
    needs=("Namespace", "ResourceClaim"),
    title="Tenant namespace with GPU workloads and no admission control enforcing pod rules",
    severity="high",
    scope="tenant",
    rationale=(
        "The pod rules (no privileged containers, no SYS_ADMIN, no hostPID or hostPath under "
        "/dev, GPU requests equal to limits, the class's pool) are only reported after the "
        "fact unless something at admission refuses a pod that breaks them. Without Pod "
        "Security Admission at baseline or stricter, or a ValidatingAdmissionPolicy, Kyverno "
        "or Gatekeeper policy that denies, one `kubectl apply` by a tenant gives it the node's "
        "GPUs and the node itself. Policies in Audit or Warn, and PSA audit/warn labels, block "
        "nothing. A policy counts for what it judges: one requiring labels, or refusing "
        "privileged containers but not hostPID, hostPath or added capabilities, leaves the "
        "rest open, and the finding names what nothing denies. A Kyverno PolicyException "
        "lifts the rules it names wherever it matches a tenant's pods (also when it narrows "
        "its match by pod labels, names, images or conditions a tenant can meet) unless "
        "Kyverno's admission controller is seen running with exceptions off or limited to "
        "another namespace (--enablePolicyException, --exceptionNamespace), and the "
        "Azure Policy add-on's Gatekeeper constraints count less what their parameters allow "
        "(allowHostNetwork, excludedImages). A cluster-wide PSA default "
        "set in the API server's AdmissionConfiguration "
        "is not visible through the API, so the namespace label is what counts here. On "
        "OpenShift, SecurityContextConstraints admit pods: a control is denied where no SCC "
        "the namespace's pods may use (its users/groups fields, or RBAC `use` on it) allows "
        "it, and the finding names the SCC and who may use it. When the policies (or an "
        "OpenShift cluster's SCCs) could not be read the finding says unknown rather than "
        "passing. It says unknown too, weighed low, where the sync did not read Roles, "
        "RoleBindings, ClusterRoles or ClusterRoleBindings and a binding among them may grant "
        "an SCC allowing what nothing else denies (it names the kinds and the SCCs). GPU "
        "pods are those holding GPUs of any vendor (`nvidia.com/gpu`, "
        "`amd.com/gpu`, `habana.ai/gaudi`, `gpu.intel.com/xe`, ...)."
    ),
    remediation=(
        "Label the namespace `pod-security.kubernetes.io/enforce=baseline` (or `restricted`), "
        "and deploy gpuposture's policy pack for the cluster (Enforcement page, or "
        "`manage.py export_policy_pack`): apply it in Audit first, read what it would deny, "
        "then switch the class's bindings to Deny / the Kyverno policies to Enforce. If "
        "the policies could not be read, grant the reader get/list/watch on them "
        "(deploy/rbac.yaml) and sync again. On OpenShift, take the tenant's access to the "
        "SCC named (privileged, hostaccess, hostmount-anyuid, hostnetwork-v2, ...) away: the "
        "RoleBinding or ClusterRoleBinding to `system:openshift:scc:NAME`, or the SCC's "
        "users/groups entry (`oc adm policy remove-scc-from-user`), leaving restricted-v2; "
        "snapshot `securitycontextconstraints` too, and roles,rolebindings,clusterroles,"
        "clusterrolebindings, without which who may use an SCC is not known."
    ),
    mappings=("SP800-53:CM-7", "SP800-53:AC-3"),
)
def namespace_without_admission_control(inputs: PostureInputs) -> Iterator[FindingDraft]:
    gpu_pods: dict[str, int] = {}
    owners: dict[str, TenantInfo] = {}
    for pod, tenant in tenant_pods(inputs):
        if uses_accelerator(inputs, pod):
            gpu_pods[pod.namespace] = gpu_pods.get(pod.namespace, 0) + 1
            owners[pod.namespace] = tenant
    labels = {n.name: n.labels for n in inputs.snapshot.namespaces}
    # The PolicyExceptions Kyverno's own flags make it ignore are left out.
    policies, ignored, note = honoured(inputs.snapshot.pods, inputs.snapshot.admission_policies)
    # A list that failed (forbidden, an error) leaves unknown what it would have found.
    unread = [r for r in inputs.snapshot.admission_reads if r.status not in (READ, NOT_SERVED)]
    sccs = sccs_of(inputs.snapshot)
    if not sccs and is_openshift(inputs.snapshot):
        # OpenShift admits pods by its SCCs; without them what it refuses is not known.
        unread.append(
            AdmissionRead(
                f"{SCC_GROUP}/{SCC_RESOURCE}",
                NOT_IN_SNAPSHOT,
                "an OpenShift cluster (openshift-* namespaces, node.openshift.io labels or Routes) "
                "whose SecurityContextConstraints were not read",
            )
        )
    # Kyverno's rules hold only where no PolicyException lifts them: unread, they may.
    exceptions_unread = any(r.resource == KYVERNO_EXCEPTIONS for r in unread)
    # RBAC the sync did not read may grant a namespace's pods `use` of any SCC.
    rbac = rbac_unread(inputs) if sccs else []
    for namespace, count in sorted(gpu_pods.items()):
        found = verdicts(namespace, labels.get(namespace, {}), policies, exceptions_unread, note)
        if namespace not in labels:
            found[0] = PSA_UNREAD  # verdicts() judges PSA first, here on labels never read
        found += [Verdict(i["exception"], False, f"not applied: {i['why']}") for i in ignored]
        opened: list[dict[str, Any]] | None = None
        grantable: list[dict[str, Any]] = []
        if sccs:
            scc_found, opened, grantable = scc_verdicts(
                inputs, namespace, owners[namespace], sccs, rbac
            )
            found += scc_found
        if not missing(found):
            continue
        draft = _draft(inputs, namespace, owners[namespace], count, found, unread, labels, opened)
        yield grantable_evidence(draft, found, rbac, grantable)


# A namespace with no Namespace object in the sync: its Pod Security labels are unknown.
PSA_UNREAD = Verdict(
    "PSA",
    False,
    "Pod Security Admission: unknown: the namespace's labels were not read (no Namespace "
    "object in the sync)",
)
LABELS_UNREAD = "its Namespace object (Pod Security labels) was not read"


def _draft(
    inputs: PostureInputs,
    namespace: str,
    tenant: TenantInfo,
    count: int,
    found: list[Verdict],
    unread: list,
    labels: dict[str, dict[str, str]],
    sccs: list[dict[str, Any]] | None,
) -> FindingDraft:
    have, lacking = covered(found), missing(found)
    verdict = "partial" if have else "not enforced"
    labels_read = namespace in labels
    evidence = {
        "namespace": namespace,
        "tenant": tenant.slug,
        "trust_class": tenant.trust_class.slug,
        "gpu_pods": count,
        "verdict": "unknown" if unread or not labels_read else verdict,
        "enforced_controls": have,
        "missing_controls": lacking,
        "pod_security_labels": psa_labels(labels[namespace]) if labels_read else "unknown",
        "looked_at": [v.as_dict() for v in found],
        "policy_reads": [
            {"resource": r.resource, "status": r.status, "detail": r.detail}
            for r in (*inputs.snapshot.admission_reads, *_added(unread, inputs))
        ],
    }
    # OpenShift: every SCC the namespace's pods may be admitted under, and who may use it;
    # the title names those allowing a control nothing else denies.
    opening = [s for s in sccs or () if set(s["allows"]) & set(lacking_names(found))]
    if sccs is not None:
        evidence["security_context_constraints"] = sccs
    if unread or not labels_read:
        names = ", ".join(sorted(r.resource for r in unread))
        why = [f"{names} could not be read"] if unread else []
        why += [] if labels_read else [LABELS_UNREAD]
        title = (
            f"Namespace {namespace} of tenant {tenant.slug}: admission enforcement unknown "
            f"({'; '.join(why)}; nothing read enforces every pod rule)"
        )
    elif have:
        title = (
            f"Namespace {namespace} of tenant {tenant.slug}: {count} GPU pod(s) and admission "
            f"control enforcing only part of the pod rules (nothing denies "
            f"{', '.join(lacking)}"
            + (f"; SCC {opening_said(opening)} allow(s) them" if opening else "")
            + ")"
        )
    elif opening:
        title = (
            f"Namespace {namespace} of tenant {tenant.slug}: {count} GPU pod(s) and no "
            f"admission control enforcing pod rules (SCC {opening_said(opening)} allow(s) every "
            "one; no PSA enforce, no denying policy)"
        )
    else:
        title = (
            f"Namespace {namespace} of tenant {tenant.slug}: {count} GPU pod(s) and no "
            "admission control enforcing pod rules (no PSA enforce, no denying policy)"
        )
    return namespace_draft(
        "K8S-009",
        inputs,
        namespace,
        tenants=(tenant,),
        evidence=evidence,
        title=title,
        exposure=count,
    )


def _added(unread: list[AdmissionRead], inputs: PostureInputs) -> list[AdmissionRead]:
    """The reads K8S-009 adds (SCCs missing from an OpenShift snapshot)."""
    return [r for r in unread if r not in inputs.snapshot.admission_reads]
