"""Migrations posture.0004-0006: today's per-tenant findings become one finding per cause,
without loss (tenants, first-seen, acceptances, resolution), and each merge is in the audit
log. Run with Django's migration executor: back to 0003, old-shape rows, forward."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from posture.finding_digests import finding_fingerprint
from posture.rules.registry import FindingDraft
from tests.migration_steps import migrate, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

# The tenants app goes back too, to before the Tenant columns added since (the old rows are
# created through the historical model, which lacks them).
BEFORE = [
    ("posture", "0003_finding_list_order"),
    ("tenants", "0008_seed_classes_require_image_digest"),
]
AFTER = [("posture", "0006_finding_tenant_drop")]
NOW = timezone.now()
HOUR = timedelta(hours=1)


@pytest.fixture
def old_world():
    apps = migrate(BEFORE)
    yield apps
    migrate_to_latest()


def _old_rows(apps) -> dict[str, object]:
    """Old-shape findings (one per tenant) and the pods they name."""
    User = apps.get_model("auth", "User")
    Tenant = apps.get_model("tenants", "Tenant")
    TrustClass = apps.get_model("tenants", "TrustClass")
    Cluster = apps.get_model("inventory", "Cluster")
    Pod = apps.get_model("inventory", "Pod")
    internal, _ = TrustClass.objects.get_or_create(slug="internal", defaults={"name": "Internal"})
    alpha, beta = (Tenant.objects.create(slug=s, name=s, trust_class=internal) for s in "ab")
    ana, bob = User.objects.create(username="ana"), User.objects.create(username="bob")
    cluster = Cluster.objects.create(name="lab")
    hashed = {"pod-template-hash": "5d9c7b8f6", "app": "trainer"}
    owner = {"owner_kind": "ReplicaSet", "owner_name": "trainer-5d9c7b8f6", "labels": hashed}
    for name, data in (
        ("trainer-5d9c7b8f6-x1", owner),
        ("trainer-5d9c7b8f6-x2", owner),
        ("solo", {"labels": {}}),
    ):
        Pod.objects.create(
            cluster=cluster,
            namespace="team-a",
            name=name,
            phase="Running",
            data={"namespace": "team-a", "name": name, **data},
            changed_at=NOW,
        )
    return {"cluster": cluster, "a": alpha, "b": beta, "ana": ana, "bob": bob}


def _finding(apps, w, tenant, check, kind, name, **fields):
    Finding = apps.get_model("posture", "Finding")
    namespace = "team-a" if kind == "Pod" else ""
    base = {
        "severity": "high",
        "status": "open",
        "title": f"{check} {name}",
        "evidence": {},
        "first_seen": NOW - 10 * HOUR,
        "last_seen": NOW - HOUR,
        "key": "",
    }
    return Finding.objects.create(
        check_id=check,
        cluster=w["cluster"],
        tenant=w[tenant] if tenant else None,
        subject_kind=kind,
        subject_namespace=namespace,
        subject_name=name,
        fingerprint=f"old-{check}-{name}-{tenant}",
        **{**base, **fields},
    ).pk


def test_per_tenant_findings_merge_by_cause_without_loss(old_world):
    apps, w = old_world, _old_rows(old_world)
    ids = {
        "accepted_a": _finding(
            apps,
            w,
            "a",
            "STACK-004",
            "Node",
            "gpu-1",
            status="accepted",
            accepted_until=NOW + 240 * HOUR,
            accepted_by=w["ana"],
            accepted_reason="alpha's reason",
            first_seen=NOW - 480 * HOUR,
        ),
        "accepted_b": _finding(
            apps,
            w,
            "b",
            "STACK-004",
            "Node",
            "gpu-1",
            status="accepted",
            accepted_until=NOW + 120 * HOUR,
            accepted_by=w["bob"],
            accepted_reason="beta's reason",
            last_seen=NOW,
        ),
        "open_a": _finding(apps, w, "a", "K8S-002", "Node", "gpu-1"),
        "resolved_b": _finding(
            apps, w, "b", "K8S-002", "Node", "gpu-1", status="resolved", resolved_at=NOW - 2 * HOUR
        ),
        "gone_a": _finding(
            apps,
            w,
            "a",
            "STACK-001",
            "Node",
            "gpu-2",
            status="resolved",
            resolved_at=NOW - 5 * HOUR,
        ),
        "gone_b": _finding(
            apps,
            w,
            "b",
            "STACK-001",
            "Node",
            "gpu-2",
            status="resolved",
            resolved_at=NOW - 3 * HOUR,
        ),
        "replica_1": _finding(apps, w, "a", "POD-001", "Pod", "trainer-5d9c7b8f6-x1", key="main"),
        "replica_2": _finding(
            apps,
            w,
            "a",
            "POD-001",
            "Pod",
            "trainer-5d9c7b8f6-x2",
            key="main",
            first_seen=NOW - 50 * HOUR,
        ),
        "bare_pod": _finding(apps, w, "a", "POD-002", "Pod", "solo"),
        "pod_gone": _finding(apps, w, "a", "POD-002", "Pod", "vanished"),
        "no_tenant": _finding(apps, w, None, "PROV-001", "Provider", "nimbus"),
    }
    # The models as of AFTER: later migrations add columns today's model reads.
    Finding = migrate(AFTER).get_model("posture", "Finding")  # noqa: N806

    def tenants(pk: int) -> list[str]:
        return sorted(Finding.objects.get(pk=pk).tenants.values_list("slug", flat=True))

    assert Finding.objects.count() == 7
    # Accepted by both: stays accepted, with the earliest expiry, its author and reason.
    stack = Finding.objects.get(pk=ids["accepted_a"])  # the lowest id survives
    assert (stack.status, stack.accepted_reason) == ("accepted", "beta's reason")
    assert stack.accepted_until == NOW + 120 * HOUR and stack.accepted_by.username == "bob"
    assert (stack.first_seen, stack.last_seen) == (NOW - 480 * HOUR, NOW)
    assert tenants(stack.pk) == ["a", "b"]
    # Open anywhere: open. Resolved everywhere: resolved at the latest.
    assert Finding.objects.get(pk=ids["open_a"]).status == "open"
    gone = Finding.objects.get(pk=ids["gone_a"])
    assert (gone.status, gone.resolved_at) == ("resolved", NOW - 3 * HOUR)
    # Two replicas' rows: one Deployment finding spanning both pods.
    deployment = Finding.objects.get(pk=ids["replica_1"])
    assert (deployment.subject_kind, deployment.subject_name) == ("Deployment", "trainer")
    assert (deployment.exposure, deployment.first_seen) == (2, NOW - 50 * HOUR)
    assert tenants(deployment.pk) == ["a"]
    # What cannot be resolved stays the Pod; no tenant, no link.
    assert Finding.objects.get(pk=ids["bare_pod"]).subject_kind == "Pod"
    assert Finding.objects.get(pk=ids["pod_gone"]).subject_name == "vanished"
    assert tenants(ids["no_tenant"]) == []
    # The fingerprint is the new identity's, as services compute it (no tenant in it).
    same = FindingDraft("POD-001", ("a",), "Deployment", "team-a", "trainer", {}, key="main")
    assert deployment.fingerprint == finding_fingerprint("lab", same)
    # One audit event per merged group: which ids went into which.
    merges = {e.object_id: e for e in AuditEvent.objects.filter(action="merge")}
    assert set(merges) == {str(ids[k]) for k in ("accepted_a", "open_a", "gone_a", "replica_1")}
    stack_merge = merges[str(ids["accepted_a"])]
    assert stack_merge.after["merged"] == [ids["accepted_b"]]
    assert stack_merge.after["tenants"] == ["a", "b"]
    assert stack_merge.actor_name == "migration posture.0005_finding_tenants_merge"
