"""One finding per cause: today's per-tenant rows become one row per cause, without loss.

Rows are grouped by the new identity (check, cluster, subject, key; no tenant). A Pod subject
becomes its workload, resolved from the pod's stored inventory row (its owner and labels) by a
frozen copy of inventory/owners.py's label rules: a ReplicaSet named `<deployment>-<hash>`
whose pod carries `pod-template-hash: <hash>` is that Deployment; any other owner is kept as
it is (the Job, the StatefulSet, ...); a pod with no owner, or gone from the inventory, stays
the Pod. The next evaluation refines what the owner index knows better (a CronJob).

Each group keeps its lowest id with: the tenants of all its rows, first_seen = min,
last_seen = max, the evidence and title of the row seen last; status open if any row is open,
accepted only if every live row is accepted (then the earliest expiry, with its author and
reason), resolved if all are resolved (resolved_at = max). Every group of more than one row
is one "merge" event in the audit log: which ids went into which.

Backward (development only, lossy): each finding keeps the first of its tenants.
"""

import hashlib
from collections import defaultdict

from django.db import migrations

ACTOR = "migration posture.0005_finding_tenants_merge"
LIVE = ("open", "accepted")
BATCH = 500
WRITTEN = (
    "severity",
    "title",
    "evidence",
    "subject_kind",
    "subject_namespace",
    "subject_name",
    "status",
    "fingerprint",
    "first_seen",
    "last_seen",
    "resolved_at",
    "accepted_by",
    "accepted_reason",
    "accepted_until",
    "exposure",
)


def workload_of(namespace, name, data):
    """(kind, namespace, name) of the workload behind a stored pod: inventory/owners.py's
    label rules as of this migration (frozen here: live code may change)."""
    kind, owner = data.get("owner_kind"), data.get("owner_name")
    if not kind or not owner or kind == "Node":
        return "Pod", namespace, name
    suffix = f"-{(data.get('labels') or {}).get('pod-template-hash', '')}"
    if kind == "ReplicaSet" and suffix != "-" and owner.endswith(suffix) and owner != suffix:
        return "Deployment", namespace, owner.removesuffix(suffix)
    return kind, namespace, owner


def fingerprint(check_id, cluster, kind, namespace, name, key):
    """posture.services.finding_fingerprint as of this migration."""
    identity = "|".join((check_id, cluster, kind, namespace, name, key))
    return hashlib.sha256(identity.encode()).hexdigest()


def pod_data(apps, findings):
    """(cluster id, namespace, name) -> the stored pod's data, for the Pod subjects."""
    wanted = {
        (f.cluster_id, f.subject_namespace, f.subject_name)
        for f in findings
        if f.subject_kind == "Pod"
    }
    pods = apps.get_model("inventory", "Pod").objects
    found = {}
    for cluster_id in {c for c, _, _ in wanted}:
        namespaces = {ns for c, ns, _ in wanted if c == cluster_id}
        rows = pods.filter(cluster_id=cluster_id, namespace__in=namespaces)
        for namespace, name, data in rows.values_list("namespace", "name", "data"):
            if (cluster_id, namespace, name) in wanted:
                found[(cluster_id, namespace, name)] = data or {}
    return found


def subject_of(finding, pods):
    if finding.subject_kind != "Pod":
        return finding.subject_kind, finding.subject_namespace, finding.subject_name
    key = (finding.cluster_id, finding.subject_namespace, finding.subject_name)
    if key not in pods:
        return "Pod", finding.subject_namespace, finding.subject_name
    return workload_of(finding.subject_namespace, finding.subject_name, pods[key])


def merged_status(rows):
    """status, resolved_at and the acceptance of one group, by the rules in the docstring."""
    live = [r for r in rows if r.status in LIVE]
    if not live:
        return {
            "status": "resolved",
            "resolved_at": max(r.resolved_at or r.last_seen for r in rows),
        }
    if any(r.status == "open" for r in live):
        return {"status": "open", "resolved_at": None, "accepted_until": None}
    earliest = min(live, key=lambda r: (r.accepted_until is None, r.accepted_until, r.pk))
    return {
        "status": "accepted",
        "resolved_at": None,
        "accepted_until": earliest.accepted_until,
        "accepted_by_id": earliest.accepted_by_id,
        "accepted_reason": earliest.accepted_reason,
    }


