"""Which findings a bulletin change resolved, recorded on its import record
(BulletinImport.resolved_findings) by the first evaluation of every cluster after it.

A finding counts as resolved by an import when all of these hold:
- it is a STACK-001/002/003/005 finding, resolved at or after the import started;
- its evidence names one of the bulletins the import imported, replaced or deleted;
- its node still exists and still runs the versions the evidence saw (so no upgrade closed it);
- none of the exposures it listed from those bulletins is still on the node (so the tenant did
  not merely move off a node that is still exposed).
That is, the finding closed because the bulletin baseline moved, not for another reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from inventory.models import BulletinImport, Node
from inventory.patching.status import COMPONENTS
from inventory.patching.versions import bundled_dcgm, installed_version
from posture.models import Finding, PostureRun

BULLETIN_CHECKS = ("STACK-001", "STACK-002", "STACK-003", "STACK-005")
MAX_IDS = 1000

NodeFacts = tuple[dict[str, str | None], list[dict[str, Any]]]  # versions by kind, exposures


def bulletin_imports_effects_record(*, run: PostureRun) -> int:
    """Fill resolved_findings of every finished import still waiting for it; returns how many."""
    waiting = list(
        BulletinImport.objects.filter(resolved_findings__isnull=True)
        .exclude(status=BulletinImport.Status.RUNNING)
        .order_by("started_at")
    )
    if not waiting:
        return 0
    candidates = list(
        Finding.objects.filter(
            check_id__in=BULLETIN_CHECKS,
            status=Finding.Status.RESOLVED,
            resolved_at__gte=waiting[0].started_at,
        ).values_list("pk", "cluster_id", "subject_name", "evidence", "resolved_at")
    )
    nodes = _node_facts({(row[1], row[2]) for row in candidates})
    for record in waiting:
        named = set(record.bulletins)
        ids = sorted(
            pk
            for pk, cluster_id, node, evidence, resolved_at in candidates
            if resolved_at >= record.started_at
            and resolved_by_bulletins(evidence, named, nodes.get((cluster_id, node)))
        )
        record.resolved_findings = {"count": len(ids), "ids": ids[:MAX_IDS], "posture_run": run.pk}
        record.save(update_fields=["resolved_findings"])
    return len(waiting)


def resolved_by_bulletins(
    evidence: Mapping[str, Any], bulletins: set[str], node: NodeFacts | None
) -> bool:
    """True when the finding closed because these bulletins changed (see the module)."""
    exposures = evidence.get("exposures") or evidence.get("late_exposures") or []
    named = [e for e in exposures if e.get("advisory_id") in bulletins]
    if not named or node is None:
        return False
    versions, current = node
    if any(versions.get(e.get("component")) != e.get("installed") for e in named):
        return False  # the node was upgraded (or its version is now unknown)
    still = {(e.get("component"), e.get("advisory_id"), e.get("affected")) for e in current}
    return not any(
        (e.get("component"), e.get("advisory_id"), e.get("affected")) in still for e in named
    )


def _node_facts(keys: Iterable[tuple[int, str]]) -> dict[tuple[int, str], NodeFacts]:
    keys = set(keys)
    if not keys:
        return {}
    rows = Node.objects.filter(
        cluster_id__in={c for c, _ in keys}, name__in={n for _, n in keys}
    ).values_list("cluster_id", "name", "data", "patch_exposures")
    facts = {}
    for cluster_id, name, data, exposures in rows:
        versions = {
            kind: installed_version(kind, data[field]) if data.get(field) else None
            for field, kind in COMPONENTS.items()
        }
        versions["dcgm"] = bundled_dcgm(data.get("dcgm_exporter_version"))
        facts[(cluster_id, name)] = (versions, list(exposures or []))
    return facts
