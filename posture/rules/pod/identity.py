"""POD-010: GPU workloads of several tenants under one shared service account (DESIGN §2)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from inventory.snapshot import Pod
from posture.inputs import PostureInputs
from posture.rules.common import pod_ref
from posture.rules.dra_holdings import uses_accelerator
from posture.rules.pod.cloud_identity import shared_cloud_identities
from posture.rules.registry import MEMBERS_SHOWN, FindingDraft, check
from posture.rules.subjects import service_account_draft
from tenants.mapping import TENANT_LABEL

PLATFORM_PARTY = ""  # pods of a platform namespace that carry no tenant label


def job_tenant(inputs: PostureInputs, pod: Pod) -> str:
    """Whose work a GPU pod is: the namespace's tenant; in a namespace no tenant owns, the
    tenant its `gpuposture.io/tenant` label names (a shared submission system such as a
    batch or notebook service runs several tenants' jobs there); else the platform ("")."""
    claimed = inputs.claimed_tenant_of_namespace(pod.namespace)
    if claimed is not None:
        return claimed.slug
    label = pod.labels.get(TENANT_LABEL, "")
    if label in inputs.tenants_by_slug and label != inputs.unclassified.slug:
        return label
    # Unlabelled: the unclassified party in a namespace nobody owns, else the platform.
    owner = inputs.tenant_of_pod(pod)
    return owner.slug if owner is not None else PLATFORM_PARTY


def gpu_pods_by_identity(inputs: PostureInputs) -> dict[tuple[str, str], dict[str, list[Pod]]]:
    """(namespace, service account) -> party -> active GPU pods running as it."""
    groups: dict[tuple[str, str], dict[str, list[Pod]]] = {}
    for pod in sorted(inputs.snapshot.pods, key=pod_ref):
        if not pod.is_active or not uses_accelerator(inputs, pod):
            continue
        parties = groups.setdefault((pod.namespace, pod.service_account), {})
        parties.setdefault(job_tenant(inputs, pod), []).append(pod)
    return dict(sorted(groups.items()))


@check(
    id="POD-010",
    needs=("ServiceAccount", "ResourceClaim"),
    title="GPU workloads of several tenants run under one shared service account",
    severity="medium",
    scope="tenant",
    rationale=(
        "Every job must map to a tenant identity. Tenancy follows the namespace, "
        "so the case that breaks it is a shared namespace: a batch, pipeline or notebook "
        "service that runs every tenant's GPU pods (told apart only by a "
        "`gpuposture.io/tenant` pod label) under its own ServiceAccount. The pods of one "
        "ServiceAccount are grouped by the tenant they work for; when a group spans several "
        "tenants, or a tenant's GPU work runs in a namespace no tenant owns, each tenant can "
        "use the other's credentials, volumes and API permissions, and audit logs and GPU "
        "usage name the shared identity instead of the tenant. The same holds outside the "
        "cluster: ServiceAccounts of several tenants federated to one cloud identity give each "
        "tenant the other's cloud permissions and data, and a tenant's GPU pods federated to "
        "the cloud identity of a platform workload (the Karpenter controller's role in "
        "kube-system, whether or not that workload holds a GPU) hold the platform's cloud "
        "permissions. The identity is read from the "
        "ServiceAccount's annotation (EKS IRSA `eks.amazonaws.com/role-arn`, Azure Workload "
        "Identity `azure.workload.identity/client-id`, GKE Workload Identity "
        "`iam.gke.io/gcp-service-account`, for pods on nodes that run GKE's metadata server) and "
        "from what the IRSA and Azure webhooks write into "
        "each pod (`AWS_ROLE_ARN`, `AZURE_CLIENT_ID`). On a GKE node pool without Workload "
        "Identity (no `iam.gke.io/gke-metadata-server-enabled` label), and for host-network "
        "pods on any GKE node, every pod reads the node's own service account token from the "
        "Compute Engine metadata server: GPU pods of several tenants in one such pool act as "
        "one identity. EKS Pod Identity associations and GKE "
        "IAM grants to a Kubernetes principal live in the cloud's IAM, not in the cluster: "
        "they are not judged. A snapshot without ServiceAccounts says so on its run. GPU work "
        "is any pod holding GPUs, whatever the vendor (`amd.com/gpu`, `habana.ai/gaudi` too)."
    ),
    remediation=(
        "Run each tenant's GPU jobs in a namespace the tenant owns, under a ServiceAccount of "
        "that namespace (`kubectl create serviceaccount <tenant>-jobs -n <tenant-namespace>` "
        "and set `spec.serviceAccountName`), and configure the submission system to "
        "impersonate the tenant's identity instead of using its own. Set "
        "`automountServiceAccountToken: false` where the job needs no API access. Federate each "
        "tenant's ServiceAccount to a cloud identity of its own (the "
        "`eks.amazonaws.com/role-arn`, `azure.workload.identity/client-id` or "
        "`iam.gke.io/gcp-service-account` annotation) and narrow the role's trust policy, the "
        "federated credential or the `roles/iam.workloadIdentityUser` binding to that one "
        "`<namespace>/<name>` ServiceAccount. On GKE, enable Workload Identity on the GPU "
        "node pools (`--workload-metadata=GKE_METADATA`) and keep tenant GPU pods off the "
        "host network."
    ),
    mappings=("SP800-53:AC-2", "SP800-53:AU-10"),
)
def shared_service_account(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for (namespace, account), parties in gpu_pods_by_identity(inputs).items():
        tenants = sorted(p for p in parties if p != PLATFORM_PARTY)
        # One party alone is fine in its own namespace (a tenant's, or unclassified pods in an
        # unclassified one); in a namespace nobody claims, one tenant's jobs run under an
        # identity that is not its own.
        alone_at_home = len(parties) < 2 and (
            inputs.claimed_tenant_of_namespace(namespace) is not None
            or set(parties) == {inputs.unclassified.slug}
        )
        if not tenants or alone_at_home:
            continue
        yield _account_draft(inputs, namespace, account, tenants, parties)
    # Separate accounts federated to one cloud role are one identity outside the cluster.
    yield from shared_cloud_identities(inputs, job_tenant)


def _pod_list(pods: list[Pod]) -> list[dict[str, Any]]:
    return [
        {"pod": pod_ref(p), "node": p.node_name, "gpu": p.accelerator_resources}
        for p in pods[:MEMBERS_SHOWN]
    ]


def _account_draft(
    inputs: PostureInputs,
    namespace: str,
    account: str,
    tenants: list[str],
    parties: dict[str, list[Pod]],
) -> FindingDraft:
    """One finding per service account: every tenant whose GPU work runs as it."""
    owner = inputs.tenant_of_namespace(namespace)
    evidence = {
        "service_account": f"{namespace}/{account}",
        "field": "spec.serviceAccountName",
        "namespace_owner": owner.slug if owner else None,
        # A list, not a dict by slug: redaction hides values, never keys.
        "parties": [
            {"party": party or "platform", "pods": _pod_list(pods), "pod_count": len(pods)}
            for party, pods in sorted(parties.items())
        ],
    }
    tenant_pods = [pod for slug in tenants for pod in parties[slug]]
    common = set.intersection(*(set(p.labels.items()) for p in tenant_pods))
    shared = "shared by" if len(parties) > 1 else "of a namespace no tenant owns, used by"
    who = ", ".join(p or "platform pods" for p in sorted(parties))
    return service_account_draft(
        "POD-010",
        namespace,
        account,
        tenants=tenants,
        evidence=evidence,
        title=f"GPU pods run as service account {namespace}/{account}, {shared} {who}",
        labels=dict(sorted(common)),
        exposure=len(tenant_pods),
        tenant_exposures={slug: len(parties[slug]) for slug in tenants},
    )
