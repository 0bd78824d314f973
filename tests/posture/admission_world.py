"""Admission objects as the API serves them (kubectl get -o json shapes), for K8S-009,
DRIFT-005 and the admission reads."""

from __future__ import annotations

from typing import Any

MANAGED = {"app.kubernetes.io/managed-by": "gpuposture"}


def namespace(name: str, **psa: str) -> dict[str, Any]:
    """A Namespace with Pod Security Admission labels: namespace("a", enforce="baseline")."""
    labels = {"kubernetes.io/metadata.name": name}
    labels |= {f"pod-security.kubernetes.io/{mode}": level for mode, level in psa.items()}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def selector(**labels: str) -> dict[str, Any]:
    return {"matchLabels": labels} if labels else {}


def vap(
    name: str = "gpuposture-pod-rules",
    resources: tuple[str, ...] = ("pods",),
    namespace_selector: dict | None = None,
    labels: dict | None = None,
    expression: str = "!object.spec.containers.exists(c, has(c.securityContext) && "
    "has(c.securityContext.privileged) && c.securityContext.privileged)",
) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {
            "name": name,
            "labels": dict(labels or {}),
            "annotations": {"gpuposture.io/checks": "POD-001"},
        },
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": list(resources),
                    }
                ],
                **({"namespaceSelector": namespace_selector} if namespace_selector else {}),
            },
            "validations": [{"expression": expression, "message": "privileged container"}],
        },
    }


def binding(
    name: str = "gpuposture-pod-rules-external",
    policy: str = "gpuposture-pod-rules",
    actions: tuple[str, ...] = ("Deny",),
    namespace_selector: dict | None = None,
    labels: dict | None = None,
) -> dict[str, Any]:
    match = {"namespaceSelector": namespace_selector} if namespace_selector else {}
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {
            "policyName": policy,
            "validationActions": list(actions),
            **({"matchResources": match} if match else {}),
        },
    }


def kyverno(
    name: str = "gpuposture-pod-rules",
    action: str = "Enforce",
    kinds: tuple[str, ...] = ("Pod",),
    namespaces: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    kind: str = "ClusterPolicy",
    policy_namespace: str = "",
    labels: dict | None = None,
    overrides: list[dict[str, Any]] | None = None,
    rule_overrides: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    resources: dict[str, Any] = {"kinds": list(kinds)}
    if namespaces:
        resources["namespaces"] = list(namespaces)
    rule: dict[str, Any] = {
        "name": "no-privileged",
        "match": {"any": [{"resources": resources}]},
        "validate": {
            "message": "privileged containers are not allowed",
            "pattern": {"spec": {"containers": [{"=(securityContext)": {"=(privileged)": False}}]}},
        },
    }
    if rule_overrides is not None:
        rule["validate"]["failureActionOverrides"] = rule_overrides
    if exclude:
        rule["exclude"] = {"any": [{"resources": {"namespaces": list(exclude)}}]}
    metadata: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
    if policy_namespace:
        metadata["namespace"] = policy_namespace
    spec: dict[str, Any] = {"validationFailureAction": action, "background": True, "rules": [rule]}
    if overrides is not None:
        spec["validationFailureActionOverrides"] = overrides
    return {"apiVersion": "kyverno.io/v1", "kind": kind, "metadata": metadata, "spec": spec}


def constraint(
    name: str = "no-privileged",
    action: str | None = None,
    namespaces: tuple[str, ...] = (),
    excluded: tuple[str, ...] = (),
    kinds: tuple[str, ...] = ("Pod",),
) -> dict[str, Any]:
    match: dict[str, Any] = {"kinds": [{"apiGroups": [""], "kinds": list(kinds)}]}
    if namespaces:
        match["namespaces"] = list(namespaces)
    if excluded:
        match["excludedNamespaces"] = list(excluded)
    spec: dict[str, Any] = {"match": match}
    if action:
        spec["enforcementAction"] = action
    return {
        "apiVersion": "constraints.gatekeeper.sh/v1beta1",
        "kind": "K8sPSPPrivilegedContainer",
        "metadata": {"name": name},
        "spec": spec,
    }
