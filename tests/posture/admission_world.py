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


ALL_CONTAINERS = (
    "(has(object.spec.initContainers) ? object.spec.initContainers : []) + object.spec.containers"
)
PRIVILEGED_CEL = (
    f"!({ALL_CONTAINERS}).exists(c, has(c.securityContext) && "
    "has(c.securityContext.privileged) && c.securityContext.privileged)"
)
# The same, judging only `containers`: a privileged init container is not refused.
CONTAINERS_ONLY_PRIVILEGED_CEL = (
    "!object.spec.containers.exists(c, has(c.securityContext) && "
    "has(c.securityContext.privileged) && c.securityContext.privileged)"
)
ALL_CONTROLS_CEL = (
    PRIVILEGED_CEL,
    "!(has(object.spec.hostPID) && object.spec.hostPID) && !(has(object.spec.hostIPC) && "
    "object.spec.hostIPC) && !(has(object.spec.hostNetwork) && object.spec.hostNetwork)",
    "!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.hostPath))",
    f"({ALL_CONTAINERS}).all(c, !has(c.securityContext) || "
    "!has(c.securityContext.capabilities) || !has(c.securityContext.capabilities.add))",
)
# The kyverno/policies pod-security baseline patterns, restated.
KYVERNO_BASELINE = {
    "pattern": {
        "spec": {
            "=(hostPID)": "false",
            "=(hostIPC)": "false",
            "=(hostNetwork)": "false",
            "=(volumes)": [{"X(hostPath)": "null"}],
            "=(initContainers)": [
                {
                    "=(securityContext)": {
                        "=(privileged)": "false",
                        "=(capabilities)": {"X(add)": "null"},
                    }
                }
            ],
            "containers": [
                {
                    "=(securityContext)": {
                        "=(privileged)": "false",
                        "=(capabilities)": {"X(add)": "null"},
                    }
                }
            ],
        }
    }
}


def vap(
    name: str = "gpuposture-pod-rules",
    resources: tuple[str, ...] = ("pods",),
    namespace_selector: dict | None = None,
    labels: dict | None = None,
    expression: str | None = None,
    failure_policy: str = "Fail",
) -> dict[str, Any]:
    """A policy whose validations judge every pod control K8S-009 asks for (or `expression`)."""
    expressions = [expression] if expression else list(ALL_CONTROLS_CEL)
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {
            "name": name,
            "labels": dict(labels or {}),
            "annotations": {"gpuposture.io/checks": "POD-001"},
        },
        "spec": {
            "failurePolicy": failure_policy,
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
            "validations": [{"expression": e, "message": "not allowed"} for e in expressions],
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
    validate: dict[str, Any] | None = None,
) -> dict[str, Any]:
    resources: dict[str, Any] = {"kinds": list(kinds)}
    if namespaces:
        resources["namespaces"] = list(namespaces)
    rule: dict[str, Any] = {
        "name": "no-privileged",
        "match": {"any": [{"resources": resources}]},
        "validate": {
            "message": "privileged containers are not allowed",
            **(validate if validate is not None else KYVERNO_BASELINE),
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
    kind: str = "K8sPSPPrivilegedContainer",
    parameters: dict[str, Any] | None = None,
) -> dict[str, Any]:
    match: dict[str, Any] = {"kinds": [{"apiGroups": [""], "kinds": list(kinds)}]}
    if namespaces:
        match["namespaces"] = list(namespaces)
    if excluded:
        match["excludedNamespaces"] = list(excluded)
    spec: dict[str, Any] = {"match": match}
    if action:
        spec["enforcementAction"] = action
    if parameters:
        spec["parameters"] = parameters
    return {
        "apiVersion": "constraints.gatekeeper.sh/v1beta1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": spec,
    }


# The gatekeeper-library pod-security constraints that together judge every control.
PSP_KINDS = (
    "K8sPSPPrivilegedContainer",
    "K8sPSPHostNamespace",
    "K8sPSPHostNetworkingPorts",
    "K8sPSPHostFilesystem",
    "K8sPSPCapabilities",
)


def psp_constraints(**kwargs: Any) -> list[dict[str, Any]]:
    return [constraint(name=k.lower(), kind=k, **kwargs) for k in PSP_KINDS]


def gatekeeper_config(*excluded: str, processes: tuple[str, ...] = ("*",)) -> dict[str, Any]:
    return {
        "apiVersion": "config.gatekeeper.sh/v1alpha1",
        "kind": "Config",
        "metadata": {"name": "config", "namespace": "gatekeeper-system"},
        "spec": {"match": [{"excludedNamespaces": list(excluded), "processes": list(processes)}]},
    }
