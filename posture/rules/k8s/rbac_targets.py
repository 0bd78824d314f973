"""The objects K8S-003/-004 guard, and the question they ask of every grant and escalation
path: does it write any of them. PURE."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from inventory.rbac import ref as _ref
from posture.rules.k8s.rbac_escalation import Escalation
from posture.rules.k8s.rbac_eval import Grant

NAMELESS_VERBS = ("create", "deletecollection")  # asked about no single object
# In a target index, the name of an object that exists but was not read: a rule limited by
# resourceNames may name it, whatever the names are.
ANY_NAME = "\x00any"


@dataclass(frozen=True)
class Target:
    """An object (or, with no name, any object of its resource) a tenant must not write."""

    kind: str
    group: str
    resource: str
    namespace: str | None
    name: str | None
    purpose: str
    # What the target stands in for when the object itself was not read (evidence
    # `target_unseen`); "" for an object the snapshot holds.
    unseen: str = ""
    # An object that exists but whose name is unknown: a rule's resourceNames may name it.
    any_name: bool = False
    # Reached only by a rule naming its API group or resource, never by wildcards alone or a
    # total escalation: a resource that may not exist at all (its operator was not seen).
    explicit: bool = False
    severity: str = ""  # the draft's when every target it reaches says so; else the check's
    # Why an object is taken as a target where that is not plain (evidence `why`).
    why: str = ""

    def ref(self) -> str:
        every = f"{'any' if self.any_name else 'every'} {self.kind}" + (
            f" in namespace {self.namespace}" if self.namespace else ""
        )
        found = _ref(self.kind, self.namespace, self.name) if self.name else every
        _, _, sub = self.resource.partition("/")
        return f"{found} ({sub} subresource)" if sub else found

    def verbs_allowed(self, grant: Grant | Escalation, verbs: Iterable[str]) -> list[str]:
        if self.explicit and not names_explicitly(grant, self.group, self.resource):
            return []
        return [
            verb
            for verb in verbs
            if any(
                grant.allows(verb, self.group, self.resource, self.namespace, name)
                for name in self._names(verb, grant)
            )
        ]

    def _names(self, verb: str, grant: Grant | Escalation) -> tuple[str | None, ...]:
        # The API server authorises create and deletecollection without an object name:
        # resourceNames never allow them. An object not read may bear any name a rule lists.
        if verb in NAMELESS_VERBS:
            return (None,)
        if not self.any_name:
            return (self.name,)
        grants = grant.grants if isinstance(grant, Escalation) else (grant,)
        return (None, *(n for g in grants for n in g.rule.resource_names))


def names_explicitly(way: Grant | Escalation, group: str, resource: str) -> bool:
    """Whether `way` rests on a rule that names `group` or `resource` itself (not `*` alone)."""
    if isinstance(way, Escalation):
        return not way.total and any(names_explicitly(g, group, resource) for g in way.grants)
    rule = way.rule
    return group in rule.api_groups or any(r.partition("/")[0] == resource for r in rule.resources)


IndexKey = tuple[str, str, str | None, bool]  # group, resource, namespace, explicit
TargetIndex = dict[IndexKey, tuple[str | None, ...]]


def target_index(targets: list[Target]) -> TargetIndex:
    """The targets' names by (group, resource, namespace, explicit): a rule's answer depends on
    the name only through its resourceNames, so most questions are asked once per resource,
    not once per node (K8S-003 has a target for every node)."""
    index: dict[IndexKey, list[str | None]] = {}
    for t in targets:
        key = (t.group, t.resource, t.namespace, t.explicit)
        index.setdefault(key, []).append(ANY_NAME if t.any_name else t.name)
    return {key: tuple(dict.fromkeys(found)) for key, found in index.items()}


def writes_any(
    way: Grant | Escalation, index: TargetIndex, verbs: tuple[str, ...], memo: dict[Grant, bool]
) -> bool:
    """Whether `way` allows any of `verbs` on any target: what `any(t.verbs_allowed(way,
    verbs) for t in targets)` says, asking each grant once per resource (memo: per grant)."""
    if isinstance(way, Escalation):
        if way.total:
            return any(
                not explicit and (way.namespace is None or ns == way.namespace)
                for _, _, ns, explicit in index
            )
        return any(_grant_writes_any(g, index, verbs, memo) for g in way.grants)
    return _grant_writes_any(way, index, verbs, memo)


def _grant_writes_any(
    grant: Grant, index: TargetIndex, verbs: tuple[str, ...], memo: dict[Grant, bool]
) -> bool:
    if grant in memo:
        return memo[grant]
    listed = set(grant.rule.resource_names)
    answer = False
    for (group, resource, namespace, explicit), target_names in index.items():
        if explicit and not names_explicitly(grant, group, resource):
            continue
        for verb in verbs:
            if verb in NAMELESS_VERBS:
                asked: tuple[str | None, ...] = (None,)
            elif listed:  # only the names it lists can be allowed (any, for an unread object)
                asked = (
                    tuple(listed)
                    if ANY_NAME in target_names
                    else tuple(n for n in target_names if n in listed)
                )
            else:  # without resourceNames the name decides nothing: any one will do
                asked = (None,) if target_names[0] == ANY_NAME else target_names[:1]
            if any(grant.allows(verb, group, resource, namespace, n) for n in asked):
                answer = True
                break
        if answer:
            break
    memo[grant] = answer
    return answer
