"""Does an admission control deny bad pods in a namespace, and which of them? PURE (K8S-009).

Each candidate is judged with the reason it does or does not count, and the pod controls it
judges (inventory.sources.admission_controls: privileged, hostPID, hostIPC, hostNetwork,
hostPath, added capabilities), so the finding's evidence names everything looked at and what
is still missing; a namespace is covered only when the enforcing candidates together judge
every control:
- Pod Security Admission: the namespace's `pod-security.kubernetes.io/enforce` label at
  `baseline` or `restricted` (audit and warn block nothing), all controls;
- a ValidatingAdmissionPolicy through a binding with `Deny` among its validationActions, both
  selecting the namespace (namespaceSelector) and the policy's rules matching pods, and the
  policy not `failurePolicy: Ignore`;
- a Kyverno ClusterPolicy / Policy validate rule in Enforce matching Pod creation in the
  namespace (not `admission: false`, not excluded by name or namespace selector), less the
  controls a Kyverno PolicyException matching pods there lifts from it (one narrowed by pod
  labels, names, images or conditions lifts them too: a tenant can meet it; one limited to
  requesters, where the tenant or the controllers making its pods may be among them);
- a Gatekeeper constraint denying at admission (enforcementAction `deny`, or `scoped` with
  deny at the webhook) matching Pod in the namespace, unless Gatekeeper's Config or the
  `admission.gatekeeper.sh/ignore` label exempts the namespace.
A selector operator we do not know selects nothing, and a policy judging only pods with certain
labels (an object or label selector, or an exclude by pod labels) does not count: a tenant sets
its own pods' labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from inventory.label_selector import selector_matches
from inventory.snapshot_admission import (
    GATEKEEPER,
    GATEKEEPER_CONFIG,
    KYVERNO,
    KYVERNO_EXCEPTION,
    VAP,
    VAP_BINDING,
    AdmissionPolicy,
    AdmissionScope,
)
from inventory.sources.admission_controls import CONTROL_CHECKS, CONTROLS

PSA_PREFIX = "pod-security.kubernetes.io/"
PSA_ENFORCING = ("baseline", "restricted")
PSA_LEVELS = ("privileged", *PSA_ENFORCING)
NAME_LABEL = "kubernetes.io/metadata.name"  # set by the API server on every namespace
GATEKEEPER_IGNORE = "admission.gatekeeper.sh/ignore"  # Gatekeeper's webhook skips the namespace


@dataclass(frozen=True)
class Verdict:
    source: str  # "PSA", or the object's ref ("ValidatingAdmissionPolicyBinding x")
    covers: bool  # denies pods here for at least one control
    reason: str
    controls: tuple[str, ...] = ()  # the controls it denies here (when it covers)

    def as_dict(self) -> dict[str, object]:
        return {
            "looked_at": self.source,
            "enforces": self.covers,
            "why": self.reason,
            "controls": list(self.controls),
        }


def covered(found: Sequence[Verdict]) -> dict[str, list[str]]:
    """control -> the sources denying it, for the controls something denies."""
    out: dict[str, list[str]] = {}
    for verdict in found:
        if verdict.covers:
            for control in verdict.controls:
                out.setdefault(control, []).append(verdict.source)
    return {c: out[c] for c in CONTROLS if c in out}


def lacking_names(found: Sequence[Verdict]) -> list[str]:
    """The controls nothing denies ("hostPath")."""
    have = covered(found)
    return [c for c in CONTROLS if c not in have]


def missing(found: Sequence[Verdict]) -> list[str]:
    """The controls nothing denies, each with the check it backs ("hostPath (POD-003)")."""
    return [f"{c} ({CONTROL_CHECKS[c]})" for c in lacking_names(found)]


def _judges(source: str, controls: tuple[str, ...], how: str) -> Verdict:
    if not controls:
        return Verdict(source, False, f"{how}, but judges none of {', '.join(CONTROLS)}")
    return Verdict(source, True, f"{how}: {', '.join(controls)}", controls)


def psa_labels(labels: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in sorted(labels.items()) if k.startswith(PSA_PREFIX)}


def psa_verdict(labels: dict[str, str]) -> Verdict:
    level = labels.get(f"{PSA_PREFIX}enforce", "")
    if level in PSA_ENFORCING:
        version = labels.get(f"{PSA_PREFIX}enforce-version", "latest")
        return Verdict(
            "PSA", True, f"pod-security.kubernetes.io/enforce={level} ({version})", CONTROLS
        )
    if level and level not in PSA_LEVELS:
        # Pod Security Admission evaluates a label it cannot parse as restricted (and the
        # API server refuses such labels on new writes: this one predates PSA).
        return Verdict("PSA", True, f"enforce={level} is not a level: restricted", CONTROLS)
    if level:
        said = f"enforce={level}"
    else:
        # The API server's AdmissionConfiguration may set a cluster-wide default; it is not
        # visible through the API, so it is not assumed.
        said = "no enforce label (a cluster-wide default, if any, is not visible)"
    return Verdict("PSA", False, f"Pod Security Admission: {said} (audit and warn block nothing)")


def verdicts(
    namespace: str,
    labels: dict[str, str],
    policies: Sequence[AdmissionPolicy],
    exceptions_unread: bool = False,
    exception_note: str = "",
) -> list[Verdict]:
    """PSA first, then every policy object read (VAPs through their bindings). With
    `exceptions_unread` (Kyverno's PolicyExceptions could not be listed) a Kyverno policy
    covers nothing for certain: an exception may lift any of its rules. `exception_note`
    (whether and why Kyverno honours its exceptions) follows what an exception lifts."""
    labels = {**labels, NAME_LABEL: namespace}
    found = [psa_verdict(labels)]
    vaps = {p.name: p for p in policies if p.engine == VAP}
    exempt = _gatekeeper_exempt(namespace, labels, policies)
    exceptions = [p for p in policies if p.engine == KYVERNO_EXCEPTION]
    for policy in policies:
        if policy.engine == VAP_BINDING:
            found.append(_binding_verdict(policy, vaps.get(policy.policy_name), labels))
        elif policy.engine == GATEKEEPER and exempt:
            found.append(Verdict(policy.ref, False, exempt))
        elif policy.engine in (KYVERNO, GATEKEEPER):
            verdict = _scoped_verdict(policy, namespace, labels, exceptions, exception_note)
            if verdict.covers and policy.engine == KYVERNO and exceptions_unread:
                verdict = Verdict(
                    verdict.source,
                    False,
                    f"{verdict.reason}; but Kyverno's PolicyExceptions could not be read, "
                    "and one may lift these here",
                )
            found.append(verdict)
    return found


def _gatekeeper_exempt(
    namespace: str, labels: dict[str, str], policies: Sequence[AdmissionPolicy]
) -> str:
    """Why Gatekeeper's webhook never judges the namespace's pods, "" when it does."""
    if GATEKEEPER_IGNORE in labels:
        return f"the namespace is labelled {GATEKEEPER_IGNORE}: Gatekeeper skips it"
    for config in (p for p in policies if p.engine == GATEKEEPER_CONFIG):
        if any(
            in_namespaces(AdmissionScope(namespaces=s.excluded_namespaces), namespace)
            for s in config.scopes
            if s.excluded_namespaces
        ):
            return f"Gatekeeper's {config.ref} exempts the namespace from its webhook"
    return ""


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
            return Verdict(ref, False, f"the {which} judges only pods with certain labels or names")
        if not selects(s, labels):
            return Verdict(ref, False, f"the {which}'s namespaceSelector does not select it")
    if policy_scope.inert:
        return Verdict(ref, False, f"policy {vap.name}: {policy_scope.inert}")
    if _tenant_params(binding, vap):
        return Verdict(
            ref,
            False,
            "its ConfigMap parameters are read from the pod's own namespace and a missing one "
            "allows (parameterNotFoundAction: Allow): whoever deletes it there switches it off",
        )
    return _judges(ref, policy_scope.controls, f"denies through policy {vap.name}")


def _tenant_params(binding: AdmissionPolicy, vap: AdmissionPolicy) -> bool:
    """A paramRef without a namespace reads a namespaced parameter (a ConfigMap) from the
    namespace of the object admitted: the tenant's own."""
    ref = binding.spec.get("paramRef")
    kind = vap.spec.get("paramKind")
    return (
        isinstance(ref, dict)
        and isinstance(kind, dict)
        and kind.get("kind") == "ConfigMap"
        and not ref.get("namespace")
        and ref.get("parameterNotFoundAction") == "Allow"
    )


def _scoped_verdict(
    policy: AdmissionPolicy,
    namespace: str,
    labels: dict[str, str],
    exceptions: Sequence[AdmissionPolicy] = (),
    exception_note: str = "",
) -> Verdict:
    enforcing = "enforce" if policy.engine == KYVERNO else "deny"
    reasons = []
    controls: set[str] = set()
    lifted: dict[str, set[str]] = {}  # the exceptions' notes -> the controls they lift
    for scope in policy.scopes:
        actions = _actions_in(scope, namespace, labels)
        if not any(a.lower() == enforcing for a in actions):
            reasons.append(f"action {'/'.join(actions) or 'none'} does not block")
        elif scope.inert:
            reasons.append(scope.inert)
        elif not any(_kind(k) in ("Pod", "*") for k in scope.resources):
            reasons.append(f"matches {list(scope.resources)}, not Pod")
        elif scope.operations and not any(o in ("CREATE", "*") for o in scope.operations):
            reasons.append(f"judges {list(scope.operations)}, not pod creation")
        elif not in_namespaces(scope, namespace):
            reasons.append("its namespaces do not include it")
        elif not selects(scope, labels):
            reasons.append("its namespaceSelector does not select it")
        elif any(_override_selects(s, labels) for s in scope.excluded_selectors):
            reasons.append("its exclude's namespaceSelector leaves it out")
        elif scope.pod_selector:
            reasons.append(
                "judges only pods with certain labels or names (or excludes some by label)"
            )
        elif not scope.controls:
            reasons.append(f"{enforcing} for pods here, but judges none of {', '.join(CONTROLS)}")
        else:
            held = set(scope.controls)
            for note, gone in _lifted_by(policy, scope, namespace, labels, exceptions):
                lifted.setdefault(note, set()).update(gone & held)
                held -= gone
            controls.update(held)
    # A control another rule of the policy still judges here is not lifted by the exception.
    notes = [
        f"{note} lifts {', '.join(c for c in CONTROLS if c in gone - controls)}"
        for note, gone in sorted(lifted.items())
        if gone - controls
    ]
    if notes and exception_note:
        notes.append(exception_note)
    if controls:
        found = tuple(c for c in CONTROLS if c in controls)
        said = "; ".join([f"{enforcing} for pods here: {', '.join(found)}", *notes])
        return Verdict(policy.ref, True, said, found)
    said = "; ".join(notes + sorted(set(reasons)))
    return Verdict(policy.ref, False, said or "no validate rule")


def _lifted_by(
    policy: AdmissionPolicy,
    scope: AdmissionScope,
    namespace: str,
    labels: dict[str, str],
    exceptions: Sequence[AdmissionPolicy],
) -> list[tuple[str, set[str]]]:
    """(note, controls) for each Kyverno PolicyException naming the scope's rule and matching
    pod creation in the namespace (those Kyverno ignores are left out before:
    posture.rules.k8s.kyverno_flags)."""
    if policy.engine != KYVERNO or not scope.rule:
        return []
    name = f"{policy.namespace}/{policy.name}" if policy.namespace else policy.name
    found = []
    for exception in exceptions:
        names = [
            e
            for e in exception.spec.get("exceptions") or ()
            if isinstance(e, dict)
            and e.get("policyName") == name
            and any(fnmatchcase(scope.rule, str(r)) for r in e.get("ruleNames") or ())
        ]
        if not names:
            continue
        for where in exception.scopes:
            if not exception_reaches(where, namespace, labels) or not where.controls:
                continue
            how = f" (it matches {where.narrowed_by}: a tenant can meet it)"
            note = f"{exception.ref} (rule {scope.rule})" + (how if where.narrowed_by else "")
            found.append((note, set(where.controls)))
    return found


def exception_reaches(scope: AdmissionScope, namespace: str, labels: dict[str, str]) -> bool:
    """An exception lets a tenant's pod through only where it matches Pod creation (an
    exception for Deployments alone still leaves the pods they make to the Pod rule)."""
    kinds = not scope.resources or any(_kind(k) in ("Pod", "*") for k in scope.resources)
    creates = not scope.operations or any(o in ("CREATE", "*") for o in scope.operations)
    tenant = not scope.requesters or any(_may_be_tenant(r, namespace) for r in scope.requesters)
    where = in_namespaces(scope, namespace) and selects(scope, labels)
    return kinds and creates and tenant and where


def _may_be_tenant(requester: str, namespace: str) -> bool:
    """Whether a pod the tenant has made can be a request by `requester`: its own service
    accounts, any authenticated user, the controllers that create the pods of a Deployment or
    Job (kube-system's *-controller service accounts), users, groups and roles (who holds
    them is not judged here), except cluster-admin."""
    kind, _, name = requester.partition(":")
    if kind == "ServiceAccount":
        where, _, account = name.partition("/")
        return where == namespace or (where == "kube-system" and account.endswith("-controller"))
    if kind == "Group" and name.startswith("system:"):
        return name in (
            "system:authenticated",
            "system:serviceaccounts",
            f"system:serviceaccounts:{namespace}",
            "system:serviceaccounts:kube-system",
        )
    return not (kind == "ClusterRole" and name == "cluster-admin")


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
