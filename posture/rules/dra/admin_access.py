"""DRA-001: DRA admin access within a tenant's reach (DESIGN §2, §5).

A request with `adminAccess: true` is allocated devices whether or not other claims hold them,
and the container gets them with privileged access (monitoring, reset, reconfiguration): a
tenant with it reaches GPUs in use by other tenants. Kubernetes allows it only in namespaces
labelled `resource.kubernetes.io/admin-access: "true"`, so a tenant that may label its own
namespace (patch or update on namespaces through RBAC) can grant itself the right. Three
causes, each on its own subject: an admin-access claim or claim template in a tenant namespace,
a tenant namespace carrying the label, and a tenant principal able to set it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from inventory.snapshot_dra import ADMIN_ACCESS_LABEL, DraClaim, DraClaimTemplate
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.dra_holdings import dra_index
from posture.rules.k8s.grantees import judged_grantees, unclassified_evidence, unclassified_title
from posture.rules.k8s.rbac_escalation import paths_title, reaching
from posture.rules.k8s.rbac_eval import RBAC_KINDS, Grant, tenant_namespaces
from posture.rules.registry import DRA_KINDS, FindingDraft, check
from posture.rules.subjects import binding_draft, namespace_draft, subject_draft
from tenants.mapping import UNCLASSIFIED

LABEL_VERBS = ("patch", "update")


@check(
    id="DRA-001",
    needs=(*RBAC_KINDS, *DRA_KINDS),
    title="DRA admin access within a tenant's reach",
    severity="critical",
    scope="tenant",
    rationale=(
        "A DRA request with `adminAccess: true` is allocated devices even while other claims "
        "hold them and hands them to the container with administrative access: a tenant with "
        "it can watch, reset or reconfigure GPUs other tenants compute on. Kubernetes admits "
        "such requests only in namespaces labelled `resource.kubernetes.io/admin-access: "
        '"true"`, so a tenant able to label its own namespace can grant itself that reach.'
    ),
    remediation=(
        "Remove `adminAccess` from the tenant's ResourceClaims and ResourceClaimTemplates (spec."
        "devices.requests[].exactly.adminAccess in resource.k8s.io/v1, requests[].adminAccess "
        "in v1beta1) and run device monitoring from a platform namespace; remove the "
        "`resource.kubernetes.io/admin-access` label from tenant namespaces; and bind tenants "
        "to roles without patch or update on namespaces (or guard the label with an "
        "admission policy)."
    ),
    mappings=("SP800-53:AC-6", "SP800-53:SC-4"),
)
def dra_admin_access(inputs: PostureInputs) -> Iterator[FindingDraft]:
    yield from _admin_claims(inputs)
    yield from _labelled_namespaces(inputs)
    yield from _label_writers(inputs)


def _admin_claims(inputs: PostureInputs) -> Iterator[FindingDraft]:
    snapshot = inputs.snapshot
    objects: list[DraClaim | DraClaimTemplate] = [
        *snapshot.dra_claims,
        *snapshot.dra_claim_templates,
    ]
    from_templates = _generated_from_admin_templates(inputs)
    for obj in objects:
        tenant = inputs.tenant_of_namespace(obj.namespace)
        if tenant is None or not obj.admin_access:
            continue
        if isinstance(obj, DraClaim) and (obj.namespace, obj.name) in from_templates:
            continue  # the template is the cause: its finding stands for the claims it made
        kind = "ResourceClaim" if isinstance(obj, DraClaim) else "ResourceClaimTemplate"
        evidence = {
            "namespace": obj.namespace,
            "tenant": tenant.slug,
            kind.lower(): obj.name,
            "api_version": obj.api_version,
            "admin_requests": [
                {"request": r.name, "device_class": r.device_class}
                for r in obj.requests
                if r.admin_access
            ],
            "namespace_admin_label": _label(inputs, obj.namespace),
            **(_reach(inputs, obj) if isinstance(obj, DraClaim) else {}),
        }
        yield subject_draft(
            "DRA-001",
            kind=kind,
            namespace=obj.namespace,
            name=obj.name,
            tenants=(tenant,),
            evidence=evidence,
            key=f"DRA-001:claim:{kind}:{obj.namespace}/{obj.name}",
            # Named with its namespace, as every claim the product writes (dra_holdings).
            title=f"{kind} {obj.namespace}/{obj.name} of tenant {tenant.slug} asks for DRA "
            "adminAccess",
        )


def _generated_from_admin_templates(inputs: PostureInputs) -> set[tuple[str, str]]:
    """Claims Kubernetes generated for a pod from an adminAccess template."""
    admin_templates = {
        (t.namespace, t.name) for t in inputs.snapshot.dra_claim_templates if t.admin_access
    }
    if not admin_templates:
        return set()
    index = dra_index(inputs)
    generated = set()
    for pod in inputs.snapshot.pods:
        for entry in pod.resource_claims:
            if entry.template and (pod.namespace, entry.template) in admin_templates:
                generated |= {(c.namespace, c.name) for c in index.claims_of_pod(pod)}
    return generated


def _reach(inputs: PostureInputs, claim: DraClaim) -> dict[str, Any]:
    """The devices an allocated admin claim reaches, and who else holds them."""
    index = dra_index(inputs)
    reached = []
    for held in index.held_devices(claim):
        key = (held.result.driver, held.result.pool, held.result.device)
        others = sorted(h for h in index.holders.get(key, ()) if h != (claim.namespace, claim.name))
        reached.append(
            {
                "device": held.device_id,
                "node": held.node,
                "driver": held.result.driver,
                "other_claims": [f"{ns}/{name}" for ns, name in others],
            }
        )
    return {"devices_reached": reached} if reached else {}


def _labelled_namespaces(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for namespace in sorted(inputs.snapshot.namespaces, key=lambda n: n.name):
        tenant = inputs.tenant_of_namespace(namespace.name)
        if tenant is None or namespace.labels.get(ADMIN_ACCESS_LABEL, "").lower() != "true":
            continue
        yield namespace_draft(
            "DRA-001",
            inputs,
            namespace.name,
            tenants=(tenant,),
            evidence={
                "namespace": namespace.name,
                "tenant": tenant.slug,
                "label": f'{ADMIN_ACCESS_LABEL}="true"',
            },
            key=f"DRA-001:label:{namespace.name}",
            title=f"Namespace {namespace.name} of tenant {tenant.slug} allows DRA adminAccess",
        )


def _label_writers(inputs: PostureInputs) -> Iterator[FindingDraft]:
    """One finding per binding that lets tenants patch or update their own namespaces, for
    every tenant it lets (a binding to system:authenticated is one cause for all)."""
    Write = tuple[str, Grant, tuple[str, ...]]  # (namespace, grant, escalation paths)
    by_binding: dict[tuple[str, str, str], dict[str, list[Write]]] = {}
    for tenant in judged_grantees(inputs):
        for namespace, grant, paths in _namespace_writes(inputs, tenant):
            reached = by_binding.setdefault(grant.binding_ref, {})
            reached.setdefault(tenant.slug, []).append((namespace, grant, paths))
    tenants = {t.slug: t for t in judged_grantees(inputs)}
    for (kind, bound_in, name), reached in sorted(by_binding.items()):
        found = [w for writes in reached.values() for w in writes]
        namespaces = sorted({ns for ns, _, _ in found})
        shown = {json.dumps(g.as_evidence(), sort_keys=True): g.as_evidence() for _, g, _ in found}
        where = namespaces[0] if len(namespaces) == 1 else f"{len(namespaces)} namespaces"
        # Its own namespaces are what a tenant labels for itself; a binding that may label any
        # Namespace (cluster-admin) labels every other one too, which the title must not hide.
        everywhere = all(
            _labels_every_namespace(inputs, tenants[slug], (kind, bound_in, name))
            for slug in reached
        )
        if everywhere:
            own = "their" if len(reached) > 1 else "its"
            where = f"every namespace (including {own} own {where})"
        # Named only when no grant of the binding writes the namespace directly.
        paths = sorted({p for _, _, ps in found for p in ps})
        escalation = {"escalation": paths} if all(ps for _, _, ps in found) else {}
        how = paths_title(paths) if escalation else ""
        who = ", ".join(reached)
        unclaimed: dict[str, Any] = {}
        if UNCLASSIFIED in reached:  # service accounts of namespaces nobody claims (grantees)
            subjects = (g.subject for _, g, _ in reached[UNCLASSIFIED])
            unclaimed = unclassified_evidence(tenants[UNCLASSIFIED], subjects)
            who += unclassified_title(unclaimed)
        yield binding_draft(
            "DRA-001",
            kind,
            bound_in or None,
            name,
            tenants=tuple(tenants[slug] for slug in reached),
            evidence={
                # A list, not a dict by slug: redaction hides values, never keys.
                "namespaces_by_tenant": [
                    {"tenant": slug, "namespaces": sorted({ns for ns, _, _ in writes})}
                    for slug, writes in reached.items()
                ],
                "namespaces": namespaces,
                **({"every_namespace": True} if everywhere else {}),
                "label": ADMIN_ACCESS_LABEL,
                "verbs": list(LABEL_VERBS),
                "grants": list(shown.values()),
                **escalation,
                **unclaimed,
            },
            key=f"DRA-001:rbac:{kind}:{bound_in}/{name}",
            title=(
                f"Tenant{'s' if len(reached) > 1 else ''} {who} may label {where} for DRA "
                f"adminAccess{how} through {kind} {name}"
            ),
        )


def _namespace_writes(
    inputs: PostureInputs, tenant: TenantInfo
) -> list[tuple[str, Grant, tuple[str, ...]]]:
    """(namespace, grant, escalation paths) for each of the tenant's present namespaces it may
    patch or update, directly (no paths) or by escalation (rbac_escalation). A Namespace is
    cluster-scoped, but the authorizer passes its own name as the request's namespace, so a
    RoleBinding inside it grants on it too."""
    present = {n.name for n in inputs.snapshot.namespaces}
    found: list[tuple[str, Grant, tuple[str, ...]]] = []
    for namespace in sorted(tenant_namespaces(inputs, tenant) & present):
        for verb in LABEL_VERBS:
            reached = reaching(inputs, tenant, verb, "", "namespaces", namespace, namespace)
            found += [(namespace, g, paths) for g, paths in reached]
    return found


def _labels_every_namespace(
    inputs: PostureInputs, tenant: TenantInfo, binding: tuple[str, str, str]
) -> bool:
    """True when a grant of the binding lets the tenant patch or update any Namespace (a rule
    on namespaces with no resourceNames, cluster-wide), directly or by an escalation path."""
    return any(
        grant.binding_ref == binding
        for verb in LABEL_VERBS
        for grant, _ in reaching(inputs, tenant, verb, "", "namespaces", None, None)
    )


def _label(inputs: PostureInputs, namespace: str) -> str | None:
    labels = next((n.labels for n in inputs.snapshot.namespaces if n.name == namespace), {})
    return labels.get(ADMIN_ACCESS_LABEL)
