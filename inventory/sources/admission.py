"""Admission policies (VAP and bindings, Kyverno and its PolicyExceptions, Gatekeeper
constraints, OpenShift's SecurityContextConstraints) -> snapshot dataclasses. PURE.

Which object is which is told by its API group, not its kind alone: Kyverno's `ClusterPolicy`
and the GPU Operator's share a kind name. Only what K8S-009 judges coverage by (the actions,
the resources or kinds, the namespaces and namespace selectors) and, for DRIFT-005, the spec
are kept; of the annotations only `gpuposture.io/*` (the checks a generated rule enforces).
"""

from __future__ import annotations

from typing import Any

from inventory.snapshot_admission import (
    GATEKEEPER,
    GATEKEEPER_CONFIG,
    KYVERNO,
    KYVERNO_EXCEPTION,
    SCC,
    VAP,
    VAP_BINDING,
    AdmissionPolicy,
    AdmissionScope,
)
from inventory.sources.admission_controls import (
    gatekeeper_controls,
    kyverno_controls,
    vap_controls,
)
from inventory.sources.admission_match import (
    exception_scopes,
    merged_resources,
    selector_fields,
    selects_some,
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
GATEKEEPER_CONFIG_GROUP = "config.gatekeeper.sh"
SCC_GROUP = "security.openshift.io"
SCC_KIND = "SecurityContextConstraints"
# What K8S-009 judges an SCC by (its fields sit beside metadata: an SCC has no spec).
SCC_FIELDS = (
    "priority",
    "users",
    "groups",
    "allowPrivilegedContainer",
    "allowHostPID",
    "allowHostIPC",
    "allowHostNetwork",
    "allowHostDirVolumePlugin",
    "volumes",
    "allowedCapabilities",
    "defaultAddCapabilities",
)
# Gatekeeper's enforcement points that refuse a request at admission (its own webhook, and the
# ValidatingAdmissionPolicy it may generate for a constraint).
ADMISSION_POINTS = ("validation.gatekeeper.sh", "vap.k8s.io", "*")
_VAP_KINDS = {
    "ValidatingAdmissionPolicy": VAP,
    "ValidatingAdmissionPolicyBinding": VAP_BINDING,
}
_KYVERNO_KINDS = ("ClusterPolicy", "Policy", "PolicyException")
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
        or (group == GATEKEEPER_CONFIG_GROUP and kind == "Config")
        or (group == SCC_GROUP and kind == SCC_KIND)
    )


def admission_policy_from(obj: dict[str, Any]) -> AdmissionPolicy:
    """One admission object (is_admission(obj) must hold)."""
    kind, group = text(obj.get("kind"), "") or "", group_of(obj)
    spec = mapping(obj.get("spec"))
    scopes: tuple[AdmissionScope, ...] = ()
    if group == SCC_GROUP:
        engine, spec = SCC, {f: obj[f] for f in SCC_FIELDS if f in obj}
    elif group == ADMISSION_GROUP:
        engine = _VAP_KINDS[kind]
        block = "matchConstraints" if engine == VAP else "matchResources"
        actions = str_tuple(spec.get("validationActions")) if engine == VAP_BINDING else ()
        scopes = (_vap_scope(spec, block, actions, engine == VAP),)
    elif group == KYVERNO_GROUP and kind == "PolicyException":
        engine, scopes = KYVERNO_EXCEPTION, exception_scopes(spec)
    elif group == KYVERNO_GROUP:
        engine, scopes = KYVERNO, _kyverno_scopes(obj, spec)
    elif group == GATEKEEPER_CONFIG_GROUP:
        engine, scopes = GATEKEEPER_CONFIG, (_gatekeeper_config_scope(spec),)
    else:
        engine, scopes = GATEKEEPER, (_gatekeeper_scope(spec, kind),)
    annotations = str_dict(meta(obj).get("annotations"))
    return AdmissionPolicy(
        engine=engine,
        kind=kind,
        api_version=text(obj.get("apiVersion"), "") or "",
        namespace=_own_namespace(obj) if engine != GATEKEEPER_CONFIG else _namespace(obj),
        name=name_of(obj),
        labels=labels_of(obj),
        annotations={k: v for k, v in annotations.items() if k.startswith(ANNOTATION_PREFIX)},
        policy_name=text(spec.get("policyName"), "") or "" if engine == VAP_BINDING else "",
        scopes=scopes,
        spec=spec,
    )


