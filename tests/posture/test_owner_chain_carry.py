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
from posture.models import EarlierAcceptance, Finding
from posture.read_model import posture_inputs, tenant_infos
from posture.rules.registry import run_checks
from posture.services import finding_accept, posture_evaluate
from tenants.models import Tenant, TenantNamespace, TrustClass
from tests.conftest import api_client
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


# --- a sync that read less of the chain, then one that reads all of it (rtowners k80) -------

NARROW_KINDS = ("Deployment", "ReplicaSet", "Pod")  # `kubectl get deploy,rs,pods`
OTHER_RS = ("apps/v1", "ReplicaSet", "other-6f7d8")


def _team() -> None:
    team = Tenant.objects.create(
        slug="team", name="Team", trust_class=TrustClass.objects.get(slug="internal")
    )
    TenantNamespace.objects.create(tenant=team, name=world.NS)


def _sync(cluster, tmp_path, items: list[dict], tag: str) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": world.NS}}
    path = tmp_path / f"{tag}.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [namespace, *items]}))
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    posture_evaluate()


def _other_workload() -> list[dict]:
    """A Deployment of its own in the same namespace, with the same cause (POD-008)."""
    rs = world.obj(*OTHER_RS[:2], OTHER_RS[2], ("apps/v1", "Deployment", "other"), spec={})
    hashed = {"pod-template-hash": "6f7d8"}
    pod = world.pod(f"{OTHER_RS[2]}-x", OTHER_RS, labels=hashed, secret=True)
    return [world.deployment("other", secret=True), rs, pod]


def _live(cluster, kind: str) -> Finding:
    live = Finding.objects.filter(cluster=cluster, check_id="POD-008", subject_kind=kind)
    return live.get(status__in=("open", "accepted"))


@pytest.mark.parametrize(
    ("read", "narrow"),
    [
        (NARROW_KINDS, ("Revision", world.REVISION[2])),  # 3 owners above the pods
        ((*NARROW_KINDS, "Revision"), ("Configuration", world.CONFIG[2])),  # 4
        (
            (*NARROW_KINDS, "Revision", "Configuration"),
            ("Service.serving.knative.dev", world.KSVC[2]),
        ),
    ],
)
def test_an_acceptance_under_an_owner_read_later_carries_to_the_top(
    tmp_path, personas, read, narrow
):
    """The first sync reads the predictor's chain only up to some owner (an account that may
    not list serving.knative.dev): its finding is filed under the owner the highest object
    read names, and accepted. The next sync reads the whole chain: the InferenceService's
    finding is accepted as that one was, first seen when it was; that finding resolves."""
    _team()
    cluster = cluster_get_or_create(name="kserve")
    full = world.kserve()
    _sync(cluster, tmp_path, [o for o in full if o["kind"] in read], "narrow")
    old = Finding.objects.get(cluster=cluster, check_id="POD-008")
    assert (old.subject_kind, old.subject_name) == narrow
    lead = personas["security_lead"]
    until = timezone.now() + timedelta(days=30)
    finding_accept(finding=old, user=lead, reason="model server, reviewed", until=until)
    _sync(cluster, tmp_path, full, "wide")
    wide = _live(cluster, "InferenceService")
    assert wide.subject_name == "fraud-model"
    assert wide.status == "accepted" and wide.accepted_until == until
    assert "model server, reviewed" in wide.accepted_reason
    assert wide.first_seen == old.first_seen
    old.refresh_from_db()
    assert old.status == "resolved"
    (earlier,) = EarlierAcceptance.objects.filter(finding=wide)
    assert (earlier.source_id, earlier.carried, earlier.covers, earlier.of) == (old.pk, True, 1, 1)
    body = api_client(lead).get(f"/api/v1/findings/{wide.pk}/").json()
    assert [e["source"] for e in body["earlier_acceptances"]] == [old.pk]


def test_an_unrelated_workloads_acceptance_is_not_carried(tmp_path, personas):
    """Another Deployment's accepted finding resolving in the same score (it was deleted)
    spans none of the predictor's pods: the InferenceService's finding opens (its own
    narrower finding was left open), with nothing carried or said to no longer apply, and
    the narrower one's first-seen."""
    _team()
    cluster = cluster_get_or_create(name="kserve")
    full = world.kserve()
    narrow = [o for o in full if o["kind"] in NARROW_KINDS]
    _sync(cluster, tmp_path, [*narrow, *_other_workload()], "narrow")
    other = _live(cluster, "Deployment")
    assert other.subject_name == "other"
    until = timezone.now() + timedelta(days=30)
    finding_accept(
        finding=other, user=personas["security_lead"], reason="nightly batch job", until=until
    )
    revision = _live(cluster, "Revision")
    _sync(cluster, tmp_path, full, "wide")
    wide = _live(cluster, "InferenceService")
    assert wide.status == "open" and wide.first_seen == revision.first_seen
    assert not EarlierAcceptance.objects.filter(finding=wide).exists()
    assert not AuditEvent.objects.filter(object_id=str(wide.pk), action__in=("carry", "lapse"))
    other.refresh_from_db()
    assert other.status == "resolved"


