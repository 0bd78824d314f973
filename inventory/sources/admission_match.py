"""Kyverno match blocks and label selectors, read the same way for policies and for
PolicyExceptions. PURE.

A Kyverno PolicyException (kyverno.io/v2, v2beta1, v2alpha1) lets the requests it matches
past the rules it names (`exceptions[].policyName` / `ruleNames`, wildcards allowed in rule
names, `<namespace>/<name>` for a namespaced Policy). Its scopes keep where it applies
(kinds, namespaces, namespace selector), which of K8S-009's controls it lifts (all of a rule's,
or those of its `podSecurity` control names), and why a tenant can meet a narrower match: a
pod label selector, pod names, `conditions` on the request, or requesters; K8S-009 then counts
the exempted controls as not enforced in the namespaces it reaches.
"""

from __future__ import annotations

from typing import Any

from inventory.snapshot_admission import AdmissionScope
from inventory.sources.admission_controls import CONTROLS, pss_exempted
from inventory.sources.raw import dicts, dig, mapping, str_dict, str_tuple, text


def selector_fields(raw: Any) -> dict[str, Any]:
    selector = mapping(raw)
    return {
        "match_labels": str_dict(selector.get("matchLabels")),
        "match_expressions": tuple(
            {
                "key": text(e.get("key"), "") or "",
                "operator": text(e.get("operator"), "") or "",
                "values": list(str_tuple(e.get("values"))),
            }
            for e in dicts(selector.get("matchExpressions"))
        ),
    }


def selects_some(raw: Any) -> bool:
    selector = mapping(raw)
    return bool(mapping(selector.get("matchLabels")) or dicts(selector.get("matchExpressions")))


def merged_resources(parts: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for part in parts:
        for key in ("kinds", "namespaces", "namespaceSelector", "operations", "selector", "names"):
            if part.get(key):
                merged[key] = part[key]
    return merged


def exception_scopes(spec: dict[str, Any]) -> tuple[AdmissionScope, ...]:
    """One scope per `match.any` entry; the `match.all` entries (and a bare `resources`)
    together make one."""
    match = mapping(spec.get("match"))
    entries = [(dig(e, "resources"), [e]) for e in dicts(match.get("any"))]
    alls = dicts(match.get("all"))
    combined = [dig(e, "resources") for e in alls]
    if dig(match, "resources"):
        combined.append(dig(match, "resources"))
    if combined:
        entries.append((merged_resources(combined), [*alls, match]))
    lifted = _lifted(spec.get("podSecurity"))
    conditions = mapping(spec.get("conditions"))
    scopes = []
    for resources, blocks in entries:
        meets = []
        if selects_some(resources.get("selector")):
            meets.append("pods by their labels")
        if resources.get("names") or resources.get("name"):
            meets.append("objects by name")
        requesters = _requesters(blocks)
        if requesters:
            meets.append(f"requests by {', '.join(requesters)}")
        if conditions.get("any") or conditions.get("all"):
            meets.append("requests by `conditions` on what the request holds")
        if lifted[1]:
            meets.append(lifted[1])
        scopes.append(
            AdmissionScope(
                resources=str_tuple(resources.get("kinds")),
                operations=str_tuple(resources.get("operations")),
                namespaces=str_tuple(resources.get("namespaces")),
                controls=lifted[0],
                requesters=requesters,
                # A tenant writes its pods' labels, names, images and contents: a match
                # narrowed by them is one it can meet.
                narrowed_by="; ".join(meets),
                **selector_fields(resources.get("namespaceSelector")),
            )
        )
    return tuple(scopes)


def _requesters(blocks: list[dict[str, Any]]) -> tuple[str, ...]:
    """Who the match is limited to, as "ServiceAccount:ns/name", "Group:name", "User:name",
    "Role:ns:name" or "ClusterRole:name"."""
    found = []
    for block in blocks:
        for subject in dicts(block.get("subjects")):
            kind, name = text(subject.get("kind"), "") or "", text(subject.get("name"), "") or ""
            if kind == "ServiceAccount":
                name = f"{text(subject.get('namespace'), '') or ''}/{name}"
            found.append(f"{kind}:{name}")
        found += [f"Role:{r}" for r in str_tuple(block.get("roles"))]
        found += [f"ClusterRole:{r}" for r in str_tuple(block.get("clusterRoles"))]
    return tuple(found)


def _lifted(pod_security: Any) -> tuple[tuple[str, ...], str]:
    """The controls an exception lifts (every one without a `podSecurity` block) and, when
    its podSecurity entries name images, that a tenant meets them by its image's name."""
    entries = dicts(pod_security)
    if not entries:
        return CONTROLS, ""
    images = any(e.get("images") for e in entries)
    return pss_exempted(entries), "containers by image name" if images else ""