def _namespace(obj: dict[str, Any]) -> str:
    return text(meta(obj).get("namespace"), "") or ""


def _own_namespace(obj: dict[str, Any]) -> str:
    # Of these kinds only Kyverno's Policy and PolicyException are namespaced; a namespace on
    # the others is a stray field of a manifest and would wrongly narrow a cluster-wide policy.
    if obj.get("kind") not in ("Policy", "PolicyException"):
        return ""
    return text(meta(obj).get("namespace"), "") or ""


def _vap_scope(
    spec: dict[str, Any], block: str, actions: tuple[str, ...], policy: bool
) -> AdmissionScope:
    match = dig(spec, block)
    rules = dicts(match.get("resourceRules"))
    resources = tuple(r for rule in rules for r in str_tuple(rule.get("resources")))
    excluded = {
        r
        for rule in dicts(match.get("excludeResourceRules"))
        for r in str_tuple(rule.get("resources"))
    }
    if excluded & {"pods", "*"}:
        resources = tuple(r for r in resources if r not in ("pods", "*"))
    inert = ""
    if policy and text(spec.get("failurePolicy"), "Fail") == "Ignore":
        inert = (
            "failurePolicy Ignore: a pod whose evaluation fails (the CEL cost limit, a "
            "missing parameter) is admitted"
        )
    return AdmissionScope(
        actions=actions,
        resources=resources,
        operations=tuple(o for rule in rules for o in str_tuple(rule.get("operations"))),
        # resourceNames: only objects of those names (a tenant names its own pods)
        pod_selector=selects_some(match.get("objectSelector"))
        or any(str_tuple(rule.get("resourceNames")) for rule in rules),
        controls=vap_controls(spec) if policy else (),
        inert=inert,
        **selector_fields(match.get("namespaceSelector")),
    )


def _kyverno_scopes(obj: dict[str, Any], spec: dict[str, Any]) -> tuple[AdmissionScope, ...]:
    """One scope per validate rule and per `match.any` entry (any of them admits the rule);
    `match.all` entries and the older `match.resources` make one scope together."""
    default = text(spec.get("validationFailureAction"), "Audit") or "Audit"
    policy_overrides = _overrides(spec.get("validationFailureActionOverrides"))
    own_namespace = _own_namespace(obj)
    # Kyverno 1.11+: `admission: false` applies the policy in background scans only.
    inert = "admission: false (background scans only)" if spec.get("admission") is False else ""
    scopes = []
    for rule in dicts(spec.get("rules")):
        validate = mapping(rule.get("validate"))
        if not validate:
            continue  # mutate / generate / verifyImages rules admit everything
        action = text(validate.get("failureAction"), default) or default
        overrides = _overrides(validate.get("failureActionOverrides")) or policy_overrides
        exclude = _kyverno_exclude(mapping(rule.get("exclude")))
        match = mapping(rule.get("match"))
        entries = [(dig(e, "resources"), _by_requester([e])) for e in dicts(match.get("any"))]
        alls = dicts(match.get("all"))
        combined = [dig(e, "resources") for e in alls]
        if dig(match, "resources"):
            combined.append(dig(match, "resources"))
        if combined:
            entries.append((merged_resources(combined), _by_requester([*alls, match])))
        for resources, requester in entries:
            namespaces = str_tuple(resources.get("namespaces"))
            if own_namespace:  # a namespaced Policy applies in its own namespace only
                namespaces = (own_namespace,)
            scopes.append(
                AdmissionScope(
                    actions=(action,),
                    resources=str_tuple(resources.get("kinds")),
                    operations=str_tuple(resources.get("operations")),
                    namespaces=namespaces,
                    excluded_namespaces=exclude["namespaces"],
                    excluded_selectors=exclude["selectors"],
                    pod_selector=selects_some(resources.get("selector"))
                    or bool(resources.get("names") or resources.get("name"))
                    or exclude["pods"],
                    action_overrides=overrides,
                    controls=kyverno_controls(validate),
                    inert=inert or requester or exclude["requesters"],
                    rule=text(rule.get("name"), "") or "",
                    **selector_fields(resources.get("namespaceSelector")),
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
            **selector_fields(o.get("namespaceSelector")),
        }
        for o in dicts(raw)
    )


