"""Migration posture.0021: the per-drift-event findings of DRIFT-001/002/003/006 merge into one
finding per changed object (per config key of a device-plugin ConfigMap), without loss: first
and last seen, tenants, every change in the evidence newest first, and every acceptance
(carried where all of them held, else kept as no longer applying), with the audit events
saying so. Run with Django's migration executor: back to 0019, old-shape rows, forward."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from audit.selectors import audit_chain_verify
from posture.finding_digests import finding_fingerprint
from posture.rules.registry import FindingDraft
from tests.migration_steps import migrate, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BEFORE = [
    ("posture", "0019_pod_findings_one_per_workload"),
    ("tenants", "0010_tenant_slug_not_reserved"),
]
AFTER = [("posture", "0021_drift_one_per_subject")]
NOW = timezone.now()
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


@pytest.fixture
def old_world():
    apps = migrate(BEFORE)
    yield apps
    migrate_to_latest()


class World:
    """Old-shape rows: one finding per drift event, its id in the key."""

    def __init__(self, apps):
        self.apps = apps
        Tenant = apps.get_model("tenants", "Tenant")  # noqa: N806
        TrustClass = apps.get_model("tenants", "TrustClass")  # noqa: N806
        internal, _ = TrustClass.objects.get_or_create(slug="internal", defaults={"name": "I"})
        self.tenants = {
            s: Tenant.objects.create(slug=s, name=s, trust_class=internal) for s in "ab"
        }
        self.ana = apps.get_model("auth", "User").objects.create(username="ana")
        self.cluster = apps.get_model("inventory", "Cluster").objects.create(name="lab")

    def finding(self, check, kind, name, event, before, after, *, tenants="a", ns="", **fields):
        Finding = self.apps.get_model("posture", "Finding")  # noqa: N806
        detected = fields.pop("detected", NOW - event * HOUR)
        evidence = {
            "detected_at": detected.isoformat(),
            "sync_run": event,
            "change": f"{kind} {name} changed ({event})",
            "before": before,
            "after": after,
            "nodes_affected": [f"gpu-{event}"],
            "tenants_on_those_nodes": list(tenants),
        }
        base = {
            "severity": "medium",
            "status": "open",
            "title": f"{kind} {name} changed ({event})",
            "evidence": evidence,
            "evidence_digest": "old",
            "first_seen": detected,
            "last_seen": NOW - HOUR,
        }
        row = Finding.objects.create(
            check_id=check,
            cluster=self.cluster,
            subject_kind=kind,
            subject_namespace=ns,
            subject_name=name,
            key=f"drift-event-{event}",
            fingerprint=f"old-{check}-{name}-{event}",
            **{**base, **fields},
        )
        for slug in tenants:
            row.tenants.add(self.tenants[slug])
        return row.pk


def test_a_flip_and_its_reversal_merge_into_one_finding_listing_both(old_world):
    w = World(old_world)
    flip = w.finding("DRIFT-001", "Node", "mig-1", 9, {"replicas": 8}, {"replicas": None})
    back = w.finding(
        "DRIFT-001", "Node", "mig-1", 3, {"replicas": None}, {"replicas": 8}, tenants="b"
    )
    other = w.finding("DRIFT-003", "Node", "mig-1", 5, {"labels": {}}, {"labels": {"a": "b"}})

    apps = migrate(AFTER)
    Finding = apps.get_model("posture", "Finding")  # noqa: N806
    (merged,) = Finding.objects.filter(check_id="DRIFT-001")
    assert merged.pk == min(flip, back)
    assert merged.key == ""
    draft = FindingDraft("DRIFT-001", ("a",), "Node", "", "mig-1", {})
    assert merged.fingerprint == finding_fingerprint("lab", draft)  # the next score matches it
    assert (merged.first_seen, merged.last_seen) == (NOW - 9 * HOUR, NOW - HOUR)
    assert sorted(merged.tenants.values_list("slug", flat=True)) == ["a", "b"]
    changes = merged.evidence["changes"]
    assert [c["drift_event"] for c in changes] == [3, 9]  # newest first
    assert merged.evidence["after"] == {"replicas": 8}  # the latest at the top
    assert merged.evidence["nodes_affected"] == ["gpu-9", "gpu-3"]
    assert merged.status == "open"
    # Another check on the same node is its own finding, its key dropped.
    assert Finding.objects.get(pk=other).key == ""
    (merge,) = AuditEvent.objects.filter(action="merge", object_id=str(merged.pk))
    assert merge.after["merged"] == [max(flip, back)]
    assert audit_chain_verify().intact


def test_config_keys_of_one_configmap_stay_apart(old_world):
    w = World(old_world)
    ns = "gpu-operator"
    a1 = w.finding("DRIFT-001", "ConfigMap", "tsc", 4, {"key": "a"}, {"key": "a"}, ns=ns)
    a2 = w.finding("DRIFT-001", "ConfigMap", "tsc", 2, {"key": "a"}, {"key": "a"}, ns=ns)
    b = w.finding("DRIFT-001", "ConfigMap", "tsc", 3, {"key": "b"}, {"key": "b"}, ns=ns)

    apps = migrate(AFTER)
    Finding = apps.get_model("posture", "Finding")  # noqa: N806
    rows = {f.key: f for f in Finding.objects.filter(check_id="DRIFT-001")}
    assert set(rows) == {"a", "b"}
    assert rows["a"].pk == a1 and rows["b"].pk == b
    assert not Finding.objects.filter(pk=a2).exists()
    draft = FindingDraft("DRIFT-001", (), "ConfigMap", ns, "tsc", {}, key="a")
    assert rows["a"].fingerprint == finding_fingerprint("lab", draft)


def test_acceptances_carry_only_where_every_live_change_was_accepted(old_world):
    w = World(old_world)
    accepted = {"status": "accepted", "accepted_by": w.ana, "accepted_reason": "planned"}
    ids = [
        w.finding(
            "DRIFT-002", "DaemonSet", "plugin", 6, {}, {}, accepted_until=NOW + 5 * DAY, **accepted
        ),
        w.finding(
            "DRIFT-002", "DaemonSet", "plugin", 2, {}, {}, accepted_until=NOW + 9 * DAY, **accepted
        ),
    ]
    partly = [
        w.finding(
            "DRIFT-003", "Node", "gpu-1", 6, {}, {}, accepted_until=NOW + 5 * DAY, **accepted
        ),
        w.finding("DRIFT-003", "Node", "gpu-1", 2, {}, {}),
    ]

    apps = migrate(AFTER)
    Finding = apps.get_model("posture", "Finding")  # noqa: N806
    EarlierAcceptance = apps.get_model("posture", "EarlierAcceptance")  # noqa: N806
    carried = Finding.objects.get(pk=ids[0])
    assert (carried.status, carried.accepted_until) == ("accepted", NOW + 5 * DAY)
    assert "drift event 6: planned" in carried.accepted_reason
    assert EarlierAcceptance.objects.filter(finding=carried, carried=True).count() == 2
    assert AuditEvent.objects.filter(action="carry", object_id=str(ids[0])).count() == 1
    lapsed = Finding.objects.get(pk=partly[0])
    assert (lapsed.status, lapsed.accepted_until, lapsed.accepted_reason) == ("open", None, "")
    (kept,) = EarlierAcceptance.objects.filter(finding=lapsed)
    assert (kept.carried, kept.reason) == (False, "planned")
    assert audit_chain_verify().intact


def test_resolved_changes_merge_into_a_resolved_finding(old_world):
    w = World(old_world)
    gone = {"status": "resolved", "resolved_at": NOW - 2 * HOUR}
    ids = [
        w.finding("DRIFT-006", "ClusterRoleBinding", "b", 8, {}, {}, **gone),
        w.finding("DRIFT-006", "ClusterRoleBinding", "b", 7, {}, {}, **gone),
    ]
    apps = migrate(AFTER)
    (row,) = apps.get_model("posture", "Finding").objects.filter(check_id="DRIFT-006")
    assert (row.pk, row.status, row.resolved_at) == (ids[0], "resolved", NOW - 2 * HOUR)
    assert row.evidence["change_count"] == 2
