"""One finding per changed object for DRIFT-001, DRIFT-002, DRIFT-003 and DRIFT-006.

They made one finding per drift event (key `drift-event-<id>`), so a flip and its reversal were
two open findings on one node, and a second change of a ConfigMap a new finding with a new
first_seen. A finding's identity is (check, subject) (DESIGN §5), so they now make one finding
per object that changed (a device-plugin ConfigMap: per config key, each the config of other
nodes), listing its changes in the drift window (posture.rules.drift.changes). The stored rows
that now share (check, cluster, subject, key) merge into one, as posture.0019 merged the pod
findings, and nothing is lost:

- the lowest id survives; its key becomes the config key or "" and its fingerprint is
  recomputed, so the next score matches it (same id, no duplicate, no "resolved" for the rest);
- first_seen is the earliest and last_seen the latest; the tenants of every row; its own ticket
  and owner, else the first merged row's;
- status: open if any live row is open (an acceptance of one change does not cover another
  change of the object); accepted only if every live row is accepted, until the earliest
  expiry, by that acceptance's author, with every reason kept by drift event; resolved if every
  row is resolved (resolved_at the latest);
- the acceptances of merged rows are kept as EarlierAcceptance rows, carried (they make the
  merged acceptance) or no longer applying (the merged finding is open), with a `carry` or
  `lapse` audit event; EarlierAcceptance rows of merged rows move to the survivor, and stored
  actions name the survivor;
- the evidence takes the shape the checks write now: `changes` lists each live row's change
  (all rows' when none is live) newest first, with its drift event, before, after and when;
  the latest's at the top as before; the nodes of every listed change. The next score rewrites
  evidence, title and exposure from the drift events in the window.
Each merge of several rows is one `merge` audit event: which ids went into which.

After the merge an accepted drift finding stays accepted when a later change of its object
comes (as every finding's acceptance holds until its expiry, DESIGN §5); the acceptance's
reason names the changes it was given for.

Backward: a no-op (the merged rows are gone; the old checks would report each event anew).
"""

import copy
import importlib
from collections import defaultdict

from django.db import migrations
from django.utils import timezone

# Frozen helpers of the pod merge: fingerprint, tenants, actions (same tables, same rules).
pod_merge = importlib.import_module("posture.migrations.0019_pod_findings_one_per_workload")

ACTOR = "migration posture.0021_drift_one_per_subject"
CHECKS = ("DRIFT-001", "DRIFT-002", "DRIFT-003", "DRIFT-006")
OLD_KEY = "drift-event-"
LIVE = pod_merge.LIVE
BATCH = pod_merge.BATCH
REASON_MAX = pod_merge.REASON_MAX
MEMBERS_SHOWN = pod_merge.MEMBERS_SHOWN
WRITTEN = pod_merge.WRITTEN
# What an old row's evidence says of its one change (frozen: posture.rules.drift.changes).
CHANGE_FIELDS = ("detected_at", "sync_run", "change", "before", "after")


def new_key(row):
    """The key the checks give the merged finding: a device-plugin ConfigMap's config key."""
    evidence = row.evidence if isinstance(row.evidence, dict) else {}
    if row.subject_kind != "ConfigMap":
        return ""
    for side in ("after", "before"):
        part = evidence.get(side)
        if isinstance(part, dict) and isinstance(part.get("key"), str) and part["key"]:
            return part["key"]
    return ""


def event_of(row):
    return row.key[len(OLD_KEY) :] if row.key.startswith(OLD_KEY) else ""


def changes_of(row):
    """The changes a row lists: its own one (old shape), or its `changes` (new shape)."""
    evidence = row.evidence if isinstance(row.evidence, dict) else {}
    if isinstance(evidence.get("changes"), list):
        return [c for c in evidence["changes"] if isinstance(c, dict)]
    event = event_of(row)
    change = {"drift_event": int(event) if event.isdigit() else None}
    change.update({k: evidence.get(k) for k in CHANGE_FIELDS})
    return [change]


