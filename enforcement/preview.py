"""Impact preview: what a generated pack would deny today, judged by a real CEL engine.

The expressions are read back out of the generated objects (policies, bindings, Kyverno rules,
parameter ConfigMaps), never from enforcement.rules, so the preview evaluates exactly what
would be applied. Each active pod of the last sync in a bound namespace is rebuilt as a Pod
object (enforcement.pod_object) and judged; a denial is reported once per workload and rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from enforcement.build import CHECKS, RULE
from enforcement.cel import judge
from enforcement.pod_object import pod_object
from inventory.snapshot import Pod
from posture.inputs import PostureInputs


@dataclass(frozen=True)
class PreviewRule:
    """One rule as bound to a set of namespaces, with the parameters it reads there."""

    rule: str
    check: str
    namespaces: frozenset[str]
    variables: tuple[tuple[str, str], ...]
    conditions: tuple[str, ...]
    expressions: tuple[tuple[str, str], ...]  # (expression, message)
    params: dict | None


@dataclass(frozen=True)
class Unpreviewed:
    rule: str
    check: str
    why: str


NODE_WHY = "judges who changes a node (the request's user), which no stored object shows"
CLAIM_WHY = "judges DRA claims, not pods (DRA-001 reports the claims the last sync saw)"


def _why(resources: list[str]) -> str:
    return NODE_WHY if "nodes" in resources or "Node" in resources else CLAIM_WHY


def _configmaps(objects: list[dict]) -> dict[tuple[str, str], dict]:
    return {
        (o["metadata"].get("namespace", ""), o["metadata"]["name"]): {"data": o.get("data", {})}
        for o in objects
        if o["kind"] == "ConfigMap"
    }


def _params(ref: dict | None, configmaps: dict) -> dict | None:
    if not ref:
        return None
    return configmaps.get((ref.get("namespace", ""), ref.get("name", "")))


def vap_rules(objects: list[dict]) -> tuple[list[PreviewRule], list[Unpreviewed]]:
    policies = {
        o["metadata"]["name"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"
    }
    configmaps = _configmaps(objects)
    found, skipped = [], []
    for binding in (o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"):
        policy = policies[binding["spec"]["policyName"]]
        spec, meta = policy["spec"], policy["metadata"]
        rule, check = meta["labels"].get(RULE, meta["name"]), meta["annotations"][CHECKS]
        resources = spec["matchConstraints"]["resourceRules"][0]["resources"]
        if "pods" not in resources:
            skipped.append(Unpreviewed(rule, check, _why(resources)))
            continue
        selector = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
        found.append(
            PreviewRule(
                rule=rule,
                check=check,
                namespaces=frozenset(selector[0]["values"]),
                variables=tuple((v["name"], v["expression"]) for v in spec.get("variables", [])),
                conditions=tuple(c["expression"] for c in spec.get("matchConditions", [])),
                expressions=tuple((v["expression"], v["message"]) for v in spec["validations"]),
                params=_params(binding["spec"].get("paramRef"), configmaps),
            )
        )
    return found, skipped


def kyverno_rules(objects: list[dict]) -> tuple[list[PreviewRule], list[Unpreviewed]]:
    configmaps = _configmaps(objects)
    found, skipped = [], []
    for policy in (o for o in objects if o["kind"] == "ClusterPolicy"):
        check = policy["metadata"]["annotations"][CHECKS]
        for rule in policy["spec"]["rules"]:
            resources = [r["resources"] for r in rule["match"].get("any", [])]
            cel = rule.get("validate", {}).get("cel")
            if cel is None:
                skipped.append(Unpreviewed(rule["name"], check, "not a CEL rule"))
                continue
            kinds = [k.rsplit("/", 1)[-1] for r in resources for k in r.get("kinds", [])]
            if "Pod" not in kinds:
                skipped.append(Unpreviewed(rule["name"], _rule_check(rule, check), _why(kinds)))
                continue
            found.append(
                PreviewRule(
                    rule=rule["name"],
                    check=_rule_check(rule, check),
                    namespaces=frozenset(ns for r in resources for ns in r.get("namespaces", [])),
                    variables=tuple((v["name"], v["expression"]) for v in cel.get("variables", [])),
                    conditions=tuple(c["expression"] for c in rule.get("celPreconditions", [])),
                    expressions=tuple((e["expression"], e["message"]) for e in cel["expressions"]),
                    params=_params(cel.get("paramRef"), configmaps),
                )
            )
    return found, skipped


def _rule_check(rule: dict, policy_checks: str) -> str:
    """The check one Kyverno rule enforces: its message names it, e.g. "(POD-001)."."""
    for check in policy_checks.split(","):
        if any(f"({check})" in e["message"] for e in rule["validate"]["cel"]["expressions"]):
            return check
    return policy_checks


def pack_rules(objects: list[dict]) -> tuple[list[PreviewRule], list[Unpreviewed]]:
    kinds = {o["kind"] for o in objects}
    rules, skipped = vap_rules(objects) if "ValidatingAdmissionPolicy" in kinds else ([], [])
    more, also = kyverno_rules(objects) if "ClusterPolicy" in kinds else ([], [])
    return rules + more, _unique(skipped + also)


def _unique(items: list[Unpreviewed]) -> list[Unpreviewed]:
    return list(dict.fromkeys(items))


def denials(rules: Iterable[PreviewRule], pod: Pod) -> list[tuple[PreviewRule, str]]:
    """(rule, message) for each rule that would deny the pod."""
    obj = pod_object(pod)
    out = []
    for rule in rules:
        if pod.namespace not in rule.namespaces:
            continue
        for expression, message in rule.expressions:
            verdict = judge(
                variables=rule.variables,
                conditions=rule.conditions,
                expression=expression,
                obj=obj,
                params=rule.params,
            )
            if verdict is not None and not verdict.admitted:
                why = f"{message} (evaluation error: {verdict.error})" if verdict.error else message
                out.append((rule, why))
    return out


def preview(objects: list[dict], inputs: PostureInputs) -> list[dict]:
    """{namespace, kind, name, rule, check, message} per workload and rule it would be denied
    by, sorted by namespace, workload and rule."""
    rules, _ = pack_rules(objects)
    bound = {ns for r in rules for ns in r.namespaces}
    rows: dict[tuple[str, str, str, str], dict] = {}
    for pod in inputs.snapshot.pods:
        if not pod.is_active or pod.namespace not in bound:
            continue
        workload = inputs.workload_of(pod)
        for rule, message in denials(rules, pod):
            key = (workload.namespace, workload.kind, workload.name, rule.rule)
            rows.setdefault(
                key,
                {
                    "namespace": workload.namespace,
                    "kind": workload.kind,
                    "name": workload.name,
                    "rule": rule.rule,
                    "check": rule.check,
                    "message": message,
                },
            )
    return [rows[k] for k in sorted(rows)]
