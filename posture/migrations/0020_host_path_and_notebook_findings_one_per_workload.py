"""One finding per workload for POD-003 (host path volumes) and K8S-006 (exposed notebooks).

POD-003 made one finding per dangerous host path volume (the volume's name as the key) and
K8S-006 one per exposed notebook or dashboard container (the container's name as the key). A
finding's identity is (check, subject) (DESIGN §5), so they now make one finding per workload
listing its volumes in `volumes` (posture.rules.pod.host_paths) or its servers in
`containers` (posture.rules.k8s.notebooks). The stored rows that now share (check, cluster,
subject) are merged into one, exactly as posture.0019 merged the per-container pod findings
(its docstring says what is kept and how; its helpers are reused here): the lowest id
survives with key "", earliest first_seen, latest last_seen, every tenant, open if any live
row was open, accepted only if every live row was (until the earliest expiry), the
acceptances kept as EarlierAcceptance rows with a `carry` or `lapse` event, one `merge` event
per group, stored actions naming the survivor. The evidence lists each live volume's or
container's part; the next score rewrites evidence, title and exposure from the cluster.

Backward: a no-op. The merged rows are gone, and the checks of that version would report the
survivor's volumes or containers again as new findings.
"""

import importlib
from collections import defaultdict

from django.db import migrations
from django.utils import timezone

# posture.0019's helpers, frozen with it: fingerprint, subject_of, tenants_of, earlier_rows,
# actions_renamed, _acceptance_after, and what its evidence calls the workload's own facts.
earlier = importlib.import_module("posture.migrations.0019_pod_findings_one_per_workload")

ACTOR = "migration posture.0020_host_path_and_notebook_findings_one_per_workload"
# check -> (the evidence's list of parts, the field naming a part, what several parts do).
PARTS = {
    "POD-003": ("volumes", "volume"),
    "K8S-006": ("containers", "container"),
}
CONTEXT = earlier.NOT_CONTAINER  # the pod's, workload's and tenant's facts: not a part's


def parts_of(check_id, rows):
    """Each volume's or container's part of the evidence, by name, in the order found."""
    members, member = PARTS[check_id]
    parts = {}
    for row in sorted(rows, key=lambda r: r.pk):
        evidence = row.evidence if isinstance(row.evidence, dict) else {}
        if isinstance(evidence.get(members), list):  # already the new shape
            for entry in evidence[members]:
                parts.setdefault(entry.get(member), entry)
            continue
        part = {k: v for k, v in evidence.items() if k not in CONTEXT}
        name = part.get(member) or row.key
        parts.setdefault(name, {member: name, **part})
    return parts


def merged_evidence(check_id, rows, latest):
    """posture.0019's merged evidence, with this check's list of parts."""
    evidence = earlier.merged_evidence(rows, latest)  # the workload's facts and every pod
    del evidence["containers"]  # 0019 reads a container's part: read the check's own
    evidence[PARTS[check_id][0]] = list(parts_of(check_id, rows).values())
    return evidence


def merged_title(check_id, rows, latest, parts):
    """One part keeps its title (the checks write it so today); several are counted, until
    the next score writes the check's own title."""
    if len(parts) == 1:
        return latest.title
    subject = earlier.subject_of(rows[0])
    if check_id == "POD-003":
        named = [f"{p.get('host_path')} (volume {p.get('volume')})" for p in parts]
        return f"{subject} mounts {len(parts)} host paths: {_listed(named)}"[:300]
    names = _listed([str(p.get("container")) for p in parts])
    return f"{len(parts)} notebooks in {subject} ({names}) are reachable from outside"[:300]


def _listed(names):
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    return ", ".join(names[:5]) + more


def merged_status(survivor, rows, word):
    """posture.0019's merged status; a carried reason names each volume or container."""
    acceptances, carried = earlier.merged_status(survivor, rows)
    if len(acceptances) > 1 and carried:
        reasons = "; ".join(f"{word} {r.key}: {r.accepted_reason}" for r in acceptances)
        text = f"Carried from {len(acceptances)} findings of its {word}s, each accepted: {reasons}"
        survivor.accepted_reason = text[: earlier.REASON_MAX]
    return acceptances, carried