def merged_evidence(rows):
    """The evidence as the checks write it now, from the rows it describes."""
    changes, nodes, tenants, basis = {}, {}, set(), ""
    for row in rows:
        evidence = row.evidence if isinstance(row.evidence, dict) else {}
        for change in changes_of(row):
            changes.setdefault((change.get("drift_event"), change.get("detected_at")), change)
        nodes.update(dict.fromkeys(evidence.get("nodes_affected") or []))
        tenants.update(evidence.get("tenants_on_those_nodes") or [])
        basis = basis or evidence.get("nodes_basis") or ""
    listed = sorted(
        changes.values(),
        key=lambda c: (str(c.get("detected_at") or ""), c.get("drift_event") or 0),
        reverse=True,
    )
    latest = listed[0]
    evidence = {k: latest.get(k) for k in CHANGE_FIELDS}
    evidence.update(
        {
            "changes": listed[:MEMBERS_SHOWN],
            "change_count": len(listed),
            "nodes_affected": list(nodes),
            "tenants_on_those_nodes": sorted(tenants),
        }
    )
    if basis:
        evidence["nodes_basis"] = basis
    return evidence


def merged_status(survivor, rows):
    """The survivor's status and acceptance from its group (as posture.0019 decides it); the
    acceptances it keeps as EarlierAcceptance rows, and whether they are carried."""
    live = [r for r in rows if r.status in LIVE]
    # Copies: the survivor is one of them, and its own acceptance is cleared below when the
    # merged finding is open, while its EarlierAcceptance row must keep what it said.
    accepted = sorted(
        (copy.copy(r) for r in live if r.status == "accepted"), key=pod_merge._expiry_order
    )
    if not live:
        survivor.status = "resolved"
        survivor.resolved_at = max(r.resolved_at or r.last_seen for r in rows)
        return [], False
    survivor.resolved_at = None
    if accepted and len(accepted) == len(live):
        first = accepted[0]  # the earliest expiry bounds them all
        survivor.status = "accepted"
        survivor.accepted_until = first.accepted_until
        survivor.accepted_by_id = first.accepted_by_id
        if len(accepted) == 1:
            survivor.accepted_reason = first.accepted_reason
            return [], True
        reasons = "; ".join(f"drift event {event_of(r)}: {r.accepted_reason}" for r in accepted)
        text = f"Carried from {len(accepted)} findings of its changes, each accepted: {reasons}"
        survivor.accepted_reason = text[:REASON_MAX]
        return accepted, True
    survivor.status = "open"
    if accepted:  # kept as EarlierAcceptance rows: they no longer apply
        survivor.accepted_until, survivor.accepted_by_id, survivor.accepted_reason = None, None, ""
    return accepted, False


def merge_group(rows, key):
    """Merge one group (rows sorted by id) into its first row; what the write step needs."""
    survivor = rows[0]
    keys = {r.pk: r.key for r in rows}  # the drift events, before the survivor's key changes
    live = [r for r in rows if r.status in LIVE]
    current = live or rows  # what the merged finding describes now
    latest = max(current, key=lambda r: (r.last_seen, r.pk))
    survivor.evidence, survivor.evidence_digest = merged_evidence(current), ""
    count = survivor.evidence["change_count"]
    survivor.title = latest.title if count == 1 else f"{latest.title} ({count} changes)"[:300]
    survivor.severity = min((r.severity for r in current), key=pod_merge._severity_rank)
    survivor.exposure = max(max(r.exposure for r in current), 1)
    survivor.first_seen = min(r.first_seen for r in rows)
    survivor.last_seen = max(r.last_seen for r in rows)
    tickets = [r.ticket_url for r in rows if r.ticket_url]
    survivor.ticket_url = survivor.ticket_url or (tickets[0] if tickets else "")
    owners = [r.owner_id for r in rows if r.owner_id]
    survivor.owner_id = survivor.owner_id or (owners[0] if owners else None)
    acceptances, carried = merged_status(survivor, rows) if len(rows) > 1 else ([], False)
    survivor.key = key
    survivor.fingerprint = pod_merge.fingerprint(
        survivor.check_id,
        survivor.cluster.name,
        survivor.subject_kind,
        survivor.subject_namespace,
        survivor.subject_name,
        key,
    )
    return {
        "survivor": survivor,
        "rows": rows,
        "keys": keys,
        "live": len(live),
        "acceptances": acceptances,
        "carried": carried,
    }


def groups_of(Finding):
    groups = defaultdict(list)
    rows = Finding.objects.filter(check_id__in=CHECKS).select_related("cluster").order_by("pk")
    for row in rows.iterator(2000):
        identity = (row.check_id, row.cluster_id, row.subject_kind, row.subject_namespace)
        key = row.key if not row.key.startswith(OLD_KEY) else new_key(row)
        groups[(*identity, row.subject_name, key)].append(row)
    # Only groups holding a per-event row: one already in the new shape is left as it is.
    return [(rows, key[-1]) for key, rows in groups.items() if any(event_of(r) for r in rows)]


