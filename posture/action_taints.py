"""The action that makes a pool one class's tainted pool (K8S-002 of its nodes, POD-009 of the
workloads outside their class's pool on it): its title, the change that closes them, and the
tenants it does not help (posture.actions). PURE.

A pool takes one class's taint. So the change is not always "taint it": a node already tainted
for two classes (K8S-002's `tainted_for_classes`) is closed by removing the other class's
taint, which tainting again would not do. And a tenant of another class with pods on the pool
is not helped: a NoSchedule taint evicts nobody, so its pods stay beside the class's code, and
are then the pods inside another class's pool POD-009 reports. The action leaves it out of its
tenants and risk removed (docs/scoring.md: "the tenants it helps, the risk it removes") and
says its workloads must leave the pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tenants.mapping import PLATFORM_CLASS

if TYPE_CHECKING:
    from posture.actions import ActionFinding

# Tenants named in a title before "and N more".
NAMED_TENANTS = 3


def pool_classes(members: Sequence[ActionFinding]) -> set[str]:
    """The classes the pool is to be tainted for: of the pods running outside their pool
    (POD-009), else of the tenants on the untainted nodes (K8S-002)."""
    classes = {str(f.evidence.get("trust_class")) for f in members if f.check_id == "POD-009"}
    if not classes:
        on_nodes = (f.evidence.get("tenants_on_node") or [] for f in members)
        classes = {str(t.get("trust_class")) for listed in on_nodes for t in listed}
    classes.discard("None")
    return classes


def taint_classes(members: Sequence[ActionFinding]) -> str:
    """ " for class x"; "" when no class is known. Several classes there mean splitting the
    pool, which the title says rather than naming a taint no node can carry."""
    classes = pool_classes(members)
    if not classes:
        return ""
    if len(classes) == 1:
        return f" for class {classes.pop()}"
    return f" per class: one pool per class, it runs {', '.join(sorted(classes))}"


def _tainted_for(finding: ActionFinding) -> list[str]:
    """The classes a K8S-002 node is tainted for where it carries two or more (else [])."""
    listed = finding.evidence.get("tainted_for_classes") if finding.check_id == "K8S-002" else None
    return [str(c) for c in listed] if isinstance(listed, list) else []


def _nodes(names: Sequence[str]) -> str:
    if len(names) == 1:
        return f"node {names[0]}"
    if len(names) == 2:
        return f"nodes {names[0]} and {names[1]}"
    return f"{len(names)} nodes"


def _of(where: str, nodes: Sequence[str]) -> str:
    """ " (pool x)" after the nodes named, unless `where` is the one node itself."""
    return "" if where == f"node {nodes[0]}" else f" ({where})"


def taint_title(where: str, members: Sequence[ActionFinding]) -> str:
    """The change that makes `where` one class's pool: taint the nodes without the class's
    taint, remove the other classes' taints from the nodes carrying several."""
    classes = pool_classes(members)
    conflicted = sorted({f.subject_name for f in members if _tainted_for(f)})
    if not conflicted:
        return f"Taint {where}{taint_classes(members)}"
    if len(classes) != 1:
        if classes:
            return f"Taint {where}{taint_classes(members)}"
        # No tenant says which class: the node must keep one of its class taints.
        tainted = sorted({c for f in members for c in _tainted_for(f)})
        return (
            f"Keep one class's taint on {_nodes(conflicted)}{_of(where, conflicted)}: "
            f"tainted for {' and '.join(tainted)}"
        )
    (kept,) = classes
    # A node already tainted for the class only loses the others; a node without it needs it.
    untainted = sorted(
        {f.subject_name for f in members if f.check_id == "K8S-002"}
        - {f.subject_name for f in members if kept in _tainted_for(f)}
    )
    others = sorted({c for f in members for c in _tainted_for(f)} - {kept})
    plural = "taints" if len(others) > 1 else "taint"
    remove = f"the {' and '.join(others)} {plural} from {_nodes(conflicted)}"
    if untainted:
        return f"Taint {where} for class {kept} and remove {remove}"
    return f"Remove {remove}{_of(where, conflicted)}, keeping class {kept}'s"


def tenants_not_helped(members: Sequence[ActionFinding]) -> dict[str, str]:
    """Tenant slug -> class, of the tenants on the pool's nodes whose class is not the one the
    pool is tainted for (none where no one class is). The platform class's system pods run in
    every pool (POD-009 spares them): tainting helps them as much as anyone."""
    classes = pool_classes(members)
    if len(classes) != 1:
        return {}
    (kept,) = classes
    return {
        str(t.get("tenant")): str(t.get("trust_class"))
        for f in members
        if f.check_id == "K8S-002"
        for t in f.evidence.get("tenants_on_node") or ()
        if isinstance(t, dict) and str(t.get("trust_class")) not in (kept, PLATFORM_CLASS, "None")
    }


def must_leave(not_helped: dict[str, str]) -> str:
    """ "; tenant alpha (class internal) must move its GPU workloads off it": the part of the
    change the taint does not make (NoSchedule evicts nobody)."""
    if not not_helped:
        return ""
    named = [f"{slug} (class {cls})" for slug, cls in sorted(not_helped.items())]
    if len(named) == 1:
        return f"; tenant {named[0]} must move its GPU workloads off it"
    if len(named) > NAMED_TENANTS:
        rest = len(named) - NAMED_TENANTS
        named = [*named[:NAMED_TENANTS], f"{rest} more"]
    listed = f"{', '.join(named[:-1])} and {named[-1]}"
    return f"; tenants {listed} must move their GPU workloads off it"
