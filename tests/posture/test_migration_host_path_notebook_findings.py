"""Migration posture.0020: POD-003's per-volume and K8S-006's per-container findings merge into
one finding per workload, as posture.0019 merged the pod checks' (first and last seen, tenants,
triage, acceptances carried or kept as no longer applying, the audit events), the evidence
listing the volumes or containers. Run with Django's migration executor: back to 0019, old-shape
rows, forward."""

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
AFTER = [("posture", "0020_host_path_and_notebook_findings_one_per_workload")]
ACTOR = "migration posture.0020_host_path_and_notebook_findings_one_per_workload"
NOW = timezone.now()
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
CONTEXT = {
    "workload": "Deployment team-a/lab",
    "resolved_by": "pod-template-hash label",
    "tenant": "a",
    "trust_class": "internal",
    "pods": [{"pod": "team-a/lab-x1", "node": "gpu-1", "phase": "Running"}],
    "replicas": 1,
}


@pytest.fixture
def old_world():
    apps = migrate(BEFORE)
    yield apps
    migrate_to_latest()


def volume(name, path, **more):
    """POD-003's evidence before 0020: one volume."""
    return {
        "volume": name,
        "field": "spec.volumes[0].hostPath.path",
        "host_path": path,
        "normalised_path": path,
        "reason": f"{path} is the node's",
        "writable": False,
        "mounted_by": [{"container": "app", "mount_path": path, "read_only": True}],
        **more,
    }


def notebook(name):
    """K8S-006's evidence before 0020: one server's container."""
    return {
        "container": name,
        "image": "quay.io/jupyter/base-notebook:2024-01-01",
        "container_ports": [8888],
        "authentication": "off",
        "reasons": ["--ServerApp.token=''"],
        "services": [{"name": "lab", "type": "NodePort", "ports": [8888]}],
        "ingresses": [],
    }


class World:
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

    def finding(self, check, key, part, *, tenants="a", title="old", **fields):
        row = self.apps.get_model("posture", "Finding").objects.create(
            check_id=check,
            cluster=self.cluster,
            subject_kind="Deployment",
            subject_namespace="team-a",
            subject_name="lab",
            key=key,
            fingerprint=f"old-{check}-{key}",
            severity="critical" if check == "K8S-006" else "high",
            status=fields.pop("status", "open"),
            title=title,
            evidence={**CONTEXT, **part},
            evidence_digest="old",
            first_seen=fields.pop("first_seen", NOW - 10 * HOUR),
            last_seen=fields.pop("last_seen", NOW - HOUR),
            **fields,
        )
        for slug in tenants:
            row.tenants.add(self.tenants[slug])
        return row.pk


