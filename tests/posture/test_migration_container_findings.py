"""Migration posture.0019: the per-container findings of the pod checks (POD-001, POD-004,
POD-006, POD-007, POD-008, POD-011) merge into one finding per workload, without loss: first
and last seen, tenants, triage, and every acceptance (carried where all of them held, else kept
as no longer applying), with the audit events saying so. Run with Django's migration executor:
back to 0018, old-shape rows, forward."""

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

# The tenants app as it is today (the historical Tenant must know its columns).
BEFORE = [
    ("posture", "0018_finding_status_severity_with_expiry"),
    ("tenants", "0010_tenant_slug_not_reserved"),
]
AFTER = [("posture", "0019_pod_findings_one_per_workload")]
NOW = timezone.now()
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
PRIVILEGED = "spec.containers[{}].securityContext.privileged"


@pytest.fixture
def old_world():
    apps = migrate(BEFORE)
    yield apps
    migrate_to_latest()


class World:
    """Old-shape rows: one finding per container, its name in the key."""

    def __init__(self, apps):
        self.apps = apps
        User = apps.get_model("auth", "User")  # noqa: N806
        Tenant = apps.get_model("tenants", "Tenant")  # noqa: N806
        TrustClass = apps.get_model("tenants", "TrustClass")  # noqa: N806
        internal, _ = TrustClass.objects.get_or_create(slug="internal", defaults={"name": "I"})
        self.tenants = {
            s: Tenant.objects.create(slug=s, name=s, trust_class=internal) for s in "ab"
        }
        self.ana = User.objects.create(username="ana")
        self.bob = User.objects.create(username="bob")
        self.cluster = apps.get_model("inventory", "Cluster").objects.create(name="lab")

    def finding(self, check, name, key, *, kind="Deployment", tenants="a", **fields):
        Finding = self.apps.get_model("posture", "Finding")  # noqa: N806
        evidence = {
            "workload": f"{kind} team-a/{name}",
            "resolved_by": "pod-template-hash label",
            "tenant": tenants[0],
            "trust_class": "internal",
            "container": key,
            "image": "registry.example.com/t:1",
            "init_container": False,
            "field": PRIVILEGED.format(0),
            "value": True,
            "pods": [{"pod": f"team-a/{name}-x1", "node": "gpu-1", "phase": "Running"}],
            "replicas": 1,
        }
        base = {
            "severity": "critical",
            "status": "open",
            "title": f"Container {key} of {kind} team-a/{name} is privileged",
            "evidence": evidence,
            "evidence_digest": "old",
            "first_seen": NOW - 10 * HOUR,
            "last_seen": NOW - HOUR,
        }
        row = Finding.objects.create(
            check_id=check,
            cluster=self.cluster,
            subject_kind=kind,
            subject_namespace="team-a",
            subject_name=name,
            key=key,
            fingerprint=f"old-{check}-{name}-{key}",
            **{**base, **fields},
        )
        for slug in tenants:
            row.tenants.add(self.tenants[slug])
        return row.pk


def _accepted(world: World, who, until, reason: str) -> dict:
    return {
        "status": "accepted",
        "accepted_by": who,
        "accepted_until": until,
        "accepted_reason": reason,
    }


def test_a_workloads_container_findings_merge_into_one_without_loss(old_world):
    w = World(old_world)
    app = w.finding("POD-001", "trainer", "app", first_seen=NOW - 40 * HOUR, ticket_url="")
    sidecar = w.finding(
        "POD-001",
        "trainer",
        "sidecar",
        tenants="b",
        last_seen=NOW,
        ticket_url="https://tickets.example/SEC-1",
        **_accepted(w, w.ana, NOW + 10 * DAY, "the sidecar is the vendor's"),
    )
    Action = old_world.get_model("posture", "Action")  # noqa: N806
    action = Action.objects.create(
        key="k1",
        cluster=w.cluster,
        title="Remove privileged from Deployment team-a/trainer",
        severity="critical",
        finding_ids=[app, sidecar],
        finding_count=2,
        computed_at=NOW,
    )

    apps = migrate(AFTER)
    Finding = apps.get_model("posture", "Finding")  # noqa: N806
    (merged,) = Finding.objects.filter(check_id="POD-001")
    assert merged.pk == app  # the lowest id survives
    assert merged.key == ""
    same = FindingDraft("POD-001", ("a",), "Deployment", "team-a", "trainer", {})
    assert merged.fingerprint == finding_fingerprint("lab", same)  # the next score matches it
    assert (merged.first_seen, merged.last_seen) == (NOW - 40 * HOUR, NOW)
    assert sorted(merged.tenants.values_list("slug", flat=True)) == ["a", "b"]
    assert merged.ticket_url == "https://tickets.example/SEC-1"
    # Open: the acceptance of the sidecar's finding does not cover the app container.
    assert (merged.status, merged.accepted_until, merged.accepted_reason) == ("open", None, "")
    (lapsed,) = apps.get_model("posture", "EarlierAcceptance").objects.filter(finding=merged)
    assert lapsed.subject == "Deployment team-a/trainer (sidecar)"
    assert (lapsed.reason, lapsed.until, lapsed.carried) == (
        "the sidecar is the vendor's",
        NOW + 10 * DAY,
        False,
    )
    assert (lapsed.accepted_by.username, lapsed.covers, lapsed.of) == ("ana", 1, 2)
    # The evidence lists each container, as the checks write it now.
    assert [c["container"] for c in merged.evidence["containers"]] == ["app", "sidecar"]
    assert merged.evidence["containers"][0]["field"] == PRIVILEGED.format(0)
    assert "field" not in merged.evidence and merged.evidence["workload"].startswith("Deploy")
    assert merged.evidence_digest == ""  # rewritten by the next score
    assert merged.title == "Containers app, sidecar of Deployment team-a/trainer are privileged"
    assert Action.objects.get(pk=action.pk).finding_ids == [app]
    # The audit log says what went where, and that the acceptance no longer applies.
    (merge,) = AuditEvent.objects.filter(action="merge", object_id=str(app))
    assert merge.after["merged"] == [sidecar] and merge.after["tenants"] == ["a", "b"]
    assert merge.actor_name == "migration posture.0019_pod_findings_one_per_workload"
    (lapse,) = AuditEvent.objects.filter(action="lapse", object_id=str(app))
    assert (lapse.after["covers"], lapse.after["of"]) == (1, 2)
    assert audit_chain_verify().intact