def forward(apps, schema_editor):
    Finding = apps.get_model("posture", "Finding")
    merges = [merge_group(rows, key) for rows, key in groups_of(Finding)]
    if not merges:
        return
    now = timezone.now()
    moved = {r.pk: m["survivor"].pk for m in merges for r in m["rows"][1:]}
    tenants = pod_merge.tenants_of(apps, [r.pk for m in merges for r in m["rows"]])
    EarlierAcceptance = apps.get_model("posture", "EarlierAcceptance")
    for doomed, survivor in moved.items():
        EarlierAcceptance.objects.filter(finding_id=doomed).update(finding_id=survivor)
    doomed = list(moved)
    for start in range(0, len(doomed), BATCH):
        Finding.objects.filter(pk__in=doomed[start : start + BATCH]).delete()
    Finding.objects.bulk_update([m["survivor"] for m in merges], WRITTEN, batch_size=BATCH)
    FindingTenant = apps.get_model("posture", "FindingTenant")
    links = [
        FindingTenant(finding_id=m["survivor"].pk, tenant_id=t)
        for m in merges
        for t in sorted({t for r in m["rows"] for t in tenants.get(r.pk, ())})
    ]
    FindingTenant.objects.bulk_create(links, batch_size=BATCH, ignore_conflicts=True)
    EarlierAcceptance.objects.bulk_create(
        [row for m in merges for row in earlier_rows(EarlierAcceptance, m, now)], batch_size=BATCH
    )
    pod_merge.actions_renamed(apps, moved)
    slugs = dict(apps.get_model("tenants", "Tenant").objects.values_list("pk", "slug"))
    record(merges, tenants, slugs)


def earlier_rows(EarlierAcceptance, merge, now):
    """posture.acceptance_carry's rows for the acceptances of the merged changes."""
    survivor, accepted = merge["survivor"], merge["acceptances"]
    return [
        EarlierAcceptance(
            finding_id=survivor.pk,
            source=None,  # merged away (or the survivor itself, before its key changed)
            subject=f"{pod_merge.subject_of(old)} ({merge['keys'][old.pk]})"[:400],
            accepted_by_id=old.accepted_by_id,
            reason=old.accepted_reason,
            until=old.accepted_until,
            carried=merge["carried"],
            covers=len(accepted),
            of=merge["live"],
            recorded_at=now,
        )
        for old in accepted
    ]


def record(merges, tenants, slugs):
    """One `merge` event per group of several rows, and a `carry` or `lapse` event where
    acceptances were kept (live code: the audit chain must stay one chain)."""
    from audit.services import audit_record

    for merge in merges:
        survivor, rows = merge["survivor"], merge["rows"]
        if len(rows) < 2:
            continue
        repr_ = f"{survivor.check_id} {pod_merge.subject_of(survivor)}"[:200]
        target = {"object_type": "posture.finding", "object_id": survivor.pk, "object_repr": repr_}
        audit_record(
            actor=ACTOR,
            action="merge",
            before={
                "findings": [
                    {"finding": r.pk, "key": merge["keys"][r.pk], "status": r.status} for r in rows
                ]
            },
            after={
                "finding": survivor.pk,
                "merged": [r.pk for r in rows[1:]],
                "key": survivor.key,
                "tenants": sorted({slugs[t] for r in rows for t in tenants.get(r.pk, ())}),
                "status": survivor.status,
            },
            **target,
        )
        if merge["acceptances"]:
            audit_record(
                actor=ACTOR,
                action="carry" if merge["carried"] else "lapse",
                before=None,
                after=_acceptance_after(merge),
                **target,
            )


def _acceptance_after(merge):
    survivor, accepted = merge["survivor"], merge["acceptances"]
    until = survivor.accepted_until
    return {
        "check": survivor.check_id,
        "status": survivor.status,
        "accepted_until": until.isoformat() if until else None,
        "accepted_reason": survivor.accepted_reason,
        "from_findings": [old.pk for old in accepted],
        "earlier": [
            {
                "finding": old.pk,
                "key": merge["keys"][old.pk],
                "accepted_reason": old.accepted_reason,
                "accepted_until": old.accepted_until.isoformat() if old.accepted_until else None,
            }
            for old in accepted
        ],
        "covers": len(accepted),
        "of": merge["live"],
    }


class Migration(migrations.Migration):
    dependencies = [("posture", "0020_host_path_and_notebook_findings_one_per_workload")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
