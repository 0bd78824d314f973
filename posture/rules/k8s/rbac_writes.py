"""The findings of K8S-003 and K8S-004: one draft per binding that lets a tenant principal
write any of the objects a check guards (rbac_targets), directly or by an escalation path
(rbac_escalation), naming the objects reached, the verbs, the path where it reaches more than
the direct grants, and the objects stood in for but not seen. PURE."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from inventory.rbac import ref as _ref
from posture.inputs import PostureInputs
from posture.rules.k8s.grantees import (
    judged_grantees,
    unclassified_evidence,
    unclassified_grantee,
    unclassified_title,
)
from posture.rules.k8s.rbac_escalation import Escalation, escalations, paths_title
from posture.rules.k8s.rbac_eval import Grant, effective_permissions
from posture.rules.k8s.rbac_targets import Target, target_index, writes_any
from posture.rules.registry import FindingDraft
from posture.rules.subjects import binding_draft


def _binding_draft(
    check_id: str,
    inputs: PostureInputs,
    reached_by: dict[str, list[Grant]],
    evidence: dict[str, Any],
    title: str,
) -> FindingDraft:
    """One finding per binding, for every tenant whose principals it reaches; reaching the
    unclassified party, it names the unclaimed namespaces (grantees.unclassified_evidence)."""
    grants = [g for found in reached_by.values() for g in found]
    kind, namespace, name = grants[0].binding_ref
    # A list, not a dict by slug: redaction hides values, never keys.
    by_tenant = [
        {"tenant": slug, "subjects": sorted({g.subject for g in found})}
        for slug, found in reached_by.items()
    ]
    subjects = sorted({s for entry in by_tenant for s in entry["subjects"]})
    # A binding to a group every tenant is in gives each the same grant: listed once.
    shown = {_json_key(g.as_evidence()): g.as_evidence() for g in grants}
    tenants = ", ".join(reached_by)
    plural = "s" if len(reached_by) > 1 else ""
    party = unclassified_grantee(inputs)
    unclaimed = {}
    if party is not None and party.slug in reached_by:
        unclaimed = unclassified_evidence(party, (g.subject for g in reached_by[party.slug]))
        tenants += unclassified_title(unclaimed)
    return binding_draft(
        check_id,
        kind,
        namespace,
        name,
        tenants=reached_by,
        evidence={
            "binding": _ref(kind, namespace or None, name),
            "subjects": subjects,
            "subjects_by_tenant": by_tenant,
            **evidence,
            **unclaimed,
            "grants": list(shown.values()),
        },
        title=f"{', '.join(subjects)} of tenant{plural} {tenants} {title} through {kind} {name}",
    )


def _json_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def write_findings(
    check_id: str,
    inputs: PostureInputs,
    targets: list[Target],
    verbs: tuple[str, ...],
) -> Iterator[FindingDraft]:
    """One draft per binding that lets a tenant principal write any of `targets`, directly or
    by an escalation path (rbac_escalation). A target standing in for objects not seen says
    so (`Target.unseen`); a draft reaching only targets of a lower severity takes it."""
    if not targets:
        return  # nothing to guard (no GPU configuration read): no binding reaches it
    by_binding: dict[tuple[str, str, str], dict[str, list[Grant]]] = {}
    escalating: dict[Grant, list[Escalation]] = {}  # the paths by which a grant reaches them
    index = target_index(targets)
    writes: dict[Grant, bool] = {}  # per grant: tenants and assumed identities share them
    for tenant in judged_grantees(inputs):
        paths_of = escalations(inputs, tenant)
        for grant in effective_permissions(inputs, tenant):
            paths = [e for e in paths_of.get(grant, ()) if writes_any(e, index, verbs, writes)]
            if paths or writes_any(grant, index, verbs, writes):
                reached_by = by_binding.setdefault(grant.binding_ref, {})
                reached_by.setdefault(tenant.slug, []).append(grant)
            if paths:
                escalating.setdefault(grant, []).extend(paths)
    for _ref_key, reached_by in sorted(by_binding.items()):
        grants = [g for found in reached_by.values() for g in found]
        reached = _reached(targets, grants, verbs, escalating)
        verbs_seen = [v for v in verbs if any(v in r["verbs"] for r in reached)]
        objects = ", ".join(r["object"] for r in reached)
        title = f"may {'/'.join(verbs_seen)} {objects}"
        evidence: dict[str, Any] = {"objects": reached}
        shown_targets = _reached_targets(targets, reached)
        unseen = "; ".join(dict.fromkeys(t.unseen for t in shown_targets if t.unseen))
        if unseen:
            evidence["target_seen"] = False
            evidence["target_unseen"] = unseen
            title += f" ({unseen})"
        severities = {t.severity for t in shown_targets}
        direct = any(t.verbs_allowed(g, verbs) for t in targets for g in grants)
        found_paths = [e for g in grants for e in escalating.get(g, ())]
        # A total path says it all: the identities it could also assume add nothing.
        shown = [e for e in found_paths if e.total] or found_paths
        paths = sorted({e.how for e in shown})
        # A direct grant is the cause to name; the escalation is named too where it reaches
        # objects or verbs the direct grants do not, so no object reads as written directly.
        if paths and (not direct or _beyond_direct(targets, grants, verbs, found_paths)):
            evidence["escalation"] = paths
            title += paths_title(paths)
        draft = _binding_draft(check_id, inputs, reached_by, evidence, title)
        # Only objects that may not exist reached (their targets say low): the finding is low.
        if len(severities) == 1 and "" not in severities:
            draft = replace(draft, severity=severities.pop())
        yield draft


def _beyond_direct(
    targets: list[Target], grants: list[Grant], verbs: tuple[str, ...], paths: list[Escalation]
) -> bool:
    """Whether the escalation paths write a target (or a verb of it) the grants do not."""
    for target in targets:
        direct = {v for g in grants for v in target.verbs_allowed(g, verbs)}
        if any(set(target.verbs_allowed(e, verbs)) - direct for e in paths):
            return True
    return False


def _reached(
    targets: list[Target],
    grants: list[Grant],
    verbs: tuple[str, ...],
    escalating: dict[Grant, list[Escalation]],
) -> list[dict[str, Any]]:
    """Each target the grants may write, with the verbs (directly or by an escalation)."""
    reached = []
    ways: list[Grant | Escalation] = [*grants, *(e for g in grants for e in escalating.get(g, ()))]
    for target in targets:
        allowed = {v for way in ways for v in target.verbs_allowed(way, verbs)}
        if allowed:
            ordered = [v for v in verbs if v in allowed]
            found = {"object": target.ref(), "purpose": target.purpose, "verbs": ordered}
            if target.why:
                found["why"] = target.why
            reached.append({**found, "seen": False} if target.unseen else found)
    # Every node (of a resource, in a namespace) reached: naming each one of it adds nothing.
    # Per namespace: every ConfigMap of one namespace says nothing of another's.
    every = {(t.resource, t.namespace) for t in targets if t.name is None}
    every &= {
        (t.resource, t.namespace)
        for t in targets
        if t.name is None and t.ref() in _objects(reached)
    }
    return [
        r
        for r, t in zip(reached, _reached_targets(targets, reached), strict=True)
        if t.name is None or (t.resource, t.namespace) not in every
    ]


def _objects(reached: list[dict[str, Any]]) -> set[str]:
    return {r["object"] for r in reached}


def _reached_targets(targets: list[Target], reached: list[dict[str, Any]]) -> list[Target]:
    by_ref = {t.ref(): t for t in targets}
    return [by_ref[r["object"]] for r in reached]
