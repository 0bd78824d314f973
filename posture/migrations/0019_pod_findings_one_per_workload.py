"""One finding per workload for the pod checks that judged each container.

POD-001, POD-004, POD-006, POD-007, POD-008 and POD-011 made one finding per container, with the
container's name as the key. A finding's identity is (check, subject) (DESIGN §5), so they now
make one finding per workload that lists its containers
(posture.rules.pod.container_findings). The stored findings that now share (check, cluster,
subject) are merged into one row, and nothing is lost:

- the lowest id survives. Its key becomes "" and its fingerprint is recomputed, so the next
  score matches it: same id, no duplicate opened, no "resolved" for the old rows;
- first_seen is the earliest and last_seen the latest. The finding keeps the tenants of every
  merged row, and its own ticket and owner, else the first merged row's;
- status comes from the live rows (open or accepted). It is open if any live row is open: an
  acceptance on one container's finding does not cover another container. It is accepted only
  if every live row is accepted, until the earliest expiry, by that acceptance's author, with
  every reason kept by container. It is resolved if every row is resolved (resolved_at is the
  latest);
- the acceptances are kept as EarlierAcceptance rows (see posture.acceptance_carry) wherever
  two or more made the merged acceptance (carried) or wherever the merged finding is open (no
  longer applying: its page lists them and fills the accept form from them). A `carry` or
  `lapse` audit event goes with them;
- the evidence takes the shape the checks write now. `containers` lists each live container's
  part, and the pods are those of every row; severity is the worst and exposure the most pods
  any row spanned. The title names the containers. The next score rewrites evidence, title and
  exposure from the cluster;
- the EarlierAcceptance rows of merged rows move to the survivor, and stored actions name the
  survivor in place of the merged ids.
Each merge is one `merge` event in the audit log: which ids went into which, and their statuses.
A workload that had one container's finding only keeps its row; just its key, fingerprint and
evidence change.

Backward: a no-op. The merged rows are gone, and the checks of that version would report the
survivor's containers again as new findings.
"""

import copy
import hashlib
from collections import defaultdict

from django.db import migrations
from django.utils import timezone

ACTOR = "migration posture.0019_pod_findings_one_per_workload"
CHECKS = ("POD-001", "POD-004", "POD-006", "POD-007", "POD-008", "POD-011")
LIVE = ("open", "accepted")
SEVERITIES = ("critical", "high", "medium", "low")
BATCH = 500
REASON_MAX = 2000  # Finding.accepted_reason's bound
MEMBERS_SHOWN = 20  # posture.rules.registry's cap on a workload's listed pods
# What a pod check's evidence says of the pod, its workload or its tenant's class, as opposed to
# one container (frozen here: live code may change).
NOT_CONTAINER = {
    "workload",
    "resolved_by",
    "tenant",
    "trust_class",
    "why_unclassified",
    "debug_container_in",
    "from_template",
    "suspended",
    "pods",
    "replicas",
    "user_namespace",  # POD-004
    "approved_registries",  # POD-007
    "require_image_digest",  # POD-007
}
# What several containers of a check do, until the next score writes the check's own title.
DOING = {
    "POD-001": "are privileged",
    "POD-004": "add dangerous capabilities",
    "POD-006": "have a GPU request that differs from its limit",
    "POD-007": "run images not from an approved registry or not pinned by digest",
    "POD-008": "have literal credentials in env",
    "POD-011": "set NVIDIA_VISIBLE_DEVICES",
}
WRITTEN = (
    "key",
    "fingerprint",
    "severity",
    "title",
    "evidence",
    "evidence_digest",
    "exposure",
    "status",
    "first_seen",
    "last_seen",
    "resolved_at",
    "accepted_by",
    "accepted_reason",
    "accepted_until",
    "ticket_url",
    "owner",
)


def fingerprint(check_id, cluster, kind, namespace, name, key):
    """posture.finding_store.finding_fingerprint as of this migration (frozen here)."""
    identity = "|".join((check_id, cluster, kind, namespace, name, key))
    return hashlib.sha256(identity.encode()).hexdigest()


def subject_of(row):
    where = f"{row.subject_namespace}/" if row.subject_namespace else ""
    return f"{row.subject_kind} {where}{row.subject_name}"


