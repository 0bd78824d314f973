"""Admission policies (VAP and bindings, Kyverno, Gatekeeper constraints) -> snapshot
dataclasses. PURE.

Which object is which is told by its API group, not its kind alone: Kyverno's `ClusterPolicy`
and the GPU Operator's share a kind name. Only what K8S-009 judges coverage by (the actions,
the resources or kinds, the namespaces and namespace selectors) and, for DRIFT-005, the spec
are kept; of the annotations only `gpuposture.io/*` (the checks a generated rule enforces).
"""

from __future__ import annotations

from typing import Any

from inventory.snapshot_admission import (
    GATEKEEPER,
    KYVERNO,
    VAP,
    VAP_BINDING,
    AdmissionPolicy,
    AdmissionScope,
)
from inventory.sources.raw import (
    dicts,
    dig,
    labels_of,
    mapping,
    meta,
    name_of,
    str_dict,
    str_tuple,
    text,
)

ADMISSION_GROUP = "admissionregistration.k8s.io"
KYVERNO_GROUP = "kyverno.io"
GATEKEEPER_GROUP = "constraints.gatekeeper.sh"
_VAP_KINDS = {
    "ValidatingAdmissionPolicy": VAP,
    "ValidatingAdmissionPolicyBinding": VAP_BINDING,
}
_KYVERNO_KINDS = ("ClusterPolicy", "Policy")
ANNOTATION_PREFIX = "gpuposture.io/"


def group_of(obj: dict[str, Any]) -> str:
    api_version = text(obj.get("apiVersion"), "") or ""
    return api_version.rpartition("/")[0]


def is_admission(obj: dict[str, Any]) -> bool:
    kind, group = text(obj.get("kind"), "") or "", group_of(obj)
    return (
        (group == ADMISSION_GROUP and kind in _VAP_KINDS)
        or (group == KYVERNO_GROUP and kind in _KYVERNO_KINDS)
        or group == GATEKEEPER_GROUP
    )


def admission_policy_from(obj: dict[str, Any]) -> AdmissionPolicy:
    """One admission object (is_admission(obj) must hold)."""
    kind, group = text(obj.get("kind"), "") or "", group_of(obj)
    spec = mapping(obj.get("spec"))
    if group == ADMISSION_GROUP:
        engine = _VAP_KINDS[kind]
        block = "matchConstraints" if engine == VAP else "matchResources"
        actions = str_tuple(spec.get("validationActions")) if engine == VAP_BINDING else ()
        scopes: tuple[AdmissionScope, ...] = (_vap_scope(dig(spec, block), actions),)
    elif group == KYVERNO_GROUP:
        engine, scopes = KYVERNO, _kyverno_scopes(obj, spec)
    else:
        engine, scopes = GATEKEEPER, (_gatekeeper_scope(spec),)
    annotations = str_dict(meta(obj).get("annotations"))
    return AdmissionPolicy(
        engine=engine,
        kind=kind,
        api_version=text(obj.get("apiVersion"), "") or "",
        namespace=_own_namespace(obj),
        name=name_of(obj),
        labels=labels_of(obj),
        annotations={k: v for k, v in annotations.items() if k.startswith(ANNOTATION_PREFIX)},
        policy_name=text(spec.get("policyName"), "") or "" if engine == VAP_BINDING else "",
        scopes=scopes,
        spec=spec,
    )


def _own_namespace(obj: dict[str, Any]) -> str:
    # Of these kinds only Kyverno's Policy is namespaced; a namespace on the others is a stray
    # field of a manifest and would wrongly narrow a cluster-wide policy.
    if obj.get("kind") != "Policy":
        return ""
    return text(meta(obj).get("namespace"), "") or ""


def _selector(raw: Any) -> dict[str, Any]:
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


def _selects_some(raw: Any) -> bool:
    selector = mapping(raw)
    return bool(mapping(selector.get("matchLabels")) or dicts(selector.get("matchExpressions")))


