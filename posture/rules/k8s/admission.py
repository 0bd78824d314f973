"""K8S-009: tenant GPU namespaces where no admission control enforces the pod rules."""

from __future__ import annotations

from collections.abc import Iterator

from inventory.snapshot_admission import NOT_SERVED, READ
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import tenant_pods
from posture.rules.dra_holdings import uses_gpu
from posture.rules.k8s.admission_cover import Verdict, covered, missing, psa_labels, verdicts
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import namespace_draft


@check(
    id="K8S-009",
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
        "rest open, and the finding names what nothing denies. A cluster-wide PSA default "
        "set in the API server's AdmissionConfiguration "
        "is not visible through the API, so the namespace label is what counts here. When the "
        "policies could not be read the finding says unknown rather than passing."
    ),
    remediation=(
        "Label the namespace `pod-security.kubernetes.io/enforce=baseline` (or `restricted`), "
        "and deploy gpuposture's policy pack for the cluster (Enforcement page, or "
        "`manage.py export_policy_pack`): apply it in Audit first, read what it would deny, "
        "then switch the class's bindings to Deny / the Kyverno policies to Enforce. If "
        "the policies could not be read, grant the reader get/list/watch on them "
        "(deploy/rbac.yaml) and sync again."
    ),
    mappings=("SP800-53:CM-7", "SP800-53:AC-3"),
)
def namespace_without_admission_control(inputs: PostureInputs) -> Iterator[FindingDraft]:
    gpu_pods: dict[str, int] = {}
    owners: dict[str, TenantInfo] = {}
    for pod, tenant in tenant_pods(inputs):
        if uses_gpu(inputs, pod):
            gpu_pods[pod.namespace] = gpu_pods.get(pod.namespace, 0) + 1
            owners[pod.namespace] = tenant
    labels = {n.name: n.labels for n in inputs.snapshot.namespaces}
    policies = inputs.snapshot.admission_policies
    # A list that failed (forbidden, an error) leaves unknown what it would have found.
    unread = [r for r in inputs.snapshot.admission_reads if r.status not in (READ, NOT_SERVED)]
    for namespace, count in sorted(gpu_pods.items()):
        found = verdicts(namespace, labels.get(namespace, {}), policies)
        if not missing(found):
            continue
        yield _draft(inputs, namespace, owners[namespace], count, found, unread, labels)


def _draft(
    inputs: PostureInputs,
    namespace: str,
    tenant: TenantInfo,
    count: int,
    found: list[Verdict],
    unread: list,
    labels: dict[str, dict[str, str]],
) -> FindingDraft:
    have, lacking = covered(found), missing(found)
    verdict = "partial" if have else "not enforced"
    evidence = {
        "namespace": namespace,
        "tenant": tenant.slug,
        "trust_class": tenant.trust_class.slug,
        "gpu_pods": count,
        "verdict": "unknown" if unread else verdict,
        "enforced_controls": have,
        "missing_controls": lacking,
        "pod_security_labels": psa_labels(labels.get(namespace, {})),
        "looked_at": [v.as_dict() for v in found],
        "policy_reads": [
            {"resource": r.resource, "status": r.status, "detail": r.detail}
            for r in inputs.snapshot.admission_reads
        ],
    }
    if unread:
        names = ", ".join(sorted(r.resource for r in unread))
        title = (
            f"Namespace {namespace} of tenant {tenant.slug}: admission enforcement unknown "
            f"({names} could not be read; nothing read enforces every pod rule)"
        )
    elif have:
        title = (
            f"Namespace {namespace} of tenant {tenant.slug}: {count} GPU pod(s) and admission "
            f"control enforcing only part of the pod rules (nothing denies "
            f"{', '.join(lacking)})"
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
