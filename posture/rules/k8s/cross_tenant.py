"""K8S-008: a binding lets another tenant's principal write in a tenant's namespace.

Over the PURE evaluator (rbac_eval): a RoleBinding reaches its own namespace, a ClusterRoleBinding
every tenant namespace; aggregated ClusterRoles and wildcards count as the API server counts them.
A write is any verb that changes objects or rights: create, update, patch, delete,
deletecollection, `*`, escalate, bind, impersonate, on a resource that lives in a namespace
(namespace_writes). The write counts however it is reached: directly, or by an escalation path of
rbac_escalation (impersonating, minting a token for or running pods as an identity that writes
there, bind/escalate, chains), as K8S-003 counts it; the finding is then on the binding that opens
the path, and its evidence names the path. One finding per binding, for the owners of the
namespaces it reaches and the tenants it reaches them from; its exposure is the namespaces reached,
and each owner's own is its namespaces among them (the grantees keep the whole count). High, as
DESIGN §5 rates it, whatever the victims' classes: the risk points already weigh each victim's
class (§6), so a sensitive victim among many raises its own risk and not its neighbours'. The title
names the namespaces of a stricter or sensitive class (a class guarding sensitive data says so by
its data: a reset attestation or approvals that expire, whatever its slug) among those reached,
never the whole list as one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from inventory.rbac import ANY, ref
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.k8s.grantees import judged_grantees, unclassified_evidence, unclassified_title
from posture.rules.k8s.namespace_writes import WRITE_VERBS, write_verbs
from posture.rules.k8s.rbac_escalation import Escalation, escalations, paths_title
from posture.rules.k8s.rbac_eval import RBAC_KINDS, Grant, effective_permissions
from posture.rules.registry import MEMBERS_SHOWN, TITLE_MAX, FindingDraft, check
from posture.rules.subjects import binding_draft
from tenants.mapping import UNCLASSIFIED


@dataclass(frozen=True)
class Reach:
    """One tenant's grant that writes in another tenant's namespace."""

    namespace: str
    owner: TenantInfo
    grantee: TenantInfo
    grant: Grant
    verbs: tuple[str, ...]
    # The escalation paths by which the grant writes there; empty when it writes there itself.
    paths: tuple[str, ...] = ()

    @property
    def stricter(self) -> bool:
        return self.owner.trust_class.rank > self.grantee.trust_class.rank

    @property
    def sensitive(self) -> bool:
        """A less trusted tenant writes where a class guarding sensitive data lives."""
        return self.stricter and self.owner.trust_class.guards_sensitive_data


def _tenant_namespaces(inputs: PostureInputs) -> list[str]:
    """Namespaces a tenant owns that the cluster has (all owned ones if it lists none)."""
    present = {ns.name for ns in inputs.snapshot.namespaces}
    return sorted(ns for ns in inputs.namespace_owner if not present or ns in present)


def cross_tenant_writes(inputs: PostureInputs) -> list[Reach]:
    """Every (namespace, grantee, grant) where a tenant's identity may write in a namespace
    another tenant owns, directly or by an escalation path (then with the paths)."""
    owned = _tenant_namespaces(inputs)
    writes: dict[Grant, dict[str, tuple[str, ...]]] = {}  # shared by every path to an identity
    found = []
    for grantee in judged_grantees(inputs):
        paths_of = escalations(inputs, grantee)
        for grant in effective_permissions(inputs, grantee):
            direct = _writes(grant, owned, writes)
            escalated = _escalated(paths_of.get(grant, ()), owned, writes)
            for namespace in sorted(direct.keys() | escalated.keys()):
                # The claimed owner: nobody is "another tenant" in an unclassified namespace.
                owner = inputs.claimed_tenant_of_namespace(namespace)
                if owner is None or owner.slug == grantee.slug:
                    continue
                if namespace in direct:  # the grant itself is the cause to name
                    found.append(Reach(namespace, owner, grantee, grant, direct[namespace]))
                    continue
                verbs, paths = escalated[namespace]
                found.append(Reach(namespace, owner, grantee, grant, verbs, paths))
    return found


def _writes(
    grant: Grant, owned: list[str], memo: dict[Grant, dict[str, tuple[str, ...]]]
) -> dict[str, tuple[str, ...]]:
    """The namespaces the grant writes in (a RoleBinding's own, or every tenant namespace for
    a ClusterRoleBinding), with its write verbs there."""
    if grant not in memo:
        found: dict[str, tuple[str, ...]] = {}
        if any(v == ANY or v in WRITE_VERBS for v in grant.rule.verbs):
            for namespace in owned if grant.scope is None else [grant.scope]:
                if verbs := write_verbs(grant.rule, namespace):
                    found[namespace] = verbs
        memo[grant] = found
    return memo[grant]


def _escalated(
    paths: tuple[Escalation, ...],
    owned: list[str],
    memo: dict[Grant, dict[str, tuple[str, ...]]],
) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """(verbs, paths) for each namespace the escalation paths write in. A total path writes
    anything (`*`) where it holds; the others what the assumed identity's grants write."""
    reached: dict[str, dict[Escalation, set[str]]] = {}
    for path in paths:
        if path.total:
            where = owned if path.namespace is None else [path.namespace]
            for namespace in where:
                reached.setdefault(namespace, {}).setdefault(path, set()).add(ANY)
            continue
        for held in path.grants:
            for namespace, verbs in _writes(held, owned, memo).items():
                reached.setdefault(namespace, {}).setdefault(path, set()).update(verbs)
    found = {}
    for namespace, by_path in reached.items():
        # A total path says it all: the identities it could also assume add nothing.
        shown = [p for p in by_path if p.total] or list(by_path)
        verbs = sorted({v for p in shown for v in by_path[p]})
        found[namespace] = (tuple(verbs), tuple(sorted({p.how for p in shown})))
    return found


