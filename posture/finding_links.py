"""The tenants each finding affects (FindingTenant), kept in step with what the checks said,
in bulk: one read of the cluster's links, one insert, a few deletes, and the links whose own
exposure changed rewritten in one bulk update; never a query per finding. Called by
posture.finding_store.findings_refresh inside its transaction."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from gpuposture.base.batching import IDS_PER_QUERY
from inventory.bulk import rows_insert, rows_update
from inventory.models import Cluster
from posture.models import Finding, FindingTenant


def finding_tenants_write(
    *,
    cluster: Cluster,
    affects: Mapping[str, Mapping[int, int | None]],
    existing: Mapping[str, int],
    now: datetime,
) -> dict[str, int]:
    """Make each finding reported this run (`affects`: fingerprint -> tenant id -> the
    tenant's own exposure, None for the finding's) affect exactly those tenants, each link
    with that exposure. Findings not reported (resolved) keep their last tenants: that is
    whom they affected. `existing` are the cluster's findings before this run's inserts
    (fingerprint -> id)."""
    ids = dict(existing)
    ids.update(_new_ids(cluster, [f for f in affects if f not in ids]))
    current: dict[int, dict[int, int]] = {}  # finding id -> tenant id -> link id
    own: dict[int, int] = {}  # link id -> its own exposure, for the few links that have one
    if existing:  # a first evaluation has no links yet
        links = FindingTenant.objects.filter(finding__cluster=cluster)
        rows = links.values_list("pk", "finding_id", "tenant_id", "exposure")
        for pk, finding_id, tenant_id, exposure in rows:
            current.setdefault(finding_id, {})[tenant_id] = pk
            if exposure is not None:
                own[pk] = exposure
    added: list[tuple[int, int, int | None]] = []
    dropped: list[int] = []
    moved: list[tuple[int, int | None]] = []  # (link id, its new exposure)
    for fingerprint, tenants in affects.items():
        finding_id = ids[fingerprint]
        have = current.get(finding_id, {})
        for tenant in sorted(tenants):
            pk = have.get(tenant)
            if pk is None:
                added.append((finding_id, tenant, tenants[tenant]))
            elif own.get(pk) != tenants[tenant]:  # the same tenant, its own exposure changed
                moved.append((pk, tenants[tenant]))
        dropped += [pk for tenant, pk in have.items() if tenant not in tenants]
    rows_insert(FindingTenant, ("finding_id", "tenant_id", "exposure"), added, now)
    rows_update(FindingTenant, ("exposure",), moved)
    for start in range(0, len(dropped), IDS_PER_QUERY):
        FindingTenant.objects.filter(pk__in=dropped[start : start + IDS_PER_QUERY]).delete()
    return {"added": len(added), "dropped": len(dropped), "exposure_changed": len(moved)}


def _new_ids(cluster: Cluster, fingerprints: list[str]) -> dict[str, int]:
    """The ids the bulk insert gave the new findings (it returns none). Many: one read of the
    cluster's findings (a first score inserts them all; a query per 900 was 0.6 s of a
    26,000-finding score). Few: by fingerprint alone (unique, and it hashes the cluster's
    name): with the cluster in the filter too SQLite walked the cluster's index for every
    batch, quadratic in the findings (196 s of a first score of 343,598 findings)."""
    wanted = set(fingerprints)
    if len(wanted) > 4 * IDS_PER_QUERY:
        # Unordered, as every read into a dict here (the model's ordering costs a sort).
        rows = Finding.objects.filter(cluster=cluster).order_by().values_list("fingerprint", "pk")
        return {fp: pk for fp, pk in rows.iterator(5000) if fp in wanted}
    found: dict[str, int] = {}
    for start in range(0, len(fingerprints), IDS_PER_QUERY):
        batch = fingerprints[start : start + IDS_PER_QUERY]
        rows = Finding.objects.filter(fingerprint__in=batch).order_by()
        found.update(rows.values_list("fingerprint", "pk"))
    return found
