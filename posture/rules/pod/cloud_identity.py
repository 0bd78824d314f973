"""POD-010, the cloud side: GPU pods of several tenants that act as one cloud identity. PURE.

A ServiceAccount is namespaced, so two tenants never share one in Kubernetes terms; what they
do share in practice is the cloud identity their ServiceAccounts are federated to. It is read
from two places (inventory/sources/service_accounts.py):
- the ServiceAccount's annotation: EKS IRSA `eks.amazonaws.com/role-arn`, Azure Workload
  Identity `azure.workload.identity/client-id`, GKE Workload Identity
  `iam.gke.io/gcp-service-account` (an IRSA account is federated whether or not the webhook
  wrote the env, as the role's trust policy names the account). GKE writes nothing into the
  pod: its metadata server answers as the annotated Google service account only on nodes that
  run it, labelled `iam.gke.io/gke-metadata-server-enabled: "true"` (the label its DaemonSet
  selects; every Autopilot node); elsewhere the pod acts as the node's own service account, so
  the annotation counts only for pods on such a node in the snapshot;
- the variable the IRSA and Azure webhooks write into each pod, `AWS_ROLE_ARN` and
  `AZURE_CLIENT_ID` (a snapshot without ServiceAccounts still shows these).
On a GKE node that runs no GKE metadata server (its pool's workload metadata mode is
`GCE_METADATA`: "expose all Compute Engine metadata to pods"), and for host-network pods on any
GKE node (the metadata server does not intercept them), a pod gets the token of the node's own
Google service account: GPU pods of several tenants on one such pool act as one identity, read
per node pool (`cloud.google.com/gke-nodepool`; which account a pool runs as is not in the
cluster, so pools are not merged). Only nodes GKE labels so are read this way.
GPU pods of two tenants with the same identity assume the same role, read the same buckets and
appear in the cloud's audit log as one principal. A tenant's GPU pod that acts as the identity of
a platform workload (the Karpenter controller's role in kube-system) holds the platform's cloud
rights: the platform's pods count here whether or not they hold a GPU (only tenants' GPU work
is judged; the node pool identity of GKE is every pod's on the pool, so platform pods are not
parties to it). The severity stays DESIGN's (medium); the title and evidence name the platform's
workload. EKS Pod Identity
associations and GKE's IAM grants to a Kubernetes principal live in the cloud's IAM, invisible
from the cluster: nothing is said about them (no finding either way). A snapshot without
ServiceAccounts is said on its run (inventory/sources/files.py, kube_kinds.REFUSABLE_KINDS).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Iterator, Mapping

from inventory.env_seal import SEALED_VALUE
from inventory.snapshot import Pod, ServiceAccount
from inventory.sources.service_accounts import AZURE_ANNOTATION, GKE_ANNOTATION, IRSA_ANNOTATION
from posture.inputs import PostureInputs
from posture.rules.common import pod_ref
from posture.rules.dra_holdings import uses_accelerator
from posture.rules.registry import MEMBERS_SHOWN, FindingDraft
from posture.rules.subjects import subject_draft

PLATFORM_PARTY = ""
AWS, AZURE, GCP, GCE_NODE = "aws", "azure", "gcp", "gce-node"
IDENTITY_KINDS = {
    AWS: "AWS IAM role (IRSA)",
    AZURE: "Azure managed identity / app (Workload Identity)",
    GCP: "Google service account (GKE Workload Identity)",
    GCE_NODE: "Google service account of the GKE node pool (Compute Engine metadata server)",
}
GKE_NODE_POOL = "cloud.google.com/gke-nodepool"
# The variable a federation webhook writes into each pod -> the kind of identity it names.
IDENTITY_VARIABLES = {"AWS_ROLE_ARN": AWS, "AZURE_CLIENT_ID": AZURE}
# The ServiceAccount annotation that federates it -> the kind of identity it names.
IDENTITY_ANNOTATIONS = {IRSA_ANNOTATION: AWS, AZURE_ANNOTATION: AZURE, GKE_ANNOTATION: GCP}
GKE_METADATA_SERVER = "iam.gke.io/gke-metadata-server-enabled"
# A client id (a GUID) and a Google service account (an e-mail address) are case-insensitive.
CASE_INSENSITIVE = (AZURE, GCP)
SUBJECT_KIND = "CloudIdentity"
NAME_ROOM = 300  # Finding.subject_name holds 320: the pod's env value is the tenant's to write

Identity = tuple[str, str]  # (kind, value)
Accounts = Mapping[tuple[str, str], ServiceAccount]


def _identity(kind: str, value: str) -> Identity:
    value = value.strip()
    return kind, value.lower() if kind in CASE_INSENSITIVE else value


def cloud_identities(
    pod: Pod,
    accounts: Accounts | None = None,
    metadata_nodes: Collection[str] = (),
    gke_pools: Mapping[str, str] | None = None,
) -> dict[Identity, set[str]]:
    """Each cloud identity the pod acts as -> where it was read ("env AWS_ROLE_ARN", "annotation
    iam.gke.io/gcp-service-account on ServiceAccount ns/name"). Env: literal values only (a
    value from a ConfigMap or Secret is not read). `metadata_nodes`: the nodes that run GKE's
    metadata server, where the GKE annotation takes effect; `gke_pools`: GKE node -> its pool."""
    found: dict[Identity, set[str]] = {}
    pool = (gke_pools or {}).get(pod.node_name or "")
    if pool is not None and (pod.host_network or pod.node_name not in metadata_nodes):
        why = (
            "host-network pod (GKE's metadata server does not serve it)"
            if pod.host_network and pod.node_name in metadata_nodes
            else "no GKE metadata server on the node (Workload Identity off on its pool)"
        )
        found[(GCE_NODE, f"node pool {pool}")] = {f"GKE node {pod.node_name}: {why}"}
        return found  # the metadata server answers as the node: no annotation takes effect
    for c in pod.containers:
        if c.ephemeral:
            continue
        for var in c.env:
            if var.name in IDENTITY_VARIABLES and var.value and var.value != SEALED_VALUE:
                identity = _identity(IDENTITY_VARIABLES[var.name], var.value)
                found.setdefault(identity, set()).add(f"env {var.name}")
    account = (accounts or {}).get((pod.namespace, pod.service_account))
    for annotation, value in account.identities.items() if account else ():
        gke_elsewhere = annotation == GKE_ANNOTATION and pod.node_name not in metadata_nodes
        if annotation in IDENTITY_ANNOTATIONS and not gke_elsewhere:
            identity = _identity(IDENTITY_ANNOTATIONS[annotation], value)
            where = f"annotation {annotation} on ServiceAccount {pod.namespace}/{account.name}"
            found.setdefault(identity, set()).add(where)
    return found


def shared_cloud_identities(
    inputs: PostureInputs, party_of: Callable[[PostureInputs, Pod], str]
) -> Iterator[FindingDraft]:
    """One finding per cloud identity that the GPU pods of several parties (tenants, or a
    tenant and the platform) act as. `party_of(inputs, pod)` names whose work a pod is."""
    accounts = {(a.namespace, a.name): a for a in inputs.snapshot.service_accounts}
    metadata_nodes = {
        n.name for n in inputs.snapshot.nodes if n.labels.get(GKE_METADATA_SERVER) == "true"
    }
    gke_pools = {
        n.name: n.labels[GKE_NODE_POOL]
        for n in inputs.snapshot.nodes
        if n.labels.get(GKE_NODE_POOL)
    }
    groups: dict[Identity, dict[str, list[Pod]]] = {}
    sources: dict[Identity, set[str]] = {}
    for pod in sorted(inputs.snapshot.pods, key=pod_ref):
        if not pod.is_active:
            continue
        gpu_work = uses_accelerator(inputs, pod)
        if not gpu_work and party_of(inputs, pod) != PLATFORM_PARTY:
            continue  # a tenant's pod with no GPU is not the GPU work this check judges
        for identity, where in cloud_identities(pod, accounts, metadata_nodes, gke_pools).items():
            if not gpu_work and identity[0] == GCE_NODE:
                continue  # every pod on the pool is the node: no platform role taken over
            parties = groups.setdefault(identity, {})
            parties.setdefault(party_of(inputs, pod), []).append(pod)
            sources.setdefault(identity, set()).update(where)
    for identity, parties in sorted(groups.items()):
        tenants = sorted(p for p in parties if p != PLATFORM_PARTY)
        if tenants and len(parties) > 1:
            yield _identity_draft(identity, sorted(sources[identity]), tenants, parties)


def _identity_draft(
    identity: Identity, sources: list[str], tenants: list[str], parties: dict[str, list[Pod]]
) -> FindingDraft:
    kind, value = identity
    # The kinds of place it was read from: "annotation <key>", "env <variable>".
    fields = sorted({s.split(" on ServiceAccount")[0] for s in sources})
    names = ", ".join(f.split(" ", 1)[1] for f in fields)  # the keys and variables alone
    if kind == GCE_NODE:  # read from the nodes, not from a key or variable
        fields = ["the Compute Engine metadata server"]
        names = "the node's service account, from the metadata server"
    evidence: dict[str, object] = {
        "cloud_identity": value,
        "kind": IDENTITY_KINDS[kind],
        "field": "; ".join(fields),
        "read_from": sources[:MEMBERS_SHOWN],
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
    title = f"GPU pods of {who} act as one cloud identity {value} ({names})"
    if PLATFORM_PARTY in parties:
        # The tenants hold whatever the platform's workloads may do in the cloud.
        platform = sorted({f"{p.namespace}/{p.service_account}" for p in parties[PLATFORM_PARTY]})
        evidence["platform_service_accounts"] = platform
        evidence["platform_identity"] = (
            "the platform's own workloads act as this identity: the tenants' GPU pods hold "
            "the platform's cloud permissions"
        )
        title = (
            f"GPU pods of {', '.join(tenants)} act as the platform's cloud identity {value} "
            f"({names}), that of {', '.join(platform[:3])}"
        )
    return subject_draft(
        "POD-010",
        kind=SUBJECT_KIND,
        name=_subject_name(value),
        tenants=tenants,
        evidence=evidence,
        title=title,
        exposure=sum(len(parties[t]) for t in tenants),
        tenant_exposures={t: len(parties[t]) for t in tenants},
    )


def _subject_name(value: str) -> str:
    """The identity as the finding's subject: whole when it fits, else cut with a digest of
    the whole so two long values never name one subject."""
    if len(value) <= NAME_ROOM:
        return value
    digest = hashlib.sha256(value.encode()).hexdigest()[:16]
    return f"{value[: NAME_ROOM - 20]}...{digest}"
