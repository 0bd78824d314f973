"""Kyverno PolicyExceptions that lift rules of the generated pack (DRIFT-005). PURE.

A PolicyException (kyverno.io/v2) names policies and rules (`exceptions[].policyName`,
`ruleNames`, which may hold wildcards) and lets what its `match` selects past them. Naming one
of our generated policies, it weakens the deployed pack without touching any object of it, so
the object comparison (pack_diff) never sees it. Only exceptions Kyverno honours count (its
admission controller's flags: posture.rules.k8s.kyverno_flags), and only where one reaches
Pod creation in a namespace the generated rule binds, as K8S-009 reads them
(posture.rules.k8s.admission_cover.exception_reaches).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from typing import Any

from inventory.snapshot_admission import KYVERNO_EXCEPTION, AdmissionPolicy
from posture.rules.drift.pack_diff import PackDifference, identity
from posture.rules.k8s.admission_cover import exception_reaches

KYVERNO_POLICY_KINDS = ("ClusterPolicy", "Policy")
NAMES_SHOWN = 10


def lifted_rules(
    expected: Iterable[dict[str, Any]],
    exceptions: Iterable[AdmissionPolicy],
    namespace_labels: Mapping[str, dict[str, str]],
) -> list[PackDifference]:
    """One "lifted" difference per honoured exception and generated policy it lifts rules of,
    naming the rules and the tenant namespaces where it lets pods past them."""
    policies = [o for o in expected if o.get("kind") in KYVERNO_POLICY_KINDS]
    found = []
    for exception in exceptions:
        if exception.engine != KYVERNO_EXCEPTION:
            continue
        for policy in policies:
            lifted = _lifted_in(policy, exception, namespace_labels)
            if lifted:
                found.append(_difference(exception, policy, lifted))
    return found


def _lifted_in(
    policy: dict[str, Any], exception: AdmissionPolicy, labels: Mapping[str, dict[str, str]]
) -> dict[str, set[str]]:
    """{rule: the namespaces of it the exception reaches} for the policy's rules it names."""
    _kind, namespace, name = identity(policy)
    full = f"{namespace}/{name}" if namespace else name
    patterns = [
        str(r)
        for e in exception.spec.get("exceptions") or ()
        if isinstance(e, dict) and e.get("policyName") == full
        for r in e.get("ruleNames") or ()
    ]
    found: dict[str, set[str]] = {}
    for rule in (policy.get("spec") or {}).get("rules") or ():
        rule_name = str(rule.get("name") or "")
        if not any(fnmatchcase(rule_name, p) for p in patterns):
            continue
        for where in _rule_namespaces(rule):
            if any(exception_reaches(s, where, labels.get(where, {})) for s in exception.scopes):
                found.setdefault(rule_name, set()).add(where)
    return found


def _rule_namespaces(rule: dict[str, Any]) -> list[str]:
    """The namespaces a generated rule binds (enforcement.build._match lists them)."""
    entries = (rule.get("match") or {}).get("any") or ()
    return sorted(
        {str(n) for e in entries for n in ((e.get("resources") or {}).get("namespaces") or ())}
    )


def _difference(
    exception: AdmissionPolicy, policy: dict[str, Any], lifted: dict[str, set[str]]
) -> PackDifference:
    namespaces = sorted(set().union(*lifted.values()))
    shown = ", ".join(namespaces[:NAMES_SHOWN]) + (
        f" and {len(namespaces) - NAMES_SHOWN} more" if len(namespaces) > NAMES_SHOWN else ""
    )
    narrowed = sorted({s.narrowed_by for s in exception.scopes if s.narrowed_by})
    how = f" (it matches {'; '.join(narrowed)}: a tenant can meet it)" if narrowed else ""
    _kind, _namespace, policy_name = identity(policy)
    return PackDifference(
        exception.kind,
        exception.namespace,
        exception.name,
        change="lifted",
        detail=(
            f"lifted by {exception.ref} for namespaces {shown}: rule(s) "
            f"{', '.join(sorted(lifted))} of {policy_name}{how}"
        ),
    )
