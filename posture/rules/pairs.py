"""Co-tenancy findings: one per pair of parties (two tenants, or a tenant and the platform),
per shared resource and per node pool where they meet (DESIGN §5: the pair is the cause). A node
with no pool label is its own subject, kind Node. The evidence lists the nodes, each party's pods
and trust class; the exposure is the number of nodes where they meet; the verdict is the worst
over those nodes. PURE. posture/rules/share/ finds the meetings (parties.py); this files them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from inventory.pools import node_pool
from inventory.snapshot import Node
from posture.rules.registry import MEMBERS_SHOWN, FindingDraft, worst_severity
from posture.rules.subjects import PLATFORM_PARTY, subject_draft
from tenants.mapping import UNCLASSIFIED

PLATFORM_NAME = "platform"  # how the platform party is written in evidence and titles
VERDICTS = ("certain", "possible")  # co-residence, the worse first
# Said of the unclassified party wherever it meets a tenant: whom the tenant really shares with.
_UNCLASSIFIED_NOTE = {
    "is_unclassified": True,
    "note": "pods of namespaces no tenant claims: an unknown party, judged under the "
    "unclassified class (GPUPOSTURE_UNCLASSIFIED_CLASS)",
}
# Where two namespaces no tenant claims meet, each is its own party, named by this prefix and
# its namespace: nothing tells that they have one owner (fail closed, DESIGN §3), as LEAK-001
# names them. Against a tenant or the platform they stay the one party `unclassified`.
UNCLASSIFIED_PREFIX = f"{UNCLASSIFIED}:"


def unclassified_party(namespace: str) -> str:
    """The party name of one unclassified namespace's pods where they meet another's."""
    return f"{UNCLASSIFIED_PREFIX}{namespace}"


def party_tenant(name: str) -> str:
    """The tenant slug a party's finding affects: `unclassified` for one namespace's party."""
    return UNCLASSIFIED if name.startswith(UNCLASSIFIED_PREFIX) else name


@dataclass(frozen=True)
class Party:
    """One side of a co-tenancy on one node: a tenant, or the platform's pods."""

    name: str  # tenant slug, or PLATFORM_PARTY
    trust_class: str
    pods: tuple[dict[str, Any], ...]  # what it holds on the node (pod, resource, count)
    replicas: int
    # The physical devices it holds where every holding names them (a KAI reservation's GPU,
    # HAMi's allocation, a DRA result); None when any could be on any device of the pool.
    devices: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Meeting:
    """Two parties holding one shared resource of one node: what a co-tenancy check sees."""

    node: Node
    key: str  # the resource, profile or resource and mode they share
    parties: tuple[Party, Party]
    co_residence: str  # "certain" or "possible" on this node
    reason: str
    node_facts: dict[str, Any] = field(default_factory=dict)
    severity: str = ""
    # Facts of the pair itself (the rule that forbids it, the resource, the mode): the first
    # meeting's are kept.
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PairCause:
    """A pair's meetings in one pool, as a title reads them."""

    who: str  # "Tenants alpha and beta", "Tenant alpha and platform pods"
    where: str  # "pool h100-a" or "node gpu-7"
    key: str
    co_residence: str
    meetings: tuple[Meeting, ...]

    @property
    def note(self) -> str:
        return f"({self.co_residence} co-residence)"


def pool_subject(node: Node) -> tuple[str, str]:
    """(kind, name) of the subject a co-tenancy on `node` is filed under."""
    pool = node_pool(node.labels)
    return ("NodePool", pool) if pool else ("Node", node.name)


def pair_drafts(
    check_id: str, meetings: Iterable[Meeting], title: Callable[[PairCause], str]
) -> list[FindingDraft]:
    """One draft per pair of parties, shared key and pool, from their meetings on nodes."""
    groups: dict[tuple[str, str, str, str, str], list[Meeting]] = {}
    # Per node, once: its subject and its labels sorted (a node meets many pairs).
    nodes: dict[str, tuple[tuple[str, str], dict[str, str]]] = {}
    for meeting in meetings:
        node = meeting.node
        if node.name not in nodes:
            nodes[node.name] = (pool_subject(node), dict(sorted(node.labels.items())))
        a, b = meeting.parties
        first, second = (a.name, b.name) if a.name <= b.name else (b.name, a.name)
        group = (*nodes[node.name][0], meeting.key, first, second)
        groups.setdefault(group, []).append(meeting)
    return [
        _pair_draft(check_id, group, found, title, nodes[found[0].node.name][1])
        for group, found in groups.items()
    ]


