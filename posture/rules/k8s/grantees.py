"""Whose rights the RBAC checks judge (K8S-003, K8S-004, K8S-008, DRA-001). PURE.

A tenant of the `platform` class is the platform team's own (DESIGN §3): its principals and
service accounts (Karpenter patching nodes, Kueue admitting jobs, the admins binding
cluster-admin) administer nodes, GPU configuration and tenants' namespaces by design. Judged as
a tenant reaching others, the least trusted grantee of all, they raised criticals for the
platform doing its job, while the same namespaces left unowned (platform namespaces) raised
nothing. Their namespaces stay protected: another tenant writing there is still K8S-008.

The service accounts of unclassified namespaces (claimed by no tenant, not the platform's) are
the unclassified party's, judged as a tenant of its class is: fail closed, "nothing unknown is
ever judged as `platform`". Left out, a Velero bound to cluster-admin or an Argo CD controller
holding `*` in a namespace nobody labelled could repartition every tenant's GPUs unreported,
while the same namespace's pods were judged. Users and groups no tenant lists name no namespace:
they belong to no party (only the groups every identity is in reach each one).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from inventory.rbac import service_account_namespace
from inventory.snapshot import Subject
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import PLATFORM
from tenants.mapping import UNCLASSIFIED


def judged_grantees(inputs: PostureInputs) -> list[TenantInfo]:
    """The tenants whose principals' rights are judged, by slug: the registry's (but the
    platform class's) and the unclassified party while an unclassified namespace exists."""
    found = [t for t in inputs.tenants if t.trust_class.slug != PLATFORM and t.slug != UNCLASSIFIED]
    party = unclassified_grantee(inputs)
    return sorted([*found, *([party] if party else [])], key=lambda t: t.slug)


def unclassified_grantee(inputs: PostureInputs) -> TenantInfo | None:
    """The unclassified party with its namespaces (those present no tenant claims and the
    platform does not own), whose service accounts are its principals; None without one."""
    key = ("rbac-unclassified-grantee",)
    if key not in inputs.memo:
        names = [ns for ns in _namespaces(inputs) if inputs.is_unclassified(ns)]
        party = replace(inputs.unclassified, namespaces=tuple(sorted(names))) if names else None
        inputs.memo[key] = party
    return inputs.memo[key]  # type: ignore[return-value]  # what this function stored


def _namespaces(inputs: PostureInputs) -> set[str]:
    """The cluster's namespaces; where the snapshot lists none, those its pods and the service
    accounts its bindings name live in (as K8S-008 takes every claimed one then)."""
    snapshot = inputs.snapshot
    if snapshot.namespaces:
        return {ns.name for ns in snapshot.namespaces}
    named = {service_account_namespace(s) for b in snapshot.bindings for s in b.subjects}
    return {ns for ns in named if ns} | {p.namespace for p in snapshot.pods}


def unclassified_evidence(party: TenantInfo, subjects: Iterable[str]) -> dict[str, Any]:
    """What a finding reaching the unclassified party says of it, from the party's subject
    labels ("ServiceAccount:NS/NAME", ...): the unclaimed namespaces its service accounts live
    in, `principal_namespace` when they are one (claiming it closes the finding: the claim
    action groups by it), and how to give a namespace its owner."""
    namespaces = sorted({ns for s in subjects if (ns := label_namespace(s))})
    evidence: dict[str, Any] = {"unclassified_namespaces": namespaces}
    if len(namespaces) == 1:
        evidence["principal_namespace"] = namespaces[0]
    judged = f"judged as the unclassified party (class {party.trust_class.slug})"
    if namespaces:
        evidence["why_unclassified"] = (
            f"namespace{'s' if len(namespaces) > 1 else ''} {', '.join(namespaces)}: claimed by "
            f"no tenant and not a platform namespace, so its service accounts are {judged}: "
            'claim it for its tenant, or label it gpuposture.io/platform="true" if it is the '
            "platform's"
        )
    else:  # reached only as one of every identity (system:authenticated, ...)
        evidence["why_unclassified"] = (
            "the subjects take in every identity, so also the service accounts of namespaces "
            f"no tenant claims and the platform does not own, {judged}"
        )
    return evidence


def unclassified_title(evidence: dict[str, Any]) -> str:
    """ " (unclaimed namespace NS)" for a title naming the unclassified party."""
    namespaces = evidence.get("unclassified_namespaces") or []
    if not namespaces:
        return ""
    plural = "s" if len(namespaces) > 1 else ""
    return f" (unclaimed namespace{plural} {', '.join(namespaces)})"


def label_namespace(label: str) -> str | None:
    """The namespace of the service account(s) a subject label names, None for any other."""
    kind, _, name = label.partition(":")
    if kind == "ServiceAccount":
        namespace, _, account = name.partition("/")
        return service_account_namespace(Subject("ServiceAccount", account, namespace))
    return service_account_namespace(Subject(kind, name))
