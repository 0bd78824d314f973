"""A pod spec -> the facts scoped ResourceQuotas match it by (PodScope), as the API server's
quota evaluator reads them at admission: from the spec, not from status (a pod is admitted
before it has one)."""

from __future__ import annotations

from typing import Any

from inventory.snapshot import PodScope
from inventory.snapshot.quantity import parse_quantity
from inventory.sources.raw import as_int, dicts, mapping, text

_QOS_RESOURCES = ("cpu", "memory")  # the only resources QoS is computed from
_AFFINITIES = ("podAffinity", "podAntiAffinity")


def pod_scope(spec: dict[str, Any]) -> PodScope:
    deadline = as_int(spec.get("activeDeadlineSeconds"))
    return PodScope(
        terminating=deadline is not None and deadline >= 0,
        best_effort=_best_effort(spec),
        cross_namespace_affinity=_cross_namespace_affinity(spec),
        priority_class=text(spec.get("priorityClassName")) or "",
    )


def _best_effort(spec: dict[str, Any]) -> bool:
    """No positive CPU or memory request or limit on any container, init container or the pod
    itself (spec.resources); ephemeral containers have no resources."""
    holders = [*dicts(spec.get("initContainers")), *dicts(spec.get("containers")), spec]
    for holder in holders:
        resources = mapping(holder.get("resources"))
        for part in ("requests", "limits"):
            for name in _QOS_RESOURCES:
                value = mapping(resources.get(part)).get(name)
                amount = parse_quantity(value) if isinstance(value, str | int) else None
                if amount is not None and amount > 0:
                    return False
    return True


def _cross_namespace_affinity(spec: dict[str, Any]) -> bool:
    """A pod affinity or anti-affinity term, required or preferred, with `namespaces` or a
    `namespaceSelector` (an empty selector too: it means every namespace)."""
    affinity = mapping(spec.get("affinity"))
    for kind in _AFFINITIES:
        rules = mapping(affinity.get(kind))
        terms = dicts(rules.get("requiredDuringSchedulingIgnoredDuringExecution"))
        terms += [
            mapping(w.get("podAffinityTerm"))
            for w in dicts(rules.get("preferredDuringSchedulingIgnoredDuringExecution"))
        ]
        if any(t.get("namespaces") or t.get("namespaceSelector") is not None for t in terms):
            return True
    return False