def container_parts(rows):
    """Each container's part of the evidence, by name, in the order the rows were found."""
    parts = {}
    for row in sorted(rows, key=lambda r: r.pk):
        evidence = row.evidence if isinstance(row.evidence, dict) else {}
        if isinstance(evidence.get("containers"), list):  # already the new shape
            for entry in evidence["containers"]:
                parts.setdefault(entry.get("container"), entry)
            continue
        part = {k: v for k, v in evidence.items() if k not in NOT_CONTAINER}
        name = part.get("container") or row.key
        parts.setdefault(name, {"container": name, **part})
    return parts


def merged_evidence(rows, latest):
    """The evidence as the checks write it now: the workload's facts from the latest row,
    each container's part, and the pods of every row."""
    base = latest.evidence if isinstance(latest.evidence, dict) else {}
    evidence = {k: v for k, v in base.items() if k in NOT_CONTAINER}
    evidence["containers"] = list(container_parts(rows).values())
    if "pods" in evidence and not evidence.get("from_template"):
        pods = {}
        for row in rows:
            for entry in (row.evidence or {}).get("pods") or []:
                if isinstance(entry, dict):
                    pods.setdefault(entry.get("pod"), entry)
        evidence["pods"] = list(pods.values())[:MEMBERS_SHOWN]
        counts = [(r.evidence or {}).get("replicas") for r in rows]
        evidence["replicas"] = max((c for c in counts if isinstance(c, int)), default=len(pods))
    return evidence


def merged_title(check_id, rows, latest, names):
    if len(names) == 1:
        return latest.title
    shown = ", ".join(str(n) for n in names[:5])
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    return f"Containers {shown}{more} of {subject_of(rows[0])} {DOING[check_id]}"[:300]


def _expiry_order(row):
    return (row.accepted_until is None, row.accepted_until, row.pk)


def merged_status(survivor, rows):
    """Set the survivor's status and acceptance from its group; the acceptances it keeps as
    EarlierAcceptance rows, and whether they are carried (they make its acceptance)."""
    live = [r for r in rows if r.status in LIVE]
    accepted = sorted((r for r in live if r.status == "accepted"), key=_expiry_order)
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
        reasons = "; ".join(f"container {r.key}: {r.accepted_reason}" for r in accepted)
        text = f"Carried from {len(accepted)} findings of its containers, each accepted: {reasons}"
        survivor.accepted_reason = text[:REASON_MAX]
        return accepted, True
    survivor.status = "open"
    if accepted:  # kept as EarlierAcceptance rows: they no longer apply
        # The survivor's own acceptance is recorded from a copy: its fields are cleared here.
        accepted = [copy.copy(r) if r is survivor else r for r in accepted]
        survivor.accepted_until, survivor.accepted_by_id, survivor.accepted_reason = None, None, ""
    return accepted, False


def merge_group(rows):
    """Merge one group (rows sorted by id) into its first row; what the write step needs."""
    survivor = rows[0]
    keys = {r.pk: r.key for r in rows}  # the containers, before the survivor's key is dropped
    live = [r for r in rows if r.status in LIVE]
    current = live or rows  # what the merged finding describes now
    latest = max(current, key=lambda r: (r.last_seen, r.pk))
    evidence = merged_evidence(current, latest)
    names = [e.get("container") for e in evidence["containers"]]
    survivor.title = merged_title(survivor.check_id, rows, latest, names)
    survivor.evidence, survivor.evidence_digest = evidence, ""  # "": rewritten at next score
    survivor.severity = min((r.severity for r in current), key=_severity_rank)
    survivor.exposure = max(max(r.exposure for r in current), 1)
    survivor.first_seen = min(r.first_seen for r in rows)
    survivor.last_seen = max(r.last_seen for r in rows)
    # Triage: its own, else the first merged row's.
    tickets = [r.ticket_url for r in rows if r.ticket_url]
    survivor.ticket_url = survivor.ticket_url or (tickets[0] if tickets else "")
    owners = [r.owner_id for r in rows if r.owner_id]
    survivor.owner_id = survivor.owner_id or (owners[0] if owners else None)
    acceptances, carried = merged_status(survivor, rows) if len(rows) > 1 else ([], False)
    survivor.key = ""
    survivor.fingerprint = fingerprint(
        survivor.check_id,
        survivor.cluster.name,
        survivor.subject_kind,
        survivor.subject_namespace,
        survivor.subject_name,
        "",
    )
    return {
        "survivor": survivor,
        "rows": rows,
        "keys": keys,
        "live": len(live),
        "acceptances": acceptances,
        "carried": carried,
        "names": names,
    }