def test_accepted_on_every_container_stays_accepted_until_the_earliest_expiry(old_world):
    w = World(old_world)
    ids = [
        w.finding("POD-007", "vision-ray", name, kind="RayCluster", **_accepted(w, who, until, why))
        for name, who, until, why in (
            ("ray-head", w.ana, NOW + 30 * DAY, "head: mirrored soon"),
            ("wait-gcs-ready", w.bob, NOW + 7 * DAY, "KubeRay injects it"),
            ("ray-worker", w.ana, NOW + 20 * DAY, "worker: mirrored soon"),
        )
    ]
    apps = migrate(AFTER)
    (merged,) = apps.get_model("posture", "Finding").objects.filter(check_id="POD-007")
    assert (merged.pk, merged.status) == (ids[0], "accepted")
    assert (merged.accepted_until, merged.accepted_by.username) == (NOW + 7 * DAY, "bob")
    for reason in ("head: mirrored soon", "KubeRay injects it", "worker: mirrored soon"):
        assert reason in merged.accepted_reason
    earlier = apps.get_model("posture", "EarlierAcceptance").objects.filter(finding=merged)
    assert sorted((e.subject.split("(")[1], e.carried, e.covers, e.of) for e in earlier) == [
        ("ray-head)", True, 3, 3),
        ("ray-worker)", True, 3, 3),
        ("wait-gcs-ready)", True, 3, 3),
    ]
    assert AuditEvent.objects.filter(action="carry", object_id=str(ids[0])).count() == 1


def test_resolved_rows_count_only_when_nothing_is_live(old_world):
    w = World(old_world)
    # An accepted container and a resolved one: the acceptance still covers all that fires.
    gone = w.finding("POD-008", "etl", "old", status="resolved", resolved_at=NOW - 5 * HOUR)
    kept = w.finding("POD-008", "etl", "main", **_accepted(w, w.ana, NOW + DAY, "rotating"))
    # Both resolved: resolved at the latest.
    first = w.finding("POD-006", "job", "a", status="resolved", resolved_at=NOW - 9 * HOUR)
    w.finding("POD-006", "job", "b", status="resolved", resolved_at=NOW - 2 * HOUR)
    apps = migrate(AFTER)
    Finding = apps.get_model("posture", "Finding")  # noqa: N806
    etl = Finding.objects.get(check_id="POD-008")
    assert (etl.pk, etl.status, etl.accepted_reason) == (gone, "accepted", "rotating")
    assert [c["container"] for c in etl.evidence["containers"]] == ["main"]  # what fires now
    assert not apps.get_model("posture", "EarlierAcceptance").objects.exists()
    assert not Finding.objects.filter(pk=kept).exists()
    job = Finding.objects.get(check_id="POD-006")
    assert (job.pk, job.status, job.resolved_at) == (first, "resolved", NOW - 2 * HOUR)


def test_one_containers_finding_keeps_its_row_and_other_keys_are_untouched(old_world):
    w = World(old_world)
    single = w.finding(
        "POD-004", "tuner", "main", severity="high", **_accepted(w, w.ana, NOW + DAY, "ok")
    )
    volume = w.finding("POD-003", "tuner", "dev")  # a host path volume: its own cause
    pair = w.finding("SHARE-001", "pool-a", "SHARE-001:a:b", kind="NodePool")
    apps = migrate(AFTER)
    Finding = apps.get_model("posture", "Finding")  # noqa: N806
    row = Finding.objects.get(pk=single)
    assert (row.key, row.status, row.accepted_reason, row.severity) == (
        "",
        "accepted",
        "ok",
        "high",
    )
    assert [c["container"] for c in row.evidence["containers"]] == ["main"]
    assert row.title == "Container main of Deployment team-a/tuner is privileged"
    assert not AuditEvent.objects.filter(object_id=str(single)).exists()
    assert Finding.objects.get(pk=volume).key == "dev"
    assert Finding.objects.get(pk=pair).fingerprint == "old-SHARE-001-pool-a-SHARE-001:a:b"


def test_the_surviving_rows_own_acceptance_is_kept_when_the_merged_finding_opens(old_world):
    # The lowest id survives; its acceptance no longer applies once an open container joins,
    # but what it said (who, why, until when) stays on the record.
    w = World(old_world)
    app = w.finding(
        "POD-001", "trainer", "app", **_accepted(w, w.bob, NOW + 5 * DAY, "app runs as root")
    )
    w.finding("POD-001", "trainer", "sidecar")

    apps = migrate(AFTER)
    merged = apps.get_model("posture", "Finding").objects.get(check_id="POD-001")
    assert (merged.pk, merged.status, merged.accepted_reason) == (app, "open", "")
    (lapsed,) = apps.get_model("posture", "EarlierAcceptance").objects.filter(finding=merged)
    assert (lapsed.reason, lapsed.until, lapsed.accepted_by.username) == (
        "app runs as root",
        NOW + 5 * DAY,
        "bob",
    )