def _vap_scope(match: dict[str, Any], actions: tuple[str, ...]) -> AdmissionScope:
    rules = dicts(match.get("resourceRules"))
    return AdmissionScope(
        actions=actions,
        resources=tuple(r for rule in rules for r in str_tuple(rule.get("resources"))),
        operations=tuple(o for rule in rules for o in str_tuple(rule.get("operations"))),
        pod_selector=_selects_some(match.get("objectSelector")),
        **_selector(match.get("namespaceSelector")),
    )


def _kyverno_scopes(obj: dict[str, Any], spec: dict[str, Any]) -> tuple[AdmissionScope, ...]:
    """One scope per validate rule and per `match.any` entry (any of them admits the rule);
    `match.all` entries and the older `match.resources` make one scope together."""
    default = text(spec.get("validationFailureAction"), "Audit") or "Audit"
    policy_overrides = _overrides(spec.get("validationFailureActionOverrides"))
    own_namespace = _own_namespace(obj)
    scopes = []
    for rule in dicts(spec.get("rules")):
        validate = mapping(rule.get("validate"))
        if not validate:
            continue  # mutate / generate / verifyImages rules admit everything
        action = text(validate.get("failureAction"), default) or default
        overrides = _overrides(validate.get("failureActionOverrides")) or policy_overrides
        excluded = _kyverno_namespaces(mapping(rule.get("exclude")))
        match = mapping(rule.get("match"))
        entries = [dig(e, "resources") for e in dicts(match.get("any"))]
        combined = [dig(e, "resources") for e in dicts(match.get("all"))]
        if dig(match, "resources"):
            combined.append(dig(match, "resources"))
        if combined:
            entries.append(_merged(combined))
        for resources in entries:
            namespaces = str_tuple(resources.get("namespaces"))
            if own_namespace:  # a namespaced Policy applies in its own namespace only
                namespaces = (own_namespace,)
            scopes.append(
                AdmissionScope(
                    actions=(action,),
                    resources=str_tuple(resources.get("kinds")),
                    namespaces=namespaces,
                    excluded_namespaces=excluded,
                    pod_selector=_selects_some(resources.get("selector")),
                    action_overrides=overrides,
                    **_selector(resources.get("namespaceSelector")),
                )
            )
    return tuple(scopes)


def _overrides(raw: Any) -> tuple[dict[str, Any], ...]:
    """Kyverno's per-namespace action overrides, as written (a policy in Enforce may be only
    Audit in the namespaces listed or selected here)."""
    return tuple(
        {
            "action": text(o.get("action"), "") or "",
            "namespaces": list(str_tuple(o.get("namespaces"))),
            **_selector(o.get("namespaceSelector")),
        }
        for o in dicts(raw)
    )


def _merged(parts: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for part in parts:
        for key in ("kinds", "namespaces", "namespaceSelector"):
            if part.get(key):
                merged[key] = part[key]
    return merged


def _kyverno_namespaces(exclude: dict[str, Any]) -> tuple[str, ...]:
    parts = [dig(e, "resources") for e in dicts(exclude.get("any")) + dicts(exclude.get("all"))]
    parts.append(dig(exclude, "resources"))
    return tuple(ns for part in parts for ns in str_tuple(part.get("namespaces")))


def _gatekeeper_scope(spec: dict[str, Any]) -> AdmissionScope:
    match = mapping(spec.get("match"))
    kinds = dicts(match.get("kinds"))
    return AdmissionScope(
        # Gatekeeper's default is deny.
        actions=(text(spec.get("enforcementAction"), "deny") or "deny",),
        # No `kinds` matches every kind.
        resources=tuple(k for entry in kinds for k in str_tuple(entry.get("kinds"))) or ("*",),
        namespaces=str_tuple(match.get("namespaces")),
        excluded_namespaces=str_tuple(match.get("excludedNamespaces")),
        pod_selector=_selects_some(match.get("labelSelector")),
        **_selector(match.get("namespaceSelector")),
    )