def test_a_workloads_host_path_volumes_merge_into_one_finding_listing_them(old_world):
    w = World(old_world)
    dev = w.finding("POD-003", "dev", volume("dev", "/dev"), first_seen=NOW - 40 * HOUR)
    sock = w.finding(
        "POD-003",
        "sock",
        volume("sock", "/run/containerd/containerd.sock", reached_path="/run/containerd"),
        tenants="b",
        last_seen=NOW,
        ticket_url="https://tickets.example/SEC-2",
        status="accepted",
        accepted_by=w.ana,
        accepted_until=NOW + 10 * DAY,
        accepted_reason="the runtime socket is read by the vendor's agent",
    )
    Action = old_world.get_model("posture", "Action")  # noqa: N806
    action = Action.objects.create(
        key="k1",
        cluster=w.cluster,
        title="Remove the host path volumes from Deployment team-a/lab",
        severity="high",
        finding_ids=[dev, sock],
        finding_count=2,
        computed_at=NOW,
    )

    apps = migrate(AFTER)
    Finding = apps.get_model("posture", "Finding")  # noqa: N806
    (merged,) = Finding.objects.filter(check_id="POD-003")
    assert (merged.pk, merged.key) == (dev, "")
    same = FindingDraft("POD-003", ("a",), "Deployment", "team-a", "lab", {})
    assert merged.fingerprint == finding_fingerprint("lab", same)  # the next score matches it
    assert (merged.first_seen, merged.last_seen) == (NOW - 40 * HOUR, NOW)
    assert sorted(merged.tenants.values_list("slug", flat=True)) == ["a", "b"]
    assert merged.ticket_url == "https://tickets.example/SEC-2"
    # Open: accepting the socket's risk said nothing of /dev.
    assert (merged.status, merged.accepted_until, merged.accepted_reason) == ("open", None, "")
    (lapsed,) = apps.get_model("posture", "EarlierAcceptance").objects.filter(finding=merged)
    assert (lapsed.subject, lapsed.carried, lapsed.covers, lapsed.of) == (
        "Deployment team-a/lab (sock)",
        False,
        1,
        2,
    )
    # Every fact of each volume is kept, in its entry of `volumes`.
    assert merged.evidence["volumes"] == [
        volume("dev", "/dev"),
        volume("sock", "/run/containerd/containerd.sock", reached_path="/run/containerd"),
    ]
    assert "containers" not in merged.evidence and "host_path" not in merged.evidence
    assert merged.evidence["workload"] == "Deployment team-a/lab"
    assert merged.title == (
        "Deployment team-a/lab mounts 2 host paths: /dev (volume dev), "
        "/run/containerd/containerd.sock (volume sock)"
    )
    assert Action.objects.get(pk=action.pk).finding_ids == [dev]
    (merge,) = AuditEvent.objects.filter(action="merge", object_id=str(dev))
    assert merge.actor_name == ACTOR
    assert merge.after["volumes"] == ["dev", "sock"] and merge.after["merged"] == [sock]
    assert [f["volume"] for f in merge.before["findings"]] == ["dev", "sock"]
    assert AuditEvent.objects.filter(action="lapse", object_id=str(dev)).count() == 1
    assert audit_chain_verify().intact


def test_a_workloads_notebook_containers_accepted_each_stay_accepted(old_world):
    w = World(old_world)
    ids = [
        w.finding(
            "K8S-006",
            name,
            notebook(name),
            status="accepted",
            accepted_by=w.ana,
            accepted_until=NOW + days * DAY,
            accepted_reason=f"{name}: lab network only",
        )
        for name, days in (("jupyter", 30), ("tensorboard", 7))
    ]
    apps = migrate(AFTER)
    (merged,) = apps.get_model("posture", "Finding").objects.filter(check_id="K8S-006")
    assert (merged.pk, merged.status, merged.accepted_until) == (ids[0], "accepted", NOW + 7 * DAY)
    assert merged.accepted_reason.startswith("Carried from 2 findings of its containers")
    assert "container tensorboard: tensorboard: lab network only" in merged.accepted_reason
    assert merged.evidence["containers"] == [notebook("jupyter"), notebook("tensorboard")]
    assert merged.severity == "critical"
    assert merged.title == (
        "2 notebooks in Deployment team-a/lab (jupyter, tensorboard) are reachable from outside"
    )
    earlier = apps.get_model("posture", "EarlierAcceptance").objects.filter(finding=merged)
    assert sorted((e.subject, e.carried) for e in earlier) == [
        ("Deployment team-a/lab (jupyter)", True),
        ("Deployment team-a/lab (tensorboard)", True),
    ]
    (merge,) = AuditEvent.objects.filter(action="merge", object_id=str(ids[0]))
    assert merge.after["containers"] == ["jupyter", "tensorboard"]
    assert AuditEvent.objects.filter(action="carry", object_id=str(ids[0])).count() == 1


def test_one_volumes_finding_keeps_its_row_and_title_and_other_checks_are_untouched(old_world):
    w = World(old_world)
    single = w.finding("POD-003", "dev", volume("dev", "/dev"), title="kept title")
    other = w.finding("POD-005", "x", {"env": []})  # not one of these checks: left alone
    apps = migrate(AFTER)
    Finding = apps.get_model("posture", "Finding")  # noqa: N806
    row = Finding.objects.get(pk=single)
    assert (row.key, row.title, row.evidence["volumes"]) == (
        "",
        "kept title",
        [volume("dev", "/dev")],
    )
    assert not AuditEvent.objects.filter(object_id=str(single)).exists()
    assert Finding.objects.get(pk=other).key == "x"
