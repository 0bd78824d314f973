"""ServiceAccounts, as far as POD-010 reads them: the cloud identity each is federated to. PURE.

Workload identity on the managed clouds is configured on the ServiceAccount, by an annotation
naming the cloud identity its pods act as:
- EKS IRSA: `eks.amazonaws.com/role-arn` (the pod identity webhook writes `AWS_ROLE_ARN` and a
  projected token into each new pod of the account; nothing when the webhook is off);
- Azure Workload Identity: `azure.workload.identity/client-id` (its webhook writes
  `AZURE_CLIENT_ID` into pods labelled `azure.workload.identity/use: "true"`);
- GKE Workload Identity: `iam.gke.io/gcp-service-account` (the GKE metadata server hands the
  pod that Google service account's tokens; nothing is written into the pod).
Only these annotations are kept: the account's token Secrets and image pull Secrets are names
of Secrets, never read. EKS Pod Identity associations and GKE's IAM grants to a Kubernetes
principal live in the cloud's IAM and leave no trace in the cluster.
"""

from __future__ import annotations

from typing import Any

from inventory.snapshot import ServiceAccount
from inventory.sources.raw import mapping, name_of, text

IRSA_ANNOTATION = "eks.amazonaws.com/role-arn"
AZURE_ANNOTATION = "azure.workload.identity/client-id"
GKE_ANNOTATION = "iam.gke.io/gcp-service-account"
IDENTITY_ANNOTATIONS = (IRSA_ANNOTATION, AZURE_ANNOTATION, GKE_ANNOTATION)


def service_account_from(obj: dict[str, Any], namespace: str) -> ServiceAccount:
    annotations = mapping(mapping(obj.get("metadata")).get("annotations"))
    identities = {
        key: value
        for key in IDENTITY_ANNOTATIONS
        if (value := (text(annotations.get(key)) or "").strip())
    }
    return ServiceAccount(namespace=namespace, name=name_of(obj), identities=identities)
