"""Build a policy pack's Kubernetes objects from its inputs. PURE: dicts in, dicts out.

Two dialects of the same rules (enforcement.rules):
- `vap`: one ValidatingAdmissionPolicy per rule (admissionregistration.k8s.io/v1) and one
  binding per rule and tenant, selecting the tenant's namespaces and passing the tenant's
  parameter ConfigMap; the node rule gets one cluster-wide binding.
- `kyverno`: one ClusterPolicy (kyverno.io/v1) per tenant with a CEL validate rule per pod
  rule, matching the tenant's namespaces, and one for the node rule.
Exemptions become match conditions (VAP `matchConditions`, Kyverno `celPreconditions`), so an
exempt object is never judged; platform namespaces are never bound.
"""

from __future__ import annotations

from enforcement.gpu_access import VARIABLES
from enforcement.inputs import (
    PackInputs,
    TenantPack,
    principals_params,
    tenant_params,
)
from enforcement.rules import (
    CLAIM_RULES,
    KINDS,
    NODE_RULE,
    POD_RULES,
    RULES,
    TENANT_RULES,
    Rule,
    exemption_condition,
)

MANAGED_BY = "app.kubernetes.io/managed-by"
CHECKS = "gpuposture.io/checks"
RULE = "gpuposture.io/rule"
PREFIX = "gpuposture"
PRINCIPALS_CONFIGMAP = f"{PREFIX}-principals"
MAX_MATCH_CONDITIONS = 64
VAP_ACTIONS = {"audit": ["Audit", "Warn"], "enforce": ["Deny"]}
KYVERNO_ACTIONS = {"audit": "Audit", "enforce": "Enforce"}


def metadata(name: str, checks: list[str], namespace: str = "", **labels: str) -> dict:
    """Every object carries our managed-by label and the checks it enforces."""
    meta: dict = {
        "name": name,
        "labels": {MANAGED_BY: PREFIX, **labels},
        "annotations": {CHECKS: ",".join(sorted(set(checks)))},
    }
    if namespace:
        meta["namespace"] = namespace
    return meta


def params_name(tenant: TenantPack) -> str:
    return f"{PREFIX}-params-{tenant.slug}"


def conditions(rule: Rule, inputs: PackInputs) -> list[dict]:
    """One named condition per exemption of the rule's check (false: the object is exempt)."""
    found = sorted((e for e in inputs.exemptions if e.check_id == rule.check), key=lambda e: e.id)
    named = [
        {
            "name": f"exemption-{e.id}",
            "expression": exemption_condition(e.namespace, e.name, dict(e.labels)),
        }
        for e in found
    ]
    if len(named) <= MAX_MATCH_CONDITIONS:
        return named
    # The API server accepts at most 64 match conditions per policy: past that, one condition
    # says "none of these exemptions covers the object".
    joined = " && ".join(c["expression"] for c in named)
    return [{"name": "exemptions", "expression": joined}]


def support_objects(inputs: PackInputs) -> list[dict]:
    """The namespace holding the parameters, each tenant's ConfigMap and the principals'."""
    checks = sorted({r.check for r in POD_RULES if r.uses_params})
    ns = inputs.params_namespace
    objects = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": metadata(ns, [r.check for r in RULES]),
        }
    ]
    for tenant in inputs.tenants:
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": metadata(
                    params_name(tenant), checks, ns, **{"gpuposture.io/tenant": tenant.slug}
                ),
                "data": tenant_params(tenant),
            }
        )
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata(PRINCIPALS_CONFIGMAP, [NODE_RULE.check], ns),
            "data": principals_params(inputs),
        }
    )
    return objects


def _operations(rule: Rule) -> list[str]:
    return ["UPDATE"] if rule.target == "nodes" else ["CREATE", "UPDATE"]


# A debug container is added to a running pod through the ephemeralcontainers subresource,
# which a rule on `pods` alone never sees (`kubectl debug --profile=sysadmin` is privileged).
SUBRESOURCES = {"pods": ("ephemeralcontainers",)}


def _resource_rules(rule: Rule) -> list[dict]:
    group, version, _ = KINDS[rule.target]
    subresources = [f"{rule.target}/{s}" for s in SUBRESOURCES.get(rule.target, ())]
    return [
        {
            "apiGroups": [group],
            "apiVersions": [version],
            "operations": _operations(rule),
            "resources": [rule.target, *subresources],
        }
    ]


def _kyverno_kinds(rule: Rule) -> list[str]:
    """Kyverno names a kind with its group and version when it has a group, and a
    subresource as Kind/subresource."""
    group, version, kind = KINDS[rule.target]
    name = f"{group}/{version}/{kind}" if group else kind
    return [name, *(f"{name}/{s}" for s in SUBRESOURCES.get(rule.target, ()))]