def test_only_the_predictors_own_acceptance_is_carried(tmp_path, personas):
    """Both accepted, the other Deployment deleted: the InferenceService's finding carries the
    Revision's acceptance alone."""
    _team()
    cluster = cluster_get_or_create(name="kserve")
    full = world.kserve()
    narrow = [o for o in full if o["kind"] in NARROW_KINDS]
    _sync(cluster, tmp_path, [*narrow, *_other_workload()], "narrow")
    lead = personas["security_lead"]
    until = timezone.now() + timedelta(days=30)
    revision, other = _live(cluster, "Revision"), _live(cluster, "Deployment")
    finding_accept(finding=revision, user=lead, reason="model server", until=until)
    finding_accept(finding=other, user=lead, reason="unrelated batch", until=until)
    _sync(cluster, tmp_path, full, "wide")
    wide = _live(cluster, "InferenceService")
    assert wide.status == "accepted" and "unrelated batch" not in wide.accepted_reason
    (event,) = AuditEvent.objects.filter(object_id=str(wide.pk), action="carry")
    assert event.after["from_findings"] == [revision.pk]


def test_a_bare_pods_acceptance_carries_when_a_replicaset_adopts_it(tmp_path, personas):
    """A ReplicaSet whose selector matches a bare pod adopts it (sets itself as the pod's
    controller): the pod's finding is now the ReplicaSet's, and what was accepted on the
    pod is carried there, first seen when the pod's was."""
    _team()
    cluster = cluster_get_or_create(name="adopt")
    _sync(cluster, tmp_path, [world.pod("solo", None, secret=True)], "bare")
    bare = _live(cluster, "Pod")
    until = timezone.now() + timedelta(days=30)
    finding_accept(
        finding=bare, user=personas["security_lead"], reason="lab pod, no secrets", until=until
    )
    rs = world.obj("apps/v1", "ReplicaSet", "solo-rs", spec={})
    adopted = world.pod("solo", ("apps/v1", "ReplicaSet", "solo-rs"), secret=True)
    _sync(cluster, tmp_path, [rs, adopted], "adopted")
    wide = _live(cluster, "ReplicaSet")
    assert (wide.subject_name, wide.status) == ("solo-rs", "accepted")
    assert wide.first_seen == bare.first_seen and wide.accepted_until == until


# --- the reverse: a sync that reads less of the chain than the last one --------------------


def test_a_sync_reading_less_of_the_chain_keeps_the_workload_its_finding_and_acceptance(
    tmp_path, personas
):
    """The last sync read the whole chain; this one only `deploy,rs,pods` (an account that may
    no longer list serving.knative.dev): the Deployment still names its Revision, which
    the export did not read, so the links the last sync stored above it are kept and the
    finding stays the InferenceService's, accepted, first seen then; the run says so."""
    _team()
    cluster = cluster_get_or_create(name="kserve")
    full = world.kserve()
    _sync(cluster, tmp_path, full, "wide")
    wide = _live(cluster, "InferenceService")
    lead = personas["security_lead"]
    until = timezone.now() + timedelta(days=30)
    finding_accept(finding=wide, user=lead, reason="model server, reviewed", until=until)
    _sync(cluster, tmp_path, [o for o in full if o["kind"] in NARROW_KINDS], "narrow")
    still = _live(cluster, "InferenceService")
    assert still.pk == wide.pk and still.status == "accepted" and still.accepted_until == until
    assert not Finding.objects.filter(cluster=cluster, subject_kind="Revision").exists()
    run = cluster.sync_runs.order_by("-id").first()
    (said,) = [w for w in run.warnings if "owner links are kept from the last sync" in w]
    assert f"Revision {world.NS}/{world.REVISION[2]}" in said
    # Deleted for real (the export holds none of it): nothing is kept, the finding resolves.
    _sync(cluster, tmp_path, [], "gone")
    wide.refresh_from_db()
    assert wide.status == "resolved"
