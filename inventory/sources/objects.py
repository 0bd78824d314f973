"""Namespaces, quotas, controllers, RBAC objects and NetworkPolicies -> snapshot dataclasses
(Services, Ingresses and routes: inventory/sources/exposure.py)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from inventory.owners import qualified_kind
from inventory.snapshot import (
    GpuOperatorPolicy,
    Namespace,
    NetworkPolicy,
    OwnerLink,
    PolicyRule,
    ResourceQuota,
    Role,
    RoleBinding,
    Subject,
    Workload,
)
from inventory.sources.egress_ports import kubernetes_ports, merge
from inventory.sources.gpu_operator import GpuOperatorError, parse_cluster_policy
from inventory.sources.images import SANDBOX_OPERANDS, component_of, is_vgpu_device_manager
from inventory.sources.pods import template_facts, template_path
from inventory.sources.raw import (
    as_int,
    canonical_hash,
    controller_reference,
    dicts,
    dig,
    labels_of,
    mapping,
    name_of,
    str_dict,
    str_tuple,
    text,
)


def namespace_from(obj: dict[str, Any]) -> Namespace:
    return Namespace(name=name_of(obj), labels=labels_of(obj))


def quota_from(obj: dict[str, Any], namespace: str) -> ResourceQuota:
    spec = dig(obj, "spec")
    return ResourceQuota(
        namespace=namespace,
        name=name_of(obj),
        hard=str_dict(spec.get("hard")),
        scopes=str_tuple(spec.get("scopes")),
        scope_selector=tuple(
            {
                "scopeName": text(e.get("scopeName"), "") or "",
                "operator": text(e.get("operator"), "") or "",
                "values": list(str_tuple(e.get("values"))),
            }
            for e in dicts(dig(spec, "scopeSelector").get("matchExpressions"))
        ),
    )


def workload_from(obj: dict[str, Any], namespace: str) -> Workload:
    """A DaemonSet, Deployment, StatefulSet, CronJob or Job: its template's images and a hash
    of the template spec, so a later sync can tell that the device plugin or operator was
    changed, and the template itself (a workload with no pod running is judged from it)."""
    pod_spec = dig(obj, *template_path(str(obj["kind"])), "spec")
    containers = dicts(pod_spec.get("initContainers")) + dicts(pod_spec.get("containers"))
    images: dict[str, str] = {}
    for container in containers:
        images[text(container.get("name"), "") or ""] = text(container.get("image"), "") or ""
    gpu_stack = any(component_of(image) for image in images.values())
    # The GPU Operator's sandbox operands too: where they run shows the nodes it manages.
    placed = gpu_stack or name_of(obj) in SANDBOX_OPERANDS
    placement = _placement(pod_spec) if placed and obj["kind"] == "DaemonSet" else {}
    return Workload(
        kind=str(obj["kind"]),
        namespace=namespace,
        name=name_of(obj),
        labels=labels_of(obj),
        images=images,
        spec_hash=canonical_hash(pod_spec),
        # The vGPU Device Manager is no versioned component, but reads its config like one.
        config_refs=_config_refs(pod_spec, containers)
        if gpu_stack or any(is_vgpu_device_manager(i) for i in images.values())
        else (),
        **placement,
        **template_facts(obj),
    )


def _placement(pod_spec: dict[str, Any]) -> dict[str, Any]:
    """Where a GPU-stack DaemonSet's pods may run: nodeSelector, tolerations and the required
    node affinity terms (each requirement as key, operator and values; inventory.placement)."""
    required = dig(
        pod_spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"
    )
    terms = tuple(
        {
            part: [_requirement(r) for r in dicts(term.get(part)) if text(r.get("key"))]
            for part in ("matchExpressions", "matchFields")
        }
        for term in dicts(required.get("nodeSelectorTerms"))
    )
    return {
        "node_selector": str_dict(pod_spec.get("nodeSelector")),
        "tolerations": tuple(str_dict(t) for t in dicts(pod_spec.get("tolerations"))),
        "affinity_terms": terms,
    }


def _requirement(raw: dict[str, Any]) -> dict[str, Any]:
    return {
        "key": text(raw.get("key")),
        "operator": text(raw.get("operator"), "") or "",
        "values": list(str_tuple(raw.get("values"))),
    }


def _config_refs(pod_spec: dict[str, Any], containers: list[dict[str, Any]]) -> tuple[str, ...]:
    """ConfigMaps a pod template reads: mounted (also through a projected volume), or taken
    into the environment. A `--config-file` or CONFIG_FILE path points into one of the mounts."""
    names: set[str | None] = set()
    for volume in dicts(pod_spec.get("volumes")):
        names.add(text(dig(volume, "configMap").get("name")))
        for source in dicts(dig(volume, "projected").get("sources")):
            names.add(text(dig(source, "configMap").get("name")))
    for container in containers:
        for source in dicts(container.get("envFrom")):
            names.add(text(dig(source, "configMapRef").get("name")))
        for env in dicts(container.get("env")):
            names.add(text(dig(env, "valueFrom", "configMapKeyRef").get("name")))
    return tuple(sorted(n for n in names if n))


def owner_link_from(obj: dict[str, Any], namespace: str) -> OwnerLink:
    """A ReplicaSet's, Job's or CronJob's name and owner (its controller reference,
    inventory.sources.raw.controller_reference): the owner chain of the pods it runs, nothing
    of its spec."""
    owner = controller_reference(obj)
    kind = text(owner.get("kind"))
    return OwnerLink(
        kind=str(obj["kind"]),
        namespace=namespace,
        name=name_of(obj),
        # Named as a pod's owner is (inventory.owners.qualified_kind), so the chain meets it.
        owner_kind=qualified_kind(kind, text(owner.get("apiVersion"), "") or "") if kind else kind,
        owner_name=text(owner.get("name")),
        owner_uid=text(owner.get("uid"), "") or "",
        owner_api_version=text(owner.get("apiVersion"), "") or "",
    )


def role_from(obj: dict[str, Any], namespace: str | None) -> Role:
    kind = str(obj["kind"])
    selectors = dicts(dig(obj, "aggregationRule").get("clusterRoleSelectors"))
    return Role(
        kind=kind,
        name=name_of(obj),
        # A ClusterRole is cluster-wide even if a manifest puts a namespace on it.
        namespace=namespace if kind == "Role" else None,
        rules=tuple(_rule(r) for r in dicts(obj.get("rules"))),
        aggregation_labels=tuple(str_dict(s.get("matchLabels")) for s in selectors),
        labels=labels_of(obj),
        aggregation_selectors=tuple(_selector(s) for s in selectors),
    )


def _selector(raw: dict[str, Any]) -> dict[str, Any]:
    """A clusterRoleSelector as the aggregation controller reads it: matchLabels and
    matchExpressions (an empty one selects every ClusterRole)."""
    return {
        "matchLabels": str_dict(raw.get("matchLabels")),
        "matchExpressions": [
            {
                "key": text(e.get("key"), "") or "",
                "operator": text(e.get("operator"), "") or "",
                "values": list(str_tuple(e.get("values"))),
            }
            for e in dicts(raw.get("matchExpressions"))
        ],
    }


def _rule(raw: dict[str, Any]) -> PolicyRule:
    return PolicyRule(
        api_groups=str_tuple(raw.get("apiGroups")),
        resources=str_tuple(raw.get("resources")),
        verbs=str_tuple(raw.get("verbs")),
        resource_names=str_tuple(raw.get("resourceNames")),
    )


def binding_from(obj: dict[str, Any], namespace: str | None) -> RoleBinding:
    kind = str(obj["kind"])
    own_namespace = namespace if kind == "RoleBinding" else None
    role_ref = mapping(obj.get("roleRef"))
    return RoleBinding(
        kind=kind,
        name=name_of(obj),
        namespace=own_namespace,
        role_kind=text(role_ref.get("kind"), "") or "",
        role_name=text(role_ref.get("name"), "") or "",
        subjects=tuple(_subject(s, own_namespace) for s in dicts(obj.get("subjects"))),
    )


def _subject(raw: dict[str, Any], binding_namespace: str | None) -> Subject:
    kind = text(raw.get("kind"), "") or ""
    namespace = text(raw.get("namespace")) or None
    if kind == "ServiceAccount" and namespace is None:
        # kubectl fills in the binding's namespace for a service account subject of a RoleBinding.
        namespace = binding_namespace
    return Subject(kind=kind, name=text(raw.get("name"), "") or "", namespace=namespace)


def network_policy_from(obj: dict[str, Any], namespace: str) -> NetworkPolicy:
    spec = dig(obj, "spec")
    selector = mapping(spec.get("podSelector"))
    match_labels = str_dict(selector.get("matchLabels"))
    types = str_tuple(spec.get("policyTypes"))
    egress = spec.get("egress")
    if not types:
        # The API's default: Ingress always, Egress when egress rules are given.
        types = ("Ingress", "Egress") if isinstance(egress, list) and egress else ("Ingress",)
    expressions = tuple(
        {
            "key": text(e.get("key"), "") or "",
            "operator": text(e.get("operator"), "") or "",
            "values": list(str_tuple(e.get("values"))),
        }
        for e in dicts(selector.get("matchExpressions"))
    )
    return NetworkPolicy(
        namespace=namespace,
        name=name_of(obj),
        pod_selector=match_labels,
        selects_all_pods=not match_labels and not expressions,
        policy_types=tuple(sorted(types)),
        ingress_rules=len(dicts(spec.get("ingress"))),
        egress_rules=len(dicts(egress)),
        match_expressions=expressions,
        egress_allows_all=any(_allows_everywhere(rule) for rule in dicts(egress)),
        internet_ports=merge(
            *(
                ports
                for rule in dicts(egress)
                if _to_internet(rule) and (ports := kubernetes_ports(rule))
            )
        ),
    )


EVERYWHERE = ("0.0.0.0/0", "::/0")


def _allows_everywhere(rule: dict[str, Any]) -> bool:
    """An egress rule opening the internet on every port: `{}` (no `to`, no `ports`), or a
    `to` peer that is the whole IPv4 or IPv6 range. Its `except` list (the metadata endpoint,
    private ranges) does not count: what K8S-007 guards against is reaching the internet.
    A `ports` entry with no `port` matches every port of its protocol, and so does a range
    from 1 to 65535: such a rule still opens the internet (over TCP, say)."""
    ports = dicts(rule.get("ports"))
    if ports and not any(_every_port(p) for p in ports):
        return False
    return _to_internet(rule)


def _to_internet(rule: dict[str, Any]) -> bool:
    """The rule's peers take in the internet: none given, or the whole IPv4 or IPv6 range."""
    peers = dicts(rule.get("to"))
    return not peers or any(
        text(mapping(p.get("ipBlock")).get("cidr")) in EVERYWHERE for p in peers
    )


def _every_port(port: dict[str, Any]) -> bool:
    if port.get("port") in (None, ""):
        return True
    start, end = as_int(port.get("port")), as_int(port.get("endPort"))
    return start is not None and start <= 1 and end is not None and end >= 65535


def gpu_operator_policy_from(obj: dict[str, Any]) -> GpuOperatorPolicy:
    try:
        spec = asdict(parse_cluster_policy(obj))
    except GpuOperatorError:
        spec = {}
    return GpuOperatorPolicy(
        name=name_of(obj), spec=spec, spec_hash=canonical_hash(mapping(obj.get("spec")))
    )