def _pair_draft(
    check_id: str,
    group: tuple[str, str, str, str, str],
    meetings: list[Meeting],
    title: Callable[[PairCause], str],
    first_labels: dict[str, str],
) -> FindingDraft:
    """`first_labels`: the first meeting's node's labels, sorted."""
    kind, subject, key, first, second = group
    verdict = min((m.co_residence for m in meetings), key=VERDICTS.index)
    names = [n or f"({PLATFORM_NAME})" for n in (first, second)]  # never a tenant's slug
    cause = PairCause(_who(first, second), _where(kind, subject), key, verdict, tuple(meetings))
    if len(meetings) == 1:  # most pairs meet on one node: its labels, without the sets
        labels = first_labels
    else:  # the labels every node of the meetings has alike
        common = set.intersection(*(set(m.node.labels.items()) for m in meetings))
        labels = dict(sorted(common))
    evidence = {
        "node_pool": subject if kind == "NodePool" else None,
        "co_residence": verdict,
        **meetings[0].details,
        "parties": _parties(meetings, (first, second)),
        "nodes": [_node_entry(m) for m in meetings[:MEMBERS_SHOWN]],
        "node_count": len(meetings),
    }
    return subject_draft(
        check_id,
        kind=kind,
        name=subject,
        tenants=(party_tenant(first), party_tenant(second)),
        evidence=evidence,
        key=f"{key}:{names[0]}:{names[1]}",
        title=title(cause),
        severity=worst_severity(m.severity for m in meetings),
        labels=labels,  # copied by subject_draft
        exposure=len(meetings),
    )


def _who(first: str, second: str) -> str:
    if first.startswith(UNCLASSIFIED_PREFIX) and second.startswith(UNCLASSIFIED_PREFIX):
        namespaces = ", ".join(n.removeprefix(UNCLASSIFIED_PREFIX) for n in (first, second))
        return f"Pods of two namespaces no tenant owns ({namespaces})"
    if PLATFORM_PARTY in (first, second):
        return f"Tenant {first or second} and platform pods"
    if UNCLASSIFIED in (first, second):
        other = second if first == UNCLASSIFIED else first
        return f"Tenant {other} and pods of a namespace no tenant owns"
    return f"Tenants {first} and {second}"


def _where(kind: str, subject: str) -> str:
    return f"pool {subject}" if kind == "NodePool" else f"node {subject}"


def _parties(meetings: list[Meeting], names: tuple[str, str]) -> list[dict[str, Any]]:
    parties = []
    for name in names:
        sides = [p for m in meetings for p in m.parties if p.name == name]
        pods = [pod for side in sides for pod in side.pods]
        parties.append(
            {
                "party": name or PLATFORM_NAME,
                "is_platform": name == PLATFORM_PARTY,
                "trust_class": sides[0].trust_class,
                **_unclassified_facts(name),
                "pods": pods[:MEMBERS_SHOWN],
                "replicas": sum(side.replicas for side in sides),
            }
        )
    return parties


def _unclassified_facts(name: str) -> dict[str, Any]:
    """What a party's evidence says of it being unclassified: the note, and the namespace of
    one namespace's party."""
    if name == UNCLASSIFIED:
        return _UNCLASSIFIED_NOTE
    if name.startswith(UNCLASSIFIED_PREFIX):
        return {**_UNCLASSIFIED_NOTE, "namespace": name.removeprefix(UNCLASSIFIED_PREFIX)}
    return {}


def _node_entry(meeting: Meeting) -> dict[str, Any]:
    return {
        "node": meeting.node.name,
        **meeting.node_facts,
        "co_residence": meeting.co_residence,
        "co_residence_reason": meeting.reason,
    }