def vap_policy(rule: Rule, inputs: PackInputs) -> dict:
    spec: dict = {
        "failurePolicy": "Fail",
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": {"resourceRules": _resource_rules(rule)},
        "validations": [
            {"expression": rule.expression, "message": rule.message, "reason": "Forbidden"}
        ],
    }
    if rule.target == "pods":
        spec["variables"] = [{"name": n, "expression": e} for n, e in VARIABLES]
    if found := conditions(rule, inputs):
        spec["matchConditions"] = found
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": metadata(f"{PREFIX}-{rule.id}", [rule.check], **{RULE: rule.id}),
        "spec": spec,
    }


def vap_binding(rule: Rule, inputs: PackInputs, mode: str, tenant: TenantPack | None) -> dict:
    """A binding of the rule to one tenant's namespaces (or, for the node rule, to nodes)."""
    name = f"{PREFIX}-{rule.id}" + (f"-{tenant.slug}" if tenant else "")
    spec: dict = {
        "policyName": f"{PREFIX}-{rule.id}",
        "validationActions": VAP_ACTIONS[mode],
        "paramRef": {
            "name": params_name(tenant) if tenant else PRINCIPALS_CONFIGMAP,
            "namespace": inputs.params_namespace,
            # A deleted parameter ConfigMap must not open the namespace up.
            "parameterNotFoundAction": "Deny",
        },
    }
    if tenant:
        spec["matchResources"] = {"namespaceSelector": _namespace_selector(tenant.namespaces)}
    labels = {RULE: rule.id, **({"gpuposture.io/tenant": tenant.slug} if tenant else {})}
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": metadata(name, [rule.check], **labels),
        "spec": spec,
    }


def _namespace_selector(namespaces: tuple[str, ...]) -> dict:
    return {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": list(namespaces)}
        ]
    }


def vap_pack(inputs: PackInputs, mode: str) -> list[dict]:
    objects = support_objects(inputs)
    for rule in TENANT_RULES:
        objects.append(vap_policy(rule, inputs))
        objects += [vap_binding(rule, inputs, mode, t) for t in inputs.tenants]
    objects.append(vap_policy(NODE_RULE, inputs))
    objects.append(vap_binding(NODE_RULE, inputs, mode, None))
    return objects


def kyverno_rule(rule: Rule, inputs: PackInputs, params: str, match: dict) -> dict:
    cel: dict = {
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "paramRef": {
            "name": params,
            "namespace": inputs.params_namespace,
            "parameterNotFoundAction": "Deny",
        },
        "expressions": [{"expression": rule.expression, "message": rule.message}],
    }
    if rule.target == "pods":
        cel["variables"] = [{"name": n, "expression": e} for n, e in VARIABLES]
    body: dict = {"name": rule.id, "match": match, "validate": {"cel": cel}}
    if found := conditions(rule, inputs):
        body["celPreconditions"] = found
    return body


def _match(rule: Rule, namespaces: tuple[str, ...]) -> dict:
    resources: dict = {"kinds": _kyverno_kinds(rule), "operations": _operations(rule)}
    if namespaces:
        resources["namespaces"] = list(namespaces)
    return {"any": [{"resources": resources}]}


def kyverno_pack(inputs: PackInputs, mode: str) -> list[dict]:
    objects = support_objects(inputs)
    action = KYVERNO_ACTIONS[mode]
    for tenant in inputs.tenants:
        labels = {
            "gpuposture.io/tenant": tenant.slug,
            "gpuposture.io/trust-class": tenant.trust_class,
        }
        # Kyverno refuses a whole policy naming a kind the cluster does not serve: the DRA
        # rules (resource.k8s.io/v1, Kubernetes 1.34+) get a policy of their own, so a cluster
        # without them still takes the pod rules. "--" keeps the name apart from any
        # tenant's (a slug never starts with a hyphen).
        for name, source in (
            (f"{PREFIX}-{tenant.slug}", POD_RULES),
            (f"{PREFIX}--dra-{tenant.slug}", CLAIM_RULES),
        ):
            rules = [
                kyverno_rule(r, inputs, params_name(tenant), _match(r, tenant.namespaces))
                for r in source
            ]
            objects.append(_cluster_policy(name, source, rules, action, labels))
    node_rule = kyverno_rule(NODE_RULE, inputs, PRINCIPALS_CONFIGMAP, _match(NODE_RULE, ()))
    # The node rule judges who made a request: there is nothing to judge in a background scan.
    objects.append(
        _cluster_policy(f"{PREFIX}-nodes", (NODE_RULE,), [node_rule], action, {}, background=False)
    )
    return objects


def _cluster_policy(
    name: str,
    source: tuple[Rule, ...],
    rules: list[dict],
    action: str,
    labels: dict[str, str],
    background: bool = True,
) -> dict:
    return {
        "apiVersion": "kyverno.io/v1",
        "kind": "ClusterPolicy",
        "metadata": metadata(name, [r.check for r in source], **labels),
        "spec": {
            "validationFailureAction": action,
            "background": background,
            "rules": rules,
        },
    }


def build_pack(inputs: PackInputs, *, dialect: str, mode: str) -> list[dict]:
    if dialect == "vap":
        return vap_pack(inputs, mode)
    if dialect == "kyverno":
        return kyverno_pack(inputs, mode)
    raise ValueError(f"Unknown dialect {dialect!r}: use vap or kyverno.")
