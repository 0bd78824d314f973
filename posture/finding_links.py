"""The tenants each finding affects (FindingTenant), kept in step with what the checks said,
in bulk: one read of the cluster's links, one insert, a few deletes; never a query per finding.
Called by posture.finding_store.findings_refresh inside its transaction."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from inventory.bulk import rows_insert
from inventory.models import Cluster
from posture.models import Finding, FindingTenant

BATCH = 900  # under SQLite's limit on query parameters


def finding_tenants_write(
    *,
    cluster: Cluster,
    affects: Mapping[str, set[int]],
    existing: Mapping[str, int],
    now: datetime,
) -> dict[str, int]:
    """Make each finding reported this run (`affects`: fingerprint -> tenant ids) affect
    exactly those tenants. Findings not reported (resolved) keep their last tenants: that is
    whom they affected. `existing` are the cluster's findings before this run's inserts
    (fingerprint -> id)."""
    ids = dict(existing)
    ids.update(_new_ids(cluster, [f for f in affects if f not in ids]))
    current: dict[int, dict[int, int]] = {}  # finding id -> tenant id -> link id
    if existing:  # a first evaluation has no links yet
        links = FindingTenant.objects.filter(finding__cluster=cluster)
        for pk, finding_id, tenant_id in links.values_list("pk", "finding_id", "tenant_id"):
            current.setdefault(finding_id, {})[tenant_id] = pk
    added: list[tuple[int, int]] = []
    dropped: list[int] = []
    for fingerprint, tenants in affects.items():
        finding_id = ids[fingerprint]
        have = current.get(finding_id, {})
        added += [(finding_id, tenant) for tenant in sorted(tenants - have.keys())]
        dropped += [pk for tenant, pk in have.items() if tenant not in tenants]
    rows_insert(FindingTenant, ("finding_id", "tenant_id"), added, now)
    for start in range(0, len(dropped), BATCH):
        FindingTenant.objects.filter(pk__in=dropped[start : start + BATCH]).delete()
    return {"added": len(added), "dropped": len(dropped)}


def _new_ids(cluster: Cluster, fingerprints: list[str]) -> dict[str, int]:
    """The ids the bulk insert gave the new findings (it returns none). Many: one read of the
    cluster's findings (a first score inserts them all; a query per 900 was 0.6 s of a
    26,000-finding score). Few: by fingerprint alone (unique, and it hashes the cluster's
    name): with the cluster in the filter too SQLite walked the cluster's index for every
    batch, quadratic in the findings (196 s of a first score of 343,598 findings)."""
    wanted = set(fingerprints)
    if len(wanted) > 4 * BATCH:
        # Unordered, as every read into a dict here (the model's ordering costs a sort).
        rows = Finding.objects.filter(cluster=cluster).order_by().values_list("fingerprint", "pk")
        return {fp: pk for fp, pk in rows.iterator(5000) if fp in wanted}
    found: dict[str, int] = {}
    for start in range(0, len(fingerprints), BATCH):
        batch = fingerprints[start : start + BATCH]
        rows = Finding.objects.filter(fingerprint__in=batch).order_by()
        found.update(rows.values_list("fingerprint", "pk"))
    return found
