"""Claiming a namespace nobody claims (DESIGN §3, §5). PURE.

A namespace no tenant claims and that is not the platform's is unclassified: its pods are
judged as the system tenant `unclassified` under the strictest class (fail closed). Most such
namespaces are add-ons a chart installed before gpuposture (a CNI, a CSI driver, monitoring):
their findings ask to "remove privileged from calico-node", which would break the node. The
first change is to say whose the namespace is: label it `gpuposture.io/platform: "true"` if the
platform team runs it (its pods are then the platform's and those findings close), or add it to
its tenant (the registry's namespace list, or the `gpuposture.io/tenant` label), after which
the check's own remediation applies to that tenant.

A finding is the claim's when it affects the unclassified party alone and names the namespace
whose party that is: a workload's namespace (every pod check), a service account's or a DRA
claim's, the namespace itself (TEN-001, K8S-001...), or, for an RBAC finding on a binding, the
namespace of the service account it grants (`principal_namespace`), also where the tenants
it affects are the victims of that account's writes (K8S-008 with no other grantee), and for
a workload of the party's whose way onto its node also affects the tenants beside it (the
evidence's `neighbours`, posture.rules.pod.neighbours). Nothing
else: a binding's or a ConfigMap's own namespace is not the party's (a ConfigMap in the GPU
Operator's namespace), and a sharing mode's subject "namespace" is its pool."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tenants.mapping import PLATFORM_LABEL, TENANT_LABEL, UNCLASSIFIED

# Namespaced subjects that are objects of the namespace's own party (besides a workload, which
# every pod check names with its `workload` in the evidence).
PARTY_OBJECTS = ("ServiceAccount", "ResourceClaim", "ResourceClaimTemplate")
# Listed namespaces of the unclassified party shown on a page before "+N more".
NAMESPACES_SHOWN = 5


def claim_namespace(
    tenants: Iterable[str], kind: str, namespace: str, name: str, evidence: Any
) -> str:
    """The unclassified namespace whose claim closes (or moves) the finding; "" when it is no
    claim's: it affects a real tenant too (other than as the neighbour of the party's
    workload), or names no namespace of the party's."""
    affected = set(tenants)
    if affected == {UNCLASSIFIED}:
        return party_namespace(kind, namespace, name, evidence)
    facts = evidence if isinstance(evidence, Mapping) else {}
    # The party's own workload whose way onto its node reaches the tenants beside it
    # (posture.rules.pod.neighbours): the claim decides whose it is, as above. A tenant viewer
    # reads the party hidden, not in `tenants`: never a claim for them.
    beside = affected - {UNCLASSIFIED}
    own = facts.get("tenant") == UNCLASSIFIED and UNCLASSIFIED in affected
    if own and beside <= set(facts.get("neighbours") or ()):
        return party_namespace(kind, namespace, name, evidence)
    principal = facts.get("principal_namespace")
    if UNCLASSIFIED in affected and facts.get("grantees") == [UNCLASSIFIED] and principal:
        # A binding through which only an unclaimed namespace's accounts write in tenants'
        # namespaces (K8S-008): the tenants are its victims, the claim decides the cause (the
        # platform's accounts administer by design; a tenant's stay a cross-tenant write).
        return str(principal)
    return ""


def party_namespace(kind: str, namespace: str, name: str, evidence: Any) -> str:
    """The namespace of the party a finding's subject stands for ("" when it names none). An
    inclusion list: a subject's `namespace` is not always a Kubernetes namespace (a sharing
    mode's is its pool), nor the party's (a ConfigMap in the GPU Operator's namespace)."""
    facts = evidence if isinstance(evidence, Mapping) else {}
    principal = facts.get("principal_namespace")
    if isinstance(principal, str) and principal:
        return principal
    if kind == "Namespace":
        return name
    if isinstance(facts.get("workload"), str) or kind in PARTY_OBJECTS:
        return namespace
    return ""


def claim_title(namespace: str, count: int) -> str:
    """The claim action's title: what to do, both ways, and what it closes."""
    closes = "1 finding" if count == 1 else f"{count} findings"
    return (
        f'Claim namespace {namespace}: label it {PLATFORM_LABEL}="true" if the platform team '
        f"runs it, or add it to its tenant: closes {closes}"
    )


def claim_note(namespace: str) -> str:
    """Said before a check's remediation on a finding of an unclaimed namespace."""
    return (
        f"First claim namespace {namespace}: no tenant claims it and it is not a platform "
        f"namespace, so its pods are judged as the unclassified party (fail closed). If the "
        f'platform team runs it, label it {PLATFORM_LABEL}="true" (or list it in '
        f"GPUPOSTURE_PLATFORM_NAMESPACES): its pods are then the platform's and this finding "
        f"closes. If a tenant runs it, add it to that tenant's namespaces in the tenants file "
        f"(or label it {TENANT_LABEL}=<tenant slug>)."
    )


def with_claim_note(remediation: str, namespace: str) -> str:
    """A finding's remediation as shown: the claim first where the namespace is unclaimed."""
    if not namespace:
        return remediation
    return f"{claim_note(namespace)} Once a tenant's: {remediation}".strip()


def shown_namespaces(names: Iterable[str], limit: int = NAMESPACES_SHOWN) -> tuple[list[str], int]:
    """(the first `limit` names, how many more) for a page."""
    listed = list(names)
    return listed[:limit], max(0, len(listed) - limit)
