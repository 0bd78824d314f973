"""Admission control in the demo world (K8S-009) besides gpuposture's own pack (demo/k8s_pack.py,
deployed where a cluster's `admission_pack` says): on the other clusters, a policy the platform
team wrote by hand (not labelled as ours: no DRIFT-005) bound with Deny to the external
customer's namespace, and everywhere a Kyverno policy the research team left in Audit (it
blocks nothing, so without the pack their namespaces raise K8S-009). Two other namespaces are
protected by Pod Security Admission labels (demo/cluster_parts.py NAMESPACES).

Spelled as the objects read back from the API. Pure Python: no Django, no network.
"""

from __future__ import annotations

from demo.k8s_base import Ids, Obj, meta, obj

VAP_API = "admissionregistration.k8s.io/v1"
HANDWRITTEN = "platform-deny-privileged"
_ALL_CONTAINERS = (
    "(has(object.spec.initContainers) ? object.spec.initContainers : []) + object.spec.containers"
)
# The node-escape controls K8S-009 asks for: privileged, host namespaces, hostPath, added
# capabilities (a policy refusing privileged containers alone is only partial coverage).
POD_RULES = (
    (
        f"!({_ALL_CONTAINERS}).exists(c, has(c.securityContext) && "
        "has(c.securityContext.privileged) && c.securityContext.privileged)",
        "privileged containers are refused",
    ),
    (
        "!(has(object.spec.hostPID) && object.spec.hostPID) && !(has(object.spec.hostIPC) && "
        "object.spec.hostIPC) && !(has(object.spec.hostNetwork) && object.spec.hostNetwork)",
        "host namespaces are refused",
    ),
    (
        "!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.hostPath))",
        "hostPath volumes are refused",
    ),
    (
        f"({_ALL_CONTAINERS}).all(c, !has(c.securityContext) || "
        "!has(c.securityContext.capabilities) || !has(c.securityContext.capabilities.add))",
        "added capabilities are refused",
    ),
)


def admission_objects(
    ids: Ids, namespaces: list[str], protected: str, audited: str, *, handwritten: bool = True
) -> list[Obj]:
    """The hand-written policy and its binding when `protected` is in the cluster (and the
    cluster has no pack of ours); Kyverno in Audit on `audited`-prefixed namespaces when one of
    them is."""
    items: list[Obj] = []
    if handwritten and protected in namespaces:
        items += [_policy(ids), _binding(ids, protected)]
    if any(ns.startswith(audited) for ns in namespaces):
        items.append(_kyverno_audit(ids, audited))
    return items


def _policy(ids: Ids) -> Obj:
    m = meta(ids, "ValidatingAdmissionPolicy", HANDWRITTEN, labels={"team": "platform"})
    rule = {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"],
        "resources": ["pods"],
        "scope": "*",
    }
    spec = {
        "failurePolicy": "Fail",
        "matchConstraints": {"matchPolicy": "Equivalent", "resourceRules": [rule]},
        "validations": [{"expression": e, "message": m} for e, m in POD_RULES],
    }
    return obj(VAP_API, "ValidatingAdmissionPolicy", m, spec=spec)


def _binding(ids: Ids, namespace: str) -> Obj:
    name = f"{HANDWRITTEN}-external"
    m = meta(ids, "ValidatingAdmissionPolicyBinding", name, labels={"team": "platform"})
    selector = {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": [namespace]}
        ]
    }
    spec = {
        "policyName": HANDWRITTEN,
        "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": selector, "matchPolicy": "Equivalent"},
    }
    return obj(VAP_API, "ValidatingAdmissionPolicyBinding", m, spec=spec)


def _kyverno_audit(ids: Ids, prefix: str) -> Obj:
    m = meta(ids, "ClusterPolicy", "research-baseline")
    rule = {
        "name": "no-privileged",
        "match": {"any": [{"resources": {"kinds": ["Pod"], "namespaces": [f"{prefix}*"]}}]},
        "validate": {
            "message": "privileged containers are not allowed",
            "pattern": {"spec": {"containers": [{"=(securityContext)": {"=(privileged)": False}}]}},
        },
    }
    spec = {"validationFailureAction": "Audit", "background": True, "rules": [rule]}
    return obj("kyverno.io/v1", "ClusterPolicy", m, spec=spec)
