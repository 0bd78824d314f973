"""POD-010, the cloud side: GPU pods of several tenants that act as one cloud identity. PURE.

A ServiceAccount is namespaced, so two tenants never share one in Kubernetes terms; what they
do share in practice is the cloud role their ServiceAccounts are federated to. EKS IRSA (the
`eks.amazonaws.com/role-arn` annotation) and Azure Workload Identity
(`azure.workload.identity/client-id`) have their admission webhooks write the identity into
every pod of such an account, as `AWS_ROLE_ARN` and `AZURE_CLIENT_ID`: GPU pods of two tenants
carrying the same value assume the same role, read the same buckets and appear in the cloud's
audit log as one principal. GKE Workload Identity (`iam.gke.io/gcp-service-account`) and EKS Pod
Identity leave no trace in the pod, so they are not seen here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator

from inventory.env_seal import SEALED_VALUE
from inventory.snapshot import Pod
from posture.inputs import PostureInputs
from posture.rules.common import pod_ref
from posture.rules.dra_holdings import uses_gpu
from posture.rules.registry import MEMBERS_SHOWN, FindingDraft
from posture.rules.subjects import subject_draft

PLATFORM_PARTY = ""
# The variable a federation webhook writes into each pod -> the kind of identity it names.
IDENTITY_VARIABLES = {
    "AWS_ROLE_ARN": "AWS IAM role (IRSA)",
    "AZURE_CLIENT_ID": "Azure managed identity / app (Workload Identity)",
}
SUBJECT_KIND = "CloudIdentity"
NAME_ROOM = 300  # Finding.subject_name holds 320: the pod's env value is the tenant's to write


def cloud_identities(pod: Pod) -> set[tuple[str, str]]:
    """(variable, value) of each cloud identity a container of the pod acts as (literal values
    only: a value from a ConfigMap or Secret is not read)."""
    return {
        (var.name, var.value.strip())
        for c in pod.containers
        if not c.ephemeral
        for var in c.env
        if var.name in IDENTITY_VARIABLES and var.value and var.value != SEALED_VALUE
    }


def shared_cloud_identities(
    inputs: PostureInputs, party_of: Callable[[PostureInputs, Pod], str]
) -> Iterator[FindingDraft]:
    """One finding per cloud identity that the GPU pods of several parties (tenants, or a
    tenant and the platform) act as. `party_of(inputs, pod)` names whose work a pod is."""
    groups: dict[tuple[str, str], dict[str, list[Pod]]] = {}
    for pod in sorted(inputs.snapshot.pods, key=pod_ref):
        if not pod.is_active or not uses_gpu(inputs, pod):
            continue
        for identity in cloud_identities(pod):
            parties = groups.setdefault(identity, {})
            parties.setdefault(party_of(inputs, pod), []).append(pod)
    for (variable, value), parties in sorted(groups.items()):
        tenants = sorted(p for p in parties if p != PLATFORM_PARTY)
        if tenants and len(parties) > 1:
            yield _identity_draft(variable, value, tenants, parties)


def _identity_draft(
    variable: str, value: str, tenants: list[str], parties: dict[str, list[Pod]]
) -> FindingDraft:
    evidence: dict[str, object] = {
        "cloud_identity": value,
        "kind": IDENTITY_VARIABLES[variable],
        "field": f"env {variable} (written by the federation webhook from the ServiceAccount)",
        "parties": [
            {
                "party": party or "platform",
                "service_accounts": sorted({f"{p.namespace}/{p.service_account}" for p in pods}),
                "pods": [{"pod": pod_ref(p), "node": p.node_name} for p in pods[:MEMBERS_SHOWN]],
                "pod_count": len(pods),
            }
            for party, pods in sorted(parties.items())
        ],
    }
    who = ", ".join(p or "platform pods" for p in sorted(parties))
    return subject_draft(
        "POD-010",
        kind=SUBJECT_KIND,
        name=_subject_name(value),
        tenants=tenants,
        evidence=evidence,
        title=f"GPU pods of {who} act as one cloud identity {value} ({variable})",
        exposure=sum(len(parties[t]) for t in tenants),
    )


def _subject_name(value: str) -> str:
    """The identity as the finding's subject: whole when it fits, else cut with a digest of
    the whole so two long values never name one subject."""
    if len(value) <= NAME_ROOM:
        return value
    digest = hashlib.sha256(value.encode()).hexdigest()[:16]
    return f"{value[: NAME_ROOM - 20]}...{digest}"