def _severity_rank(severity):
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


def groups_of(Finding):
    groups = defaultdict(list)
    rows = Finding.objects.filter(check_id__in=CHECKS).select_related("cluster").order_by("pk")
    for row in rows.iterator(2000):
        identity = (row.check_id, row.cluster_id, row.subject_kind)
        groups[(*identity, row.subject_namespace, row.subject_name)].append(row)
    # A group already one finding per workload (rerun, or written by the new checks) is left.
    return [rows for rows in groups.values() if any(r.key for r in rows)]


def forward(apps, schema_editor):
    Finding = apps.get_model("posture", "Finding")
    merges = [merge_group(rows) for rows in groups_of(Finding)]
    if not merges:
        return
    now = timezone.now()
    moved = {r.pk: m["survivor"].pk for m in merges for r in m["rows"][1:]}
    tenants = tenants_of(apps, [r.pk for m in merges for r in m["rows"]])
    EarlierAcceptance = apps.get_model("posture", "EarlierAcceptance")
    for doomed, survivor in moved.items():
        EarlierAcceptance.objects.filter(finding_id=doomed).update(finding_id=survivor)
    doomed = list(moved)
    for start in range(0, len(doomed), BATCH):
        Finding.objects.filter(pk__in=doomed[start : start + BATCH]).delete()
    survivors = [m["survivor"] for m in merges]
    Finding.objects.bulk_update(survivors, WRITTEN, batch_size=BATCH)
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
    actions_renamed(apps, moved)
    slugs = dict(apps.get_model("tenants", "Tenant").objects.values_list("pk", "slug"))
    record(merges, tenants, slugs)


def tenants_of(apps, ids):
    found = defaultdict(set)
    links = apps.get_model("posture", "FindingTenant").objects
    for start in range(0, len(ids), BATCH):
        batch = ids[start : start + BATCH]
        for finding_id, tenant_id in links.filter(finding_id__in=batch).values_list(
            "finding_id", "tenant_id"
        ):
            found[finding_id].add(tenant_id)
    return found


def earlier_rows(EarlierAcceptance, merge, now):
    """posture.acceptance_carry's rows for the acceptances of the merged containers."""
    survivor, accepted = merge["survivor"], merge["acceptances"]
    return [
        EarlierAcceptance(
            finding_id=survivor.pk,
            source=None,  # merged away (or the survivor itself, before its key was dropped)
            subject=f"{subject_of(old)} ({merge['keys'][old.pk]})"[:400],
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


def actions_renamed(apps, moved):
    """Stored actions name the surviving finding in place of the merged ones."""
    Action = apps.get_model("posture", "Action")
    changed = []
    for action in Action.objects.all().iterator(2000):
        ids = list(dict.fromkeys(moved.get(i, i) for i in action.finding_ids or []))
        if ids != list(action.finding_ids or []):
            action.finding_ids, action.finding_count = ids, len(ids)
            changed.append(action)
    Action.objects.bulk_update(changed, ["finding_ids", "finding_count"], batch_size=BATCH)


def record(merges, tenants, slugs):
    """One `merge` event per group of several rows, and a `carry` or `lapse` event where
    acceptances were kept (live code: the audit chain must stay one chain)."""
    from audit.services import audit_record

    for merge in merges:
        survivor, rows = merge["survivor"], merge["rows"]
        if len(rows) < 2:
            continue
        repr_ = f"{survivor.check_id} {subject_of(survivor)}"[:200]
        target = {"object_type": "posture.finding", "object_id": survivor.pk, "object_repr": repr_}
        audit_record(
            actor=ACTOR,
            action="merge",
            before={
                "findings": [
                    {"finding": r.pk, "container": merge["keys"][r.pk], "status": r.status}
                    for r in rows
                ]
            },
            after={
                "finding": survivor.pk,
                "merged": [r.pk for r in rows[1:]],
                "containers": merge["names"],
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
                "subject": f"{subject_of(old)} ({merge['keys'][old.pk]})",
                "accepted_reason": old.accepted_reason,
                "accepted_until": old.accepted_until.isoformat() if old.accepted_until else None,
            }
            for old in accepted
        ],
        "covers": len(accepted),
        "of": merge["live"],
    }


class Migration(migrations.Migration):
    dependencies = [
        ("posture", "0018_finding_status_severity_with_expiry"),
        ("audit", "0002_append_only_trigger"),
        ("tenants", "0010_tenant_slug_not_reserved"),
    ]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
