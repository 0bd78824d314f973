"""The deployed admission policy pack against the generated one. PURE (DRIFT-005).

Both sides are Kubernetes objects as dicts. Objects are paired by kind, namespace and name;
of each pair only what we generate is compared (every key the generated object sets, so the
API server's defaults on the deployed side are no difference), and the mode apart from the
rest: a binding without `Deny` or a Kyverno policy in Audit where the generated pack says
Deny / Enforce is the difference that matters most. A deployed object labelled as ours that
the generated pack no longer has is reported too (a rule that should have been removed).
Kinds we do not read from clusters (the parameter ConfigMaps) are listed as not compared.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

MANAGED_BY = "app.kubernetes.io/managed-by"
OURS = "gpuposture"
COMPARED_KINDS = {
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
    ("kyverno.io", "ClusterPolicy"),
    ("kyverno.io", "Policy"),
}
ENFORCE, AUDIT, MIXED = "Enforce", "Audit", "mixed"
# Keys that narrow what a policy judges. Added by hand on the deployed side they weaken it
# (e.g. a matchCondition that skips one tenant's namespace), so unlike other extra keys (the
# API server's defaults) they count when not empty; the server defaults selectors to {}.
NARROWING_KEYS = frozenset(
    {
        "matchConditions",
        "excludeResourceRules",
        "objectSelector",
        "namespaceSelector",
        "exclude",
        "preconditions",
        "celPreconditions",
    }
)
PATHS_SHOWN = 10


def _weakens(key: str, value: Any) -> bool:
    """A key the generated pack leaves out whose deployed value switches the policy off,
    everywhere or in some namespaces (its default is no difference): Kyverno's
    `admission: false` (background scans only), `failurePolicy: Ignore`, per-namespace
    action overrides, webhook match conditions."""
    if key == "admission":
        return value is False
    if key == "failurePolicy":
        return value == "Ignore"
    if key in ("validationFailureActionOverrides", "failureActionOverrides"):
        return bool(value)
    if key == "webhookConfiguration":
        return isinstance(value, dict) and bool(value.get("matchConditions"))
    return False


# The deployed side cannot tell an edit in the cluster from a pack deployed before the registry
# changed (a namespace added to a tenant, an exemption withdrawn): the detail says both.
WEAKENED = (
    "weaker than the generated pack (changed in the cluster, or deployed before the tenant "
    "registry changed): "
)


@dataclass(frozen=True)
class PackDifference:
    kind: str
    namespace: str
    name: str
    # "missing", "changed", "mode", "unexpected"; "weakened" (a field differs so that the
    # object lets through what it was generated to judge); "lifted" (a Kyverno
    # PolicyException naming its rules: posture.rules.drift.pack)
    change: str
    detail: str
    paths: tuple[str, ...] = ()  # the generated spec paths that differ ("changed")
    expected_mode: str = ""
    deployed_mode: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class PackComparison:
    differences: tuple[PackDifference, ...] = ()
    compared: int = 0
    not_compared: tuple[str, ...] = field(default=())  # "ConfigMap ns/name"


def pack_drift(
    expected: Iterable[dict[str, Any]], deployed: Iterable[dict[str, Any]]
) -> PackComparison:
    wanted, skipped = {}, []
    for obj in expected:
        if _compared(obj):
            wanted[identity(obj)] = obj
        else:
            kind, namespace, name = identity(obj)
            skipped.append(f"{kind} {namespace + '/' if namespace else ''}{name}")
    present = {identity(o): o for o in deployed if _compared(o)}
    differences: list[PackDifference] = []
    for key, obj in sorted(wanted.items()):
        differences += _pair(key, obj, present.get(key))
    for key, obj in sorted(present.items()):
        if key not in wanted and labels(obj).get(MANAGED_BY) == OURS:
            differences.append(
                PackDifference(*key, change="unexpected", detail="deployed as ours, not generated")
            )
    return PackComparison(tuple(differences), len(wanted), tuple(sorted(skipped)))


def _pair(key: tuple[str, str, str], expected: dict, deployed: dict | None) -> list[PackDifference]:
    if deployed is None:
        return [PackDifference(*key, change="missing", detail="generated, not deployed")]
    found = []
    want_mode, have_mode = mode_of(expected), mode_of(deployed)
    if want_mode != have_mode:
        weaker = want_mode == ENFORCE
        detail = (
            f"deployed in {have_mode} where the class says {want_mode}"
            if weaker
            else f"deployed mode {have_mode}, generated {want_mode}"
        )
        found.append(
            PackDifference(
                *key,
                change="mode",
                detail=detail,
                expected_mode=want_mode or "",
                deployed_mode=have_mode or "",
            )
        )
    paths = _differing(_without_mode(expected), _without_mode(deployed), "spec")
    annotations = {k: v for k, v in _meta(expected).get("annotations", {}).items()}
    paths += [
        f"metadata.annotations.{k}"
        for k, v in sorted(annotations.items())
        if _meta(deployed).get("annotations", {}).get(k) != v
    ]
    weakened = {p: w for p in paths if (w := _weakening(p, expected, deployed))}
    if weakened:
        found.append(
            PackDifference(
                *key,
                change="weakened",
                detail=WEAKENED + "; ".join(dict.fromkeys(weakened.values())),
                paths=tuple(weakened)[:PATHS_SHOWN],
            )
        )
        paths = [p for p in paths if p not in weakened]
    if paths:
        found.append(
            PackDifference(
                *key,
                change="changed",
                detail=f"{len(paths)} generated field(s) differ",
                paths=tuple(paths[:PATHS_SHOWN]),
            )
        )
    return found


def _weakening(path: str, expected: dict, deployed: dict) -> str:
    """How a differing path lets through what the generated object judges, "" where it does
    not say so: a narrowing key added (or a longer list of them: one more match condition, one
    more excluded resource rule), a namespace dropped from a binding's namespaceSelector or a
    Kyverno rule's match, a key that switches the policy off (_weakens). Other edits (an
    expression, a broader selector) stay plain changes."""
    path = _INDEX_AT_END.sub("", path)  # an element of a list: judge the list
    key = _INDEX.sub("", path.rpartition(".")[2])
    want, have = _at(expected, path), _at(deployed, path)
    if key in NARROWING_KEYS:
        longer = isinstance(want, list) and isinstance(have, list) and len(have) > len(want)
        if (not want and have) or longer:
            return f"{path} added"
        return ""
    if key in ("values", "namespaces") and isinstance(want, list):
        # A binding's selector by namespace name; a Kyverno rule's match (not its exclude).
        where = ".namespaceSelector." if key == "values" else ".match."
        if where not in path:
            return ""
        kept = set(map(str, have)) if isinstance(have, list) else set()
        dropped = sorted(set(map(str, want)) - kept)
        return f"namespaces not matched: {', '.join(dropped)}" if dropped else ""
    if _weakens(key, have):
        return f"{path}: {have}"
    return ""


_INDEX = re.compile(r"\[\d+\]")
_INDEX_AT_END = re.compile(r"\[\d+\]$")


def _at(obj: Any, path: str) -> Any:
    """The value at a path of _differing ("spec.a.b[0].c"), None where it is absent."""
    for part in path.split("."):
        name, *indexes = part.split("[")
        obj = obj.get(name) if isinstance(obj, dict) else None
        for index in indexes:
            i = int(index.rstrip("]"))
            obj = obj[i] if isinstance(obj, list) and i < len(obj) else None
    return obj


def identity(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = _meta(obj)
    return (
        str(obj.get("kind") or ""),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
    )


def labels(obj: dict[str, Any]) -> dict[str, Any]:
    value = _meta(obj).get("labels")
    return value if isinstance(value, dict) else {}


def mode_of(obj: dict[str, Any]) -> str | None:
    """Enforce / Audit (/ mixed for Kyverno rules that differ) for the kinds with a mode."""
    spec = _spec(obj)
    kind = obj.get("kind")
    if kind == "ValidatingAdmissionPolicyBinding":
        return ENFORCE if "Deny" in (spec.get("validationActions") or []) else AUDIT
    if kind in ("ClusterPolicy", "Policy"):
        default = str(spec.get("validationFailureAction") or AUDIT)
        actions = {
            str(rule["validate"].get("failureAction") or default).capitalize()
            for rule in spec.get("rules") or []
            if isinstance(rule, dict) and isinstance(rule.get("validate"), dict)
        } or {default.capitalize()}
        return actions.pop() if len(actions) == 1 else MIXED
    return None


def _without_mode(obj: dict[str, Any]) -> dict[str, Any]:
    spec = copy.deepcopy(_spec(obj))
    spec.pop("validationActions", None)
    spec.pop("validationFailureAction", None)
    for rule in spec.get("rules") or []:
        if isinstance(rule, dict) and isinstance(rule.get("validate"), dict):
            rule["validate"].pop("failureAction", None)
    return spec


def _differing(expected: Any, deployed: Any, path: str) -> list[str]:
    """Paths where the generated value is not in the deployed one (extra deployed keys are
    the API server's defaults, not differences, except a narrowing one added by hand)."""
    if isinstance(expected, dict):
        if not isinstance(deployed, dict):
            return [path or "spec"]
        found = []
        for key, value in expected.items():
            found += _differing(value, deployed.get(key), f"{path}.{key}" if path else key)
        for key in sorted(deployed.keys() - expected.keys()):
            value = deployed[key]
            if (key in NARROWING_KEYS and value) or _weakens(key, value):
                found.append(f"{path}.{key}" if path else key)
        return found
    if isinstance(expected, list):
        if not isinstance(deployed, list) or len(deployed) != len(expected):
            return [path]
        found = []
        for index, (a, b) in enumerate(zip(expected, deployed, strict=True)):
            found += _differing(a, b, f"{path}[{index}]")
        return found
    return [] if expected == deployed else [path]


def _compared(obj: dict[str, Any]) -> bool:
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    return (group, obj.get("kind")) in COMPARED_KINDS


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    value = obj.get("spec")
    return value if isinstance(value, dict) else {}