@check(
    id="K8S-008",
    needs=RBAC_KINDS,
    title="A binding gives another tenant's principal write access in a tenant's namespace",
    severity="high",
    scope="tenant",
    rationale=(
        "Tenants are kept apart by namespace. A RoleBinding in one tenant's namespace, or a "
        "ClusterRoleBinding, that grants another tenant's group, user or service accounts "
        "create, update, patch, delete, escalate, bind or impersonate there lets that tenant "
        "run pods in the victim's namespace (on its GPUs, with its quota, service accounts and "
        "mounted Secrets), change its workloads and data, or widen its own rights. The right "
        "counts however it is reached: directly, or by taking an identity that holds it "
        "(impersonation, a service-account token or a legacy token Secret, running pods, exec "
        "or a workflow, training or Ray job in another namespace, in turn along a chain) or by "
        "bind/escalate; the finding is then on the binding that opens the path, and the "
        "evidence names the path (`escalation`). A rule on cluster-scoped resources only "
        "(nodes, ClusterRoles, the GPU Operator's ClusterPolicy, the Network Operator's "
        "NicClusterPolicy) writes in no namespace; a custom resource whose scope the product "
        "does not know counts, as a wildcard does. Bindings to "
        "system:authenticated or every service account reach every tenant at once. It is "
        "worst when the namespace belongs to a class that guards sensitive data and the "
        "grantee's class is less trusted: external or other teams' code reaching a sensitive "
        "tenant's models and data (evidence: sensitive_class, and the title names those "
        "namespaces); the finding stays high, and that tenant's class weight raises its own "
        "risk points. Each victim's exposure is the namespaces of its own the binding reaches "
        "(the grantee's, all of them), so a tenant with one namespace among many reached is "
        "weighed by that one. The principals of a "
        "tenant of the platform class are the platform team's own, administering by design "
        "(as in K8S-003, K8S-004 and DRA-001); others writing in its namespaces count. The "
        "service accounts of a namespace no tenant claims and the platform does not own are "
        "the unclassified party's, judged under its class like a tenant's (fail closed, as in "
        "those checks; `principal_namespace` names the namespace to claim)."
    ),
    remediation=(
        "Delete the binding in the evidence, or remove the other tenant's subjects from it. "
        "Cross-tenant collaboration gets read-only access (`view`) through a reviewed "
        "binding, or a shared namespace of its own; never bind tenant groups to "
        "system:authenticated or system:serviceaccounts, and keep ClusterRoleBindings to the "
        "platform's own identities."
    ),
    mappings=("SP800-53:AC-3", "SP800-53:AC-6"),
)
def cross_tenant_write_bindings(inputs: PostureInputs) -> Iterator[FindingDraft]:
    by_binding: dict[tuple[str, str, str], list[Reach]] = {}
    for reach in cross_tenant_writes(inputs):
        by_binding.setdefault(reach.grant.binding_ref, []).append(reach)
    for (kind, namespace, name), reaches in sorted(by_binding.items()):
        yield _draft(kind, namespace, name, reaches)