def merge_group(rows):
    """Merge one group (rows sorted by id) into its first row; what the write step needs."""
    survivor = rows[0]
    check_id = survivor.check_id
    members, member = PARTS[check_id]
    keys = {r.pk: r.key for r in rows}  # the parts, before the survivor's key is dropped
    live = [r for r in rows if r.status in earlier.LIVE]
    current = live or rows  # what the merged finding describes now
    latest = max(current, key=lambda r: (r.last_seen, r.pk))
    evidence = merged_evidence(check_id, current, latest)
    survivor.title = merged_title(check_id, rows, latest, evidence[members])
    survivor.evidence, survivor.evidence_digest = evidence, ""  # "": rewritten at next score
    survivor.severity = min((r.severity for r in current), key=earlier._severity_rank)
    survivor.exposure = max(max(r.exposure for r in current), 1)
    survivor.first_seen = min(r.first_seen for r in rows)
    survivor.last_seen = max(r.last_seen for r in rows)
    # Triage: its own, else the first merged row's.
    tickets = [r.ticket_url for r in rows if r.ticket_url]
    survivor.ticket_url = survivor.ticket_url or (tickets[0] if tickets else "")
    owners = [r.owner_id for r in rows if r.owner_id]
    survivor.owner_id = survivor.owner_id or (owners[0] if owners else None)
    merged = merged_status(survivor, rows, member) if len(rows) > 1 else ([], False)
    survivor.key = ""
    survivor.fingerprint = earlier.fingerprint(
        check_id,
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
        "acceptances": merged[0],
        "carried": merged[1],
        "names": [e.get(member) for e in evidence[members]],
        "member": member,
    }


def groups_of(Finding):
    groups = defaultdict(list)
    rows = Finding.objects.filter(check_id__in=PARTS).select_related("cluster").order_by("pk")
    for row in rows.iterator(2000):
        identity = (row.check_id, row.cluster_id, row.subject_kind)
        groups[(*identity, row.subject_namespace, row.subject_name)].append(row)
    # A group already one finding per workload (rerun, or written by the new checks) is left.
    return [rows for rows in groups.values() if any(r.key for r in rows)]


def forward(apps, schema_editor):
    """posture.0019's write step, over this migration's groups."""
    Finding = apps.get_model("posture", "Finding")
    merges = [merge_group(rows) for rows in groups_of(Finding)]
    if not merges:
        return
    now = timezone.now()
    moved = {r.pk: m["survivor"].pk for m in merges for r in m["rows"][1:]}
    tenants = earlier.tenants_of(apps, [r.pk for m in merges for r in m["rows"]])
    EarlierAcceptance = apps.get_model("posture", "EarlierAcceptance")
    for doomed, survivor in moved.items():
        EarlierAcceptance.objects.filter(finding_id=doomed).update(finding_id=survivor)
    doomed = list(moved)
    for start in range(0, len(doomed), earlier.BATCH):
        Finding.objects.filter(pk__in=doomed[start : start + earlier.BATCH]).delete()
    survivors = [m["survivor"] for m in merges]
    Finding.objects.bulk_update(survivors, earlier.WRITTEN, batch_size=earlier.BATCH)
    FindingTenant = apps.get_model("posture", "FindingTenant")
    links = [
        FindingTenant(finding_id=m["survivor"].pk, tenant_id=t)
        for m in merges
        for t in sorted({t for r in m["rows"] for t in tenants.get(r.pk, ())})
    ]
    FindingTenant.objects.bulk_create(links, batch_size=earlier.BATCH, ignore_conflicts=True)
    EarlierAcceptance.objects.bulk_create(
        [row for m in merges for row in earlier.earlier_rows(EarlierAcceptance, m, now)],
        batch_size=earlier.BATCH,
    )
    earlier.actions_renamed(apps, moved)
    slugs = dict(apps.get_model("tenants", "Tenant").objects.values_list("pk", "slug"))
    record(merges, tenants, slugs)


def record(merges, tenants, slugs):
    """One `merge` event per group of several rows, naming its volumes or containers, and a
    `carry` or `lapse` event where acceptances were kept (live code: one audit chain)."""
    from audit.services import audit_record

    for merge in merges:
        survivor, rows, member = merge["survivor"], merge["rows"], merge["member"]
        if len(rows) < 2:
            continue
        repr_ = f"{survivor.check_id} {earlier.subject_of(survivor)}"[:200]
        target = {"object_type": "posture.finding", "object_id": survivor.pk, "object_repr": repr_}
        audit_record(
            actor=ACTOR,
            action="merge",
            before={
                "findings": [
                    {"finding": r.pk, member: merge["keys"][r.pk], "status": r.status} for r in rows
                ]
            },
            after={
                "finding": survivor.pk,
                "merged": [r.pk for r in rows[1:]],
                f"{member}s": merge["names"],
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
                after=earlier._acceptance_after(merge),
                **target,
            )


class Migration(migrations.Migration):
    dependencies = [("posture", "0019_pod_findings_one_per_workload")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
