"""The objects K8S-003/-004 guard, and the question they ask of every grant and escalation
path: does it write any of them. PURE."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from inventory.rbac import ref as _ref
from posture.rules.k8s.rbac_escalation import Escalation
from posture.rules.k8s.rbac_eval import Grant

NAMELESS_VERBS = ("create", "deletecollection")  # asked about no single object


@dataclass(frozen=True)
class Target:
    """An object (or, with no name, any object of its resource) a tenant must not write."""

    kind: str
    group: str
    resource: str
    namespace: str | None
    name: str | None
    purpose: str

    def ref(self) -> str:
        every = f"every {self.kind}" + (f" in namespace {self.namespace}" if self.namespace else "")
        found = _ref(self.kind, self.namespace, self.name) if self.name else every
        _, _, sub = self.resource.partition("/")
        return f"{found} ({sub} subresource)" if sub else found

    def verbs_allowed(self, grant: Grant | Escalation, verbs: Iterable[str]) -> list[str]:
        # The API server authorises create and deletecollection without an object name:
        # resourceNames never allow them.
        return [
            verb
            for verb in verbs
            if grant.allows(verb, self.group, self.resource, self.namespace, self._name(verb))
        ]

    def _name(self, verb: str) -> str | None:
        return None if verb in NAMELESS_VERBS else self.name


TargetIndex = dict[tuple[str, str, str | None], tuple[str | None, ...]]


def target_index(targets: list[Target]) -> TargetIndex:
    """The targets' names by (group, resource, namespace): a rule's answer depends on the name
    only through its resourceNames, so most questions are asked once per resource, not once
    per node (K8S-003 has a target for every node)."""
    index: dict[tuple[str, str, str | None], list[str | None]] = {}
    for t in targets:
        index.setdefault((t.group, t.resource, t.namespace), []).append(t.name)
    return {key: tuple(dict.fromkeys(found)) for key, found in index.items()}


def writes_any(
    way: Grant | Escalation, index: TargetIndex, verbs: tuple[str, ...], memo: dict[Grant, bool]
) -> bool:
    """Whether `way` allows any of `verbs` on any target: what `any(t.verbs_allowed(way,
    verbs) for t in targets)` says, asking each grant once per resource (memo: per grant)."""
    if isinstance(way, Escalation):
        if way.total:
            return any(way.namespace is None or ns == way.namespace for _, _, ns in index)
        return any(_grant_writes_any(g, index, verbs, memo) for g in way.grants)
    return _grant_writes_any(way, index, verbs, memo)


def _grant_writes_any(
    grant: Grant, index: TargetIndex, verbs: tuple[str, ...], memo: dict[Grant, bool]
) -> bool:
    if grant in memo:
        return memo[grant]
    listed = set(grant.rule.resource_names)
    answer = False
    for (group, resource, namespace), target_names in index.items():
        for verb in verbs:
            if verb in NAMELESS_VERBS:
                asked: tuple[str | None, ...] = (None,)
            elif listed:  # only the names it lists can be allowed
                asked = tuple(n for n in target_names if n in listed)
            else:  # without resourceNames the name decides nothing: any one will do
                asked = target_names[:1]
            if any(grant.allows(verb, group, resource, namespace, n) for n in asked):
                answer = True
                break
        if answer:
            break
    memo[grant] = answer
    return answer