def merge_group(survivor, rows, subject, cluster_name):
    """Set the survivor's fields from its group (rows sorted by id, survivor first)."""
    latest = max(rows, key=lambda r: (r.last_seen, r.pk))
    for field in ("severity", "title", "evidence"):
        setattr(survivor, field, getattr(latest, field))
    survivor.subject_kind, survivor.subject_namespace, survivor.subject_name = subject
    survivor.first_seen = min(r.first_seen for r in rows)
    survivor.last_seen = latest.last_seen
    for field, value in merged_status(rows).items():
        setattr(survivor, field, value)
    # The pods of a workload each had their own row: as many as it spanned.
    survivor.exposure = max(1, len({(r.subject_kind, r.subject_name) for r in rows}))
    survivor.fingerprint = fingerprint(survivor.check_id, cluster_name, *subject, survivor.key)


def record_merges(merges, slugs):
    """One audit event per merged group (live code: the chain must stay one chain)."""
    from audit.services import audit_record

    for survivor, merged_ids, tenant_ids in merges:
        audit_record(
            actor=ACTOR,
            action="merge",
            object_type="posture.finding",
            object_id=survivor.pk,
            object_repr=f"{survivor.check_id} {survivor.subject_kind} "
            f"{survivor.subject_namespace}/{survivor.subject_name}"[:200],
            before={"findings": [survivor.pk, *merged_ids]},
            after={
                "finding": survivor.pk,
                "merged": merged_ids,
                "tenants": sorted(slugs[t] for t in tenant_ids),
                "status": survivor.status,
            },
        )


def forward(apps, schema_editor):
    Finding = apps.get_model("posture", "Finding")
    FindingTenant = apps.get_model("posture", "FindingTenant")
    findings = list(Finding.objects.select_related("cluster").order_by("pk"))
    pods = pod_data(apps, findings)
    groups = defaultdict(list)
    for f in findings:
        subject = subject_of(f, pods)
        groups[(f.check_id, f.cluster_id, *subject, f.key)].append(f)
    survivors, doomed, links, merges = [], [], [], []
    for identity, rows in groups.items():
        survivor = rows[0]
        merge_group(survivor, rows, identity[2:5], survivor.cluster.name)
        tenant_ids = sorted({r.tenant_id for r in rows if r.tenant_id is not None})
        links += [FindingTenant(finding_id=survivor.pk, tenant_id=t) for t in tenant_ids]
        survivors.append(survivor)
        doomed += [r.pk for r in rows[1:]]
        if len(rows) > 1:
            merges.append((survivor, [r.pk for r in rows[1:]], tenant_ids))
    for start in range(0, len(doomed), BATCH):
        Finding.objects.filter(pk__in=doomed[start : start + BATCH]).delete()
    Finding.objects.bulk_update(survivors, WRITTEN, batch_size=BATCH)
    FindingTenant.objects.bulk_create(links, batch_size=BATCH)
    slugs = dict(apps.get_model("tenants", "Tenant").objects.values_list("pk", "slug"))
    record_merges(merges, slugs)


def backward(apps, schema_editor):
    FindingTenant = apps.get_model("posture", "FindingTenant")
    Finding = apps.get_model("posture", "Finding")
    first = {}
    for finding_id, tenant_id in FindingTenant.objects.order_by("tenant_id").values_list(
        "finding_id", "tenant_id"
    ):
        first.setdefault(finding_id, tenant_id)
    for finding_id, tenant_id in first.items():
        Finding.objects.filter(pk=finding_id).update(tenant_id=tenant_id)
    FindingTenant.objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("posture", "0004_finding_tenants"),
        ("inventory", "0011_cluster_object_owner_kind"),
        ("audit", "0002_append_only_trigger"),
    ]

    operations = [migrations.RunPython(forward, backward)]
