"""Does an admission control deny bad pods in a namespace? PURE (K8S-009).

Each candidate is judged with the reason it does or does not count, so the finding's evidence
names everything looked at:
- Pod Security Admission: the namespace's `pod-security.kubernetes.io/enforce` label at
  `baseline` or `restricted` (audit and warn block nothing);
- a ValidatingAdmissionPolicy through a binding with `Deny` among its validationActions, both
  selecting the namespace (namespaceSelector) and the policy's rules matching pods;
- a Kyverno ClusterPolicy / Policy validate rule in Enforce matching Pod in the namespace;
- a Gatekeeper constraint with enforcementAction `deny` matching Pod in the namespace.
A selector operator we do not know selects nothing, and a policy judging only pods with certain
labels (an object or label selector) does not count: a tenant sets its own pods' labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from inventory.label_selector import selector_matches
from inventory.snapshot_admission import (
    GATEKEEPER,
    KYVERNO,
    VAP,
    VAP_BINDING,
    AdmissionPolicy,
    AdmissionScope,
)

PSA_PREFIX = "pod-security.kubernetes.io/"
PSA_ENFORCING = ("baseline", "restricted")
NAME_LABEL = "kubernetes.io/metadata.name"  # set by the API server on every namespace


@dataclass(frozen=True)
class Verdict:
    source: str  # "PSA", or the object's ref ("ValidatingAdmissionPolicyBinding x")
    covers: bool
    reason: str

    def as_dict(self) -> dict[str, object]:
        return {"looked_at": self.source, "enforces": self.covers, "why": self.reason}


def psa_labels(labels: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in sorted(labels.items()) if k.startswith(PSA_PREFIX)}


def psa_verdict(labels: dict[str, str]) -> Verdict:
    level = labels.get(f"{PSA_PREFIX}enforce", "")
    if level in PSA_ENFORCING:
        return Verdict("PSA", True, f"pod-security.kubernetes.io/enforce={level}")
    said = f"enforce={level}" if level else "no enforce label"
    return Verdict("PSA", False, f"Pod Security Admission: {said} (audit and warn block nothing)")


def verdicts(
    namespace: str, labels: dict[str, str], policies: Sequence[AdmissionPolicy]
) -> list[Verdict]:
    """PSA first, then every policy object read (VAPs through their bindings)."""
    labels = {**labels, NAME_LABEL: namespace}
    found = [psa_verdict(labels)]
    vaps = {p.name: p for p in policies if p.engine == VAP}
    for policy in policies:
        if policy.engine == VAP_BINDING:
            found.append(_binding_verdict(policy, vaps.get(policy.policy_name), labels))
        elif policy.engine in (KYVERNO, GATEKEEPER):
            found.append(_scoped_verdict(policy, namespace, labels))
    return found


def _binding_verdict(
    binding: AdmissionPolicy, vap: AdmissionPolicy | None, labels: dict[str, str]
) -> Verdict:
    ref = binding.ref
    scope = binding.scopes[0] if binding.scopes else AdmissionScope()
    if "Deny" not in scope.actions:
        return Verdict(ref, False, f"validationActions {list(scope.actions)} without Deny")
    if vap is None:
        return Verdict(ref, False, f"binds {binding.policy_name!r}, which is not deployed")
    policy_scope = vap.scopes[0] if vap.scopes else AdmissionScope()
    if not _vap_matches_pods(policy_scope) or (scope.resources and not _vap_matches_pods(scope)):
        return Verdict(ref, False, f"policy {vap.name} does not match pod creation")
    for which, s in (("binding", scope), ("policy", policy_scope)):
        if s.pod_selector:
            return Verdict(ref, False, f"the {which} judges only pods with certain labels")
        if not selects(s, labels):
            return Verdict(ref, False, f"the {which}'s namespaceSelector does not select it")
    return Verdict(ref, True, f"denies through policy {vap.name}")


def _scoped_verdict(policy: AdmissionPolicy, namespace: str, labels: dict[str, str]) -> Verdict:
    enforcing = "enforce" if policy.engine == KYVERNO else "deny"
    reasons = []
    for scope in policy.scopes:
        actions = _actions_in(scope, namespace, labels)
        if not any(a.lower() == enforcing for a in actions):
            reasons.append(f"action {'/'.join(actions) or 'none'} does not block")
        elif not any(_kind(k) in ("Pod", "*") for k in scope.resources):
            reasons.append(f"matches {list(scope.resources)}, not Pod")
        elif not in_namespaces(scope, namespace):
            reasons.append("its namespaces do not include it")
        elif not selects(scope, labels):
            reasons.append("its namespaceSelector does not select it")
        elif scope.pod_selector:
            reasons.append("judges only pods with certain labels")
        else:
            return Verdict(policy.ref, True, f"{enforcing} for pods here")
    return Verdict(policy.ref, False, "; ".join(sorted(set(reasons))) or "no validate rule")


def _actions_in(scope: AdmissionScope, namespace: str, labels: dict[str, str]) -> tuple[str, ...]:
    """The scope's actions in this namespace: Kyverno's first override naming it (by pattern
    or by namespaceSelector) replaces the policy's action there."""
    for override in scope.action_overrides:
        named = any(fnmatchcase(namespace, p) for p in override.get("namespaces") or ())
        chosen = bool(override.get("match_labels") or override.get("match_expressions"))
        if named or (chosen and _override_selects(override, labels)):
            return (str(override.get("action") or ""),)
    return scope.actions


def _override_selects(override: dict[str, Any], labels: dict[str, str]) -> bool:
    return selector_matches(
        override.get("match_labels") or {}, override.get("match_expressions") or (), labels
    )


def _kind(written: str) -> str:
    # Kyverno accepts "Pod", "v1/Pod", "*/Pod"; Gatekeeper lists bare kinds.
    return written.rsplit("/", 1)[-1] if written != "*" else "*"


def _vap_matches_pods(scope: AdmissionScope) -> bool:
    resources = any(r in ("pods", "*") for r in scope.resources)
    operations = not scope.operations or any(o in ("CREATE", "*") for o in scope.operations)
    return resources and operations


def in_namespaces(scope: AdmissionScope, namespace: str) -> bool:
    if any(fnmatchcase(namespace, p) for p in scope.excluded_namespaces):
        return False
    return not scope.namespaces or any(fnmatchcase(namespace, p) for p in scope.namespaces)


def selects(scope: AdmissionScope, labels: dict[str, str]) -> bool:
    """A Kubernetes label selector (empty selects everything)."""
    return selector_matches(scope.match_labels, scope.match_expressions, labels)
