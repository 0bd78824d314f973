"""A risk accepted on a finding filed under a generated object carries to the finding now
filed under the controller at the top of its owner chain (docs/findings.md, "When a
finding's subject widens"): the first score after the upgrade resolves `Deployment
fraud-model-predictor-00001-deployment` and opens `InferenceService fraud-model` accepted as
it was, first seen when the Deployment's finding was."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from posture.finding_store import findings_refresh
from posture.models import Finding
from posture.read_model import posture_inputs, tenant_infos
from posture.rules.registry import run_checks
from posture.services import finding_accept, posture_evaluate
from tenants.models import Tenant, TenantNamespace, TrustClass
from tests.inventory import owner_chain_world as world

pytestmark = pytest.mark.django_db
OLD_OWNER_KINDS = ("ReplicaSet", "Job", "CronJob")  # the links the sync kept before
DEPLOYMENT = world.KSERVE_DEPLOYMENT[2]


@pytest.fixture
def scored_before(tmp_path, personas):
    """A KServe cluster scored ten days ago as the code before owner chains scored it: the
    snapshot's owner links only those of ReplicaSets, Jobs and CronJobs."""
    team = Tenant.objects.create(
        slug="team", name="Team", trust_class=TrustClass.objects.get(slug="internal")
    )
    TenantNamespace.objects.create(tenant=team, name=world.NS)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": world.NS}}
    path = tmp_path / "snapshot.json"
    items = [namespace, *world.kserve()]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    cluster = cluster_get_or_create(name="kserve")
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    inputs = posture_inputs(cluster, tenant_infos())
    owners = tuple(o for o in inputs.snapshot.owners if o.kind in OLD_OWNER_KINDS)
    before = replace(inputs, snapshot=replace(inputs.snapshot, owners=owners))
    then = timezone.now() - timedelta(days=10)
    findings_refresh(cluster=cluster, drafts=run_checks(before, only=["POD-008"]), now=then)
    old = Finding.objects.get(cluster=cluster, check_id="POD-008")
    assert (old.subject_kind, old.subject_name) == ("Deployment", DEPLOYMENT)
    return cluster, old


def _now_filed(cluster) -> Finding:
    return Finding.objects.get(cluster=cluster, check_id="POD-008", subject_kind="InferenceService")


def test_an_acceptance_on_the_revisions_deployment_carries_to_the_inferenceservice(
    scored_before, personas
):
    cluster, old = scored_before
    lead = personas["security_lead"]
    until = timezone.now() + timedelta(days=30)
    finding_accept(finding=old, user=lead, reason="rotating the key this sprint", until=until)
    posture_evaluate()
    wide = _now_filed(cluster)
    assert (wide.subject_namespace, wide.subject_name) == (world.NS, "fraud-model")
    assert wide.status == "accepted" and wide.accepted_until == until
    assert wide.accepted_by == lead
    assert "rotating the key this sprint" in wide.accepted_reason
    assert wide.first_seen == old.first_seen  # the same cause, first seen then
    old.refresh_from_db()
    assert old.status == "resolved"
    (event,) = AuditEvent.objects.filter(object_id=str(wide.pk), action="carry")
    assert event.after["from_findings"] == [old.pk]


def test_an_open_finding_keeps_its_first_seen_under_the_wider_subject(scored_before):
    cluster, old = scored_before
    posture_evaluate()
    wide = _now_filed(cluster)
    assert wide.status == "open" and wide.first_seen == old.first_seen
    posture_evaluate()  # and the next score is the same finding, nothing carried again
    assert _now_filed(cluster).pk == wide.pk
    assert not AuditEvent.objects.filter(object_id=str(wide.pk), action__in=("carry", "lapse"))