def _draft(kind: str, namespace: str, name: str, reaches: list[Reach]) -> FindingDraft:
    stricter = any(r.stricter for r in reaches)
    sensitive = any(r.sensitive for r in reaches)
    namespaces = sorted({r.namespace for r in reaches})
    grantees = sorted({r.grantee.slug for r in reaches})
    owners = sorted({r.owner.slug for r in reaches})
    verbs = sorted({v for r in reaches for v in r.verbs})
    shown = {json.dumps(g, sort_keys=True): g for g in (r.grant.as_evidence() for r in reaches)}
    evidence = {
        "binding": ref(kind, namespace or None, name),
        "role": ref(reaches[0].grant.role_kind, None, reaches[0].grant.role_name),
        "write_verbs": verbs,
        "stricter_class": stricter,
        "sensitive_class": sensitive,
        "namespaces": [_namespace_entry(ns, reaches) for ns in namespaces[:MEMBERS_SHOWN]],
        "namespace_count": len(namespaces),
        "grants": list(shown.values())[:MEMBERS_SHOWN],
        "grantees": grantees,
    }
    paths = sorted({p for r in reaches for p in r.paths})
    if paths:
        evidence["escalation"] = paths
    unclaimed = ""
    party = [r for r in reaches if r.grantee.slug == UNCLASSIFIED]
    if party:  # the service accounts of namespaces nobody claims (grantees)
        found = unclassified_evidence(party[0].grantee, (r.grant.subject for r in party))
        evidence |= found
        unclaimed = unclassified_title(found)
    said = "do anything" if ANY in verbs else "/".join(verbs)  # `*`: every verb, said plainly
    for shown_names in (_CLASSED_SHOWN, 0):  # the namespaces named, else only counted
        title = (
            f"{kind} {name} lets tenant{'s' if len(grantees) > 1 else ''} {', '.join(grantees)}"
            f"{unclaimed} {said} in {_where(namespaces, reaches, shown_names)}"
            f" (owned by {', '.join(owners)})"
        )
        if len(title) <= TITLE_MAX:
            break
    if paths and all(r.paths for r in reaches):  # a direct write is the cause to name
        title += paths_title(paths)
    return binding_draft(
        "K8S-008",
        kind,
        namespace,
        name,
        tenants=[*owners, *grantees],
        evidence=evidence,
        title=title,
        exposure=len(namespaces),
        tenant_exposures=_victim_exposures(reaches, grantees),
    )


def _victim_exposures(reaches: list[Reach], grantees: list[str]) -> dict[str, int]:
    """Each victim's own exposure: how many of its namespaces the binding reaches (a CPU-only
    tenant with one namespace among seven reached is weighed by 1, not 7: DESIGN §6, what the
    cause spans of that tenant's). A grantee keeps the full count (its principals write in
    every namespace reached), also where it owns some of them."""
    owned: dict[str, set[str]] = {}
    for reach in reaches:
        owned.setdefault(reach.owner.slug, set()).add(reach.namespace)
    return {slug: len(found) for slug, found in owned.items() if slug not in grantees}


# Namespaces of a stricter or sensitive class a title names before it counts the rest.
_CLASSED_SHOWN = 3


def _where(namespaces: list[str], reaches: list[Reach], shown: int) -> str:
    """Where the binding writes, saying which of the namespaces are of a sensitive or a
    stricter class than the grantee's: "7 namespaces (1 of a sensitive class: clinical-nlp)",
    not the whole list as of the worst one's class."""
    sensitive = sorted({r.namespace for r in reaches if r.sensitive})
    stricter = sorted({r.namespace for r in reaches if r.stricter} - set(sensitive))
    if len(namespaces) == 1:
        worse = "sensitive" if sensitive else "stricter" if stricter else ""
        return namespaces[0] + (f" of a {worse} trust class" if worse else "")
    parts = [
        f"{len(found)} of a {word} class"
        + (f": {', '.join(found[:shown])}" if shown else "")
        + (f" and {len(found) - shown} more" if shown and len(found) > shown else "")
        for word, found in (("sensitive", sensitive), ("stricter", stricter))
        if found
    ]
    return f"{len(namespaces)} namespaces" + (f" ({'; '.join(parts)})" if parts else "")


def _namespace_entry(namespace: str, reaches: list[Reach]) -> dict[str, Any]:
    here = [r for r in reaches if r.namespace == namespace]
    grantees: dict[str, list[Reach]] = {}
    for reach in here:
        grantees.setdefault(reach.grantee.slug, []).append(reach)
    return {
        "namespace": namespace,
        "owner": here[0].owner.slug,
        "owner_class": here[0].owner.trust_class.slug,
        # A list, not a dict by slug: redaction hides values, never keys.
        "grantees": [
            {
                "tenant": slug,
                "trust_class": found[0].grantee.trust_class.slug,
                "subjects": sorted({r.grant.subject for r in found}),
                "verbs": sorted({v for r in found for v in r.verbs}),
                "stricter_class": found[0].stricter,
                "sensitive_class": found[0].sensitive,
                # How it writes here when its grants do not say so themselves.
                **(
                    {"escalation": sorted({p for r in found for p in r.paths})}
                    if all(r.paths for r in found)
                    else {}
                ),
            }
            for slug, found in sorted(grantees.items())
        ],
    }