def _kyverno_exclude(exclude: dict[str, Any]) -> dict[str, Any]:
    """What a rule's `exclude` leaves out: namespaces by name or selector, and whether it
    leaves out pods by their own labels (which a tenant sets). `all` entries are read as
    if each excluded alone: that can only make the rule cover less."""
    parts = [dig(e, "resources") for e in dicts(exclude.get("any")) + dicts(exclude.get("all"))]
    parts.append(dig(exclude, "resources"))
    return {
        "namespaces": tuple(ns for part in parts for ns in str_tuple(part.get("namespaces"))),
        "selectors": tuple(
            selector_fields(part.get("namespaceSelector"))
            for part in parts
            if selects_some(part.get("namespaceSelector"))
        ),
        "pods": any(selects_some(part.get("selector")) for part in parts),
        "requesters": _excludes_service_accounts(
            [*dicts(exclude.get("any")), *dicts(exclude.get("all")), exclude]
        ),
    }


def _by_requester(entries: list[dict[str, Any]]) -> str:
    """A match limited to requests by some users, groups or roles: the pods a controller or
    an operator (a Deployment's ReplicaSet, Kubeflow, KubeRay, JobSet) creates for the tenant
    are requests by its service account, not by them."""
    if any(e.get(k) for e in entries for k in ("subjects", "roles", "clusterRoles")):
        return "matches only requests by certain users or roles (not pods controllers create)"
    return ""


def _excludes_service_accounts(entries: list[dict[str, Any]]) -> str:
    """An exclude naming service accounts (or their groups) lets through every pod those
    controllers or operators create, whoever asked for the workload."""
    for entry in entries:
        for subject in dicts(entry.get("subjects")):
            kind, name = text(subject.get("kind"), ""), text(subject.get("name"), "") or ""
            if kind == "ServiceAccount" or name.startswith("system:serviceaccount"):
                return f"excludes requests by {name or kind}: pods it creates are not judged"
    return ""


def _gatekeeper_scope(spec: dict[str, Any], kind: str) -> AdmissionScope:
    match = mapping(spec.get("match"))
    kinds = dicts(match.get("kinds"))
    # No `kinds` matches every kind; `scope: Cluster` only cluster-scoped objects (not pods).
    resources = tuple(k for entry in kinds for k in str_tuple(entry.get("kinds"))) or ("*",)
    if text(match.get("scope"), "*") == "Cluster":
        resources = ()
    return AdmissionScope(
        actions=_gatekeeper_actions(spec),
        resources=resources,
        namespaces=str_tuple(match.get("namespaces")),
        excluded_namespaces=str_tuple(match.get("excludedNamespaces")),
        pod_selector=selects_some(match.get("labelSelector")) or bool(match.get("name")),
        controls=gatekeeper_controls(kind, mapping(spec.get("parameters"))),
        **selector_fields(match.get("namespaceSelector")),
    )


def _gatekeeper_actions(spec: dict[str, Any]) -> tuple[str, ...]:
    """Gatekeeper's default is deny; `scoped` takes each scopedEnforcementActions entry's
    action at the enforcement points that judge admission requests."""
    action = text(spec.get("enforcementAction"), "deny") or "deny"
    if action.lower() != "scoped":
        return (action,)
    found = []
    for entry in dicts(spec.get("scopedEnforcementActions")):
        points = {text(p.get("name"), "") for p in dicts(entry.get("enforcementPoints"))}
        if points & set(ADMISSION_POINTS):
            found.append(text(entry.get("action"), "") or "")
    return tuple(found) or ("scoped (no admission enforcement point)",)


def _gatekeeper_config_scope(spec: dict[str, Any]) -> AdmissionScope:
    """The namespaces Gatekeeper's Config exempts from its webhook (`processes` `*` or
    `webhook`)."""
    excluded = tuple(
        ns
        for entry in dicts(spec.get("match"))
        if set(str_tuple(entry.get("processes"))) & {"*", "webhook"}
        for ns in str_tuple(entry.get("excludedNamespaces"))
    )
    return AdmissionScope(excluded_namespaces=excluded)
