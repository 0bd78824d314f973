"""Scores follow every change that can move them (posture.rescore): each trigger re-scores the
clusters it touches once its transaction commits, without anyone running `manage.py score`.
Eager here (no broker); the debounce on a worker is tested with the queue recorded, and on a
real worker in tests/test_broker.py."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
import time_machine
from django.contrib import admin
from django.core.management import CommandError, call_command
from django.test import Client, RequestFactory
from django.utils import timezone

from gpuposture.celery import app as celery_app
from inventory.bulletins.imports import bulletins_import_recorded
from inventory.models import BulletinImport
from inventory.patching.sla import patch_sla_days, patch_sla_save
from posture.models import CheckExemption, ClusterScoreState, Finding, PostureRun, TenantScore
from posture.rescore import rescore_sweep
from posture.services import finding_accept, finding_reopen
from posture.tasks import rescore
from providers.assessments import assessment_review, assessment_submit
from providers.models import Provider
from sharing.services import (
    sharing_request_approve,
    sharing_request_create,
    sharing_request_deny,
    sharing_request_revoke,
)
from telemetry.models import ResetAttestation
from telemetry.services import reset_attestation_record
from tenants.models import SharingRequest, Tenant, TrustClass
from tenants.services import trust_class_image_policy_set
from tests.conftest import DATA, api_client, make_user, world_snapshot_path
from tests.providers.test_workflow import filled
from tests.realworld import realworld

pytestmark = pytest.mark.django_db


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """Run a change as a request would: its on-commit work (the re-score) runs at the end."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def runs() -> int:
    return PostureRun.objects.count()


def counted_in_score(finding: Finding, slug: str) -> bool:
    """Whether the tenant's latest stored score takes something off for the finding (an
    accepted one may be listed, at no cost)."""
    latest = TenantScore.objects.filter(tenant__slug=slug).order_by("-computed_at", "-pk").first()
    return any(
        c["finding_id"] == finding.pk and (c.get("points") or c.get("risk") or 0)
        for c in latest.contributions
    )


def alpha_finding() -> Finding:
    # first() may be None to mypy; the world gives alpha an open finding.
    return Finding.objects.filter(status="open", tenants__slug="alpha").order_by("severity").first()  # type: ignore[return-value]


def until(days: int = 30):
    return timezone.now() + timedelta(days=days)


# --- risk acceptances -------------------------------------------------------------------------


def test_accepting_a_risk_rescores_at_once(small_world, personas, committed):
    finding, before = alpha_finding(), runs()
    assert counted_in_score(finding, "alpha")
    with committed():
        finding_accept(
            finding=finding,
            user=personas["security_lead"],
            reason="compensating control in place",
            until=until(),
        )
    assert runs() == before + 1
    assert not counted_in_score(finding, "alpha")  # the grade line no longer names it
    state = ClusterScoreState.objects.get(cluster=small_world)
    assert state.pending_since is None and state.last_scored_at is not None


def test_withdrawing_an_acceptance_rescores(small_world, personas, committed):
    finding = alpha_finding()
    with committed():
        finding_accept(
            finding=finding,
            user=personas["security_lead"],
            reason="compensating control in place",
            until=until(),
        )
    before = runs()
    with committed():
        finding_reopen(finding=finding, user=personas["security_lead"])
    assert runs() == before + 1
    assert counted_in_score(finding, "alpha")


def test_a_change_rescores_only_once_committed(
    small_world, personas, committed, django_capture_on_commit_callbacks
):
    finding, before = alpha_finding(), runs()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        finding_accept(
            finding=finding,
            user=personas["security_lead"],
            reason="compensating control in place",
            until=until(),
        )
    assert len(callbacks) == 1 and runs() == before  # queued for the commit, not run before it


def test_an_acceptance_that_expires_is_rescored_by_the_sweep(small_world, personas, committed):
    finding = alpha_finding()
    with committed():
        finding_accept(
            finding=finding,
            user=personas["security_lead"],
            reason="compensating control in place",
            until=until(1),
        )
    assert rescore_sweep() == []  # nothing has expired yet
    before = runs()
    with time_machine.travel(timezone.now() + timedelta(days=2)):
        assert rescore_sweep() == [small_world.pk]
        assert rescore_sweep() == []  # seen by that score: not again
    assert runs() == before + 1
    finding.refresh_from_db()
    assert finding.status == "open" and counted_in_score(finding, "alpha")


def test_without_a_worker_a_read_of_scores_applies_an_expired_acceptance_first(
    small_world, personas, committed
):
    """Celery eager (the demo, one process): no beat sweeps, so the tenants, findings and
    actions API and their pages sweep before they read: past its date, the acceptance is no
    longer in force in what they show (rtpeerflow k19, k08b)."""
    finding = alpha_finding()
    lead = personas["security_lead"]
    client = api_client(lead)
    alpha = f"/api/v1/tenants/{Tenant.objects.get(slug='alpha').pk}/"
    risk_open = client.get(alpha).json()["risk"]
    with committed():
        finding_accept(finding=finding, user=lead, reason="compensating control", until=until(1))
    accepted = client.get(alpha).json()["risk"]
    assert accepted < risk_open
    reads = (alpha, "/api/v1/tenants/", "/api/v1/findings/", "/api/v1/actions/")
    for path in (*reads, "/", "/tenants/alpha/", "/tenants/", "/findings/"):
        before = runs()
        with time_machine.travel(timezone.now() + timedelta(days=2)):
            page = Client()
            page.force_login(lead)
            answer = client.get(path) if path.startswith("/api/") else page.get(path)
            assert answer.status_code == 200
            if path == alpha:  # the answer itself is the new score's
                assert answer.json()["risk"] == risk_open
        assert runs() == before + 1, path  # swept and re-scored before the read
        assert client.get(alpha).json()["risk"] == risk_open
        with committed():  # accepted again, for the next page's turn
            finding.refresh_from_db()
            finding_accept(
                finding=finding,
                user=lead,
                reason="compensating control",
                until=until(1),
            )


# --- sharing requests -------------------------------------------------------------------------


@pytest.fixture
def sharing(small_world, personas):
    """Two platform engineers (a requester never decides) and a mode alpha's class allows."""
    alpha = Tenant.objects.select_related("trust_class").get(slug="alpha")
    decider = make_user("plat-2", "platform_engineer")
    mode = alpha.trust_class.allowed_modes[0]

    def request(pool: str = ""):
        return sharing_request_create(
            tenant=alpha,
            cluster=small_world,
            mode=mode,
            node_pool=pool,
            justification="training jobs share the L4 pool",
            user=personas["platform_engineer"],
        )

    return request, decider


def test_approving_denying_and_revoking_sharing_each_rescore(sharing, committed):
    request, decider = sharing
    approved, denied = request(), request("l4-pool")
    before = runs()
    with committed():
        sharing_request_approve(request=approved, user=decider, reason="ok for the quarter")
    assert runs() == before + 1
    with committed():
        sharing_request_deny(request=denied, user=decider, reason="not on this pool")
    assert runs() == before + 2
    with committed():
        sharing_request_revoke(request=approved, user=decider, reason="the project ended")
    assert runs() == before + 3
    assert PostureRun.objects.order_by("-pk").first().clusters == ["lab"]


def test_an_approval_that_expires_is_rescored_by_the_sweep(sharing, small_world, committed):
    request, decider = sharing
    with committed():
        approval = sharing_request_approve(
            request=request(), user=decider, reason="a trial", expires_in_days=1
        )
    assert approval.expires_at is not None and rescore_sweep() == []
    before = runs()
    with time_machine.travel(approval.expires_at + timedelta(minutes=5)):
        assert rescore_sweep() == [small_world.pk]
        assert rescore_sweep() == []
    assert runs() == before + 1
    assert (
        SharingRequest.objects.get(pk=approval.pk).state(timezone.now() + timedelta(days=2))
        == "expired"
    )


# --- exemptions, trust classes, tenants -------------------------------------------------------


@pytest.fixture
def admin_user(db):
    user = make_user("root")
    user.is_staff = user.is_superuser = True
    user.save()
    return user


def test_an_exemption_made_in_the_admin_rescores_its_cluster(
    small_world, admin_user, client, committed
):
    client.force_login(admin_user)
    finding, before = alpha_finding(), runs()
    with committed():
        response = client.post(
            "/admin/posture/checkexemption/add/",
            {
                "check_id": finding.check_id,
                "cluster": small_world.pk,
                "namespace": finding.subject_namespace,
                "kind": finding.subject_kind,
                "name": finding.subject_name,
                "labels": "{}",
                "reason": "lab cluster, accepted by the platform board",
            },
        )
    assert response.status_code == 302, response.content[:2000]
    assert runs() == before + 1
    assert not Finding.objects.filter(pk=finding.pk, status="open").exists()
    exemption = CheckExemption.objects.get()
    # Moved to another cluster: both are re-scored (the old one's finding opens again).
    from inventory.sync import cluster_get_or_create

    other = cluster_get_or_create(name="elsewhere")
    data = {
        "check_id": exemption.check_id,
        "cluster": other.pk,
        "namespace": exemption.namespace,
        "kind": exemption.kind,
        "name": exemption.name,
        "labels": "{}",
        "reason": exemption.reason,
    }
    with committed():
        client.post(f"/admin/posture/checkexemption/{exemption.pk}/change/", data)
    assert set(PostureRun.objects.order_by("-pk").first().clusters) == {"lab"}  # judged ones
    assert Finding.objects.filter(pk=finding.pk, status="open").exists()
    before += 1
    with committed():
        client.post(f"/admin/posture/checkexemption/{exemption.pk}/delete/", {"post": "yes"})
    assert runs() == before + 2 and not CheckExemption.objects.exists()


def test_trust_class_and_tenant_edits_in_the_admin_rescore(small_world, admin_user, committed):
    request = RequestFactory().post("/admin/")
    request.user = admin_user
    internal = TrustClass.objects.get(slug="internal")
    before = runs()
    with committed():
        admin.site._registry[TrustClass].save_model(request, internal, None, change=True)
    assert runs() == before + 1
    alpha = Tenant.objects.get(slug="alpha")
    alpha.name = "Team Alpha (research)"
    with committed():
        admin.site._registry[Tenant].save_model(request, alpha, None, change=True)
    assert runs() == before + 2


def test_the_image_policy_of_a_class_rescores(small_world, committed):
    before = runs()
    with committed():
        trust_class_image_policy_set(
            trust_class=TrustClass.objects.get(slug="external"),
            approved_registries=["registry.example.com/"],
            require_image_digest=True,
        )
    assert runs() == before + 1


def test_apply_tenants_rescores_once_when_something_changed(small_world, tmp_path, committed):
    document = json.loads((DATA / "small-tenants.json").read_text())
    path = tmp_path / "tenants.yaml"
    path.write_text(json.dumps(document))
    before = runs()
    with committed():
        call_command("apply_tenants", str(path))  # nothing changed
    assert runs() == before
    document["tenants"][1]["namespaces"] = ["beta-prod"]
    document["tenants"][0]["name"] = "Team Alpha Research"
    path.write_text(json.dumps(document))
    with committed():
        call_command("apply_tenants", str(path))  # two tenants changed: one re-score
    assert runs() == before + 1


# --- bulletins, the patch SLA, resets, questionnaires -----------------------------------------


def test_a_sync_from_the_cli_rescores_at_once(small_world, tmp_path, committed):
    """`sync_cluster` alone brings findings and scores up to date: a pod made privileged since
    the last sync has its POD-001 and counts in alpha's score without `manage.py score`."""
    world = json.loads(world_snapshot_path().read_text())
    pod = next(i for i in world["items"] if i["metadata"]["name"] == "trainer-0")
    pod["spec"]["containers"][0].setdefault("securityContext", {})["privileged"] = True
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(world))
    before = runs()
    with committed():
        call_command("sync_cluster", cluster="lab", snapshot=[str(changed)], stdout=io.StringIO())
    assert runs() == before + 1
    privileged = Finding.objects.get(
        check_id="POD-001", status="open", subject_namespace="team-alpha"
    )
    assert counted_in_score(privileged, "alpha")


def test_a_failed_sync_rescores_nothing(small_world, tmp_path, committed):
    broken = tmp_path / "broken.json"
    broken.write_text('{"kind": "List", "items": [')
    before = runs()
    with committed(), pytest.raises(CommandError):
        call_command("sync_cluster", cluster="lab", snapshot=[str(broken)], stdout=io.StringIO())
    assert runs() == before


def test_a_bulletin_import_rescores_and_learns_what_it_resolved(small_world, committed):
    before = runs()
    with committed():
        bulletins_import_recorded(trigger="cli", paths=[str(realworld("csaf", "nvidia-5415.json"))])
    assert runs() == before + 1
    record = BulletinImport.objects.get()
    assert record.bulletins and record.resolved_findings is not None


def test_a_new_patch_sla_rescores(small_world, committed):
    before = runs()
    with committed():
        patch_sla_save(days={**patch_sla_days(), "critical": 3}, actor="sec")
    assert runs() == before + 1


def test_a_reset_attestation_rescores_its_cluster(small_world, committed):
    before = runs()
    with committed():
        reset_attestation_record(
            attestation=ResetAttestation(
                cluster=small_world,
                node="gpu-ts-1",
                reset_at=timezone.now(),
                method=ResetAttestation.Method.GPU_RESET,
                previous_tenant=Tenant.objects.get(slug="alpha"),
                next_tenant=Tenant.objects.get(slug="beta"),
            ),
            actor="plat",
        )
    assert runs() == before + 1


def test_accepting_a_questionnaire_rescores_the_providers_clusters(
    small_world, personas, committed
):
    call_command("load_questionnaires")
    small_world.provider = Provider.objects.create(slug="nimbus", name="Nimbus GPU Cloud")
    small_world.save()
    with committed():
        call_command("score")
    assert Finding.objects.filter(check_id="PROV-001", status="open").exists()
    assessment = filled(small_world.provider, personas)
    assessment_submit(assessment=assessment, user=personas["procurement"])
    before = runs()
    with committed():
        assessment_review(assessment=assessment, user=personas["security_lead"], accept=True)
    assert runs() == before + 1
    # Nobody ran `score`: the pages already show PROV-001 resolved.
    assert not Finding.objects.filter(check_id="PROV-001", status="open").exists()


# --- the debounce -----------------------------------------------------------------------------


def toggle(finding: Finding, user, times: int) -> None:
    for _ in range(times):
        finding_accept(
            finding=finding, user=user, reason="compensating control in place", until=until()
        )
        finding_reopen(finding=finding, user=user)


def test_many_edits_in_one_transaction_make_one_rescore(small_world, personas, committed):
    finding, before = alpha_finding(), runs()
    with committed():
        toggle(finding, personas["security_lead"], 25)  # 50 changes
    assert runs() == before + 1


@pytest.fixture
def worker_queue(monkeypatch):
    """A broker path without a broker: tasks are queued (recorded here), not run in-process."""
    sent: list[tuple[str, tuple, float | None]] = []

    def record(task, *args, what, countdown=None, **kwargs):
        sent.append((task.name, args, countdown))

    monkeypatch.setattr("posture.queue.enqueue", record)
    celery_app.conf.task_always_eager = False
    yield sent
    celery_app.conf.task_always_eager = True


def test_on_a_worker_fifty_edits_in_a_second_make_one_rescore(
    small_world, personas, committed, worker_queue, client, settings
):
    finding, before = alpha_finding(), runs()
    for _ in range(25):  # 50 separate requests, each its own transaction
        with committed():
            toggle(finding, personas["security_lead"], 1)
    assert worker_queue == [
        ("posture.tasks.rescore", ([small_world.pk],), settings.GPUPOSTURE_RESCORE_DEBOUNCE_SECONDS)
    ]
    assert runs() == before  # waiting for the debounce window
    client.force_login(personas["security_lead"])
    assert b"re-scoring" in client.get("/").content
    assert rescore.apply(args=[[small_world.pk]]).get()["status"] == "done"
    assert runs() == before + 1
    # A redelivered or duplicate copy finds nothing pending.
    assert rescore.apply(args=[[small_world.pk]]).get()["status"] == "skipped"
    assert runs() == before + 1
    assert b"re-scoring" not in client.get("/").content


def test_a_lost_rescore_is_enqueued_again_by_the_sweep(
    small_world, personas, committed, worker_queue, settings
):
    with committed():
        toggle(alpha_finding(), personas["security_lead"], 1)
    assert len(worker_queue) == 1  # say the broker lost it
    assert rescore_sweep() == []  # still inside its grace period
    later = timezone.now() + timedelta(seconds=settings.GPUPOSTURE_RESCORE_LOST_AFTER_SECONDS + 1)
    with time_machine.travel(later):
        assert rescore_sweep() == [small_world.pk]
    assert len(worker_queue) == 2


def test_a_rescore_that_fails_leaves_the_cluster_marked_for_the_sweep(small_world, monkeypatch):
    from posture.rescore import _mark_pending, rescore_run

    def broken(**kwargs):
        raise RuntimeError("database went away mid-score")

    monkeypatch.setattr("posture.rescore.posture_evaluate", broken)
    assert _mark_pending([small_world.pk], timezone.now()) == [small_world.pk]
    with pytest.raises(RuntimeError):
        rescore_run(cluster_ids=[small_world.pk])
    assert ClusterScoreState.objects.get(cluster=small_world).pending_since is not None


def test_a_tenant_or_provider_change_reaches_only_the_clusters_they_are_on(small_world):
    from gpuposture.base.rescore import RescoreScope
    from inventory.sync import cluster_get_or_create
    from posture.rescore import clusters_touched

    elsewhere = cluster_get_or_create(name="elsewhere")  # no pods, no provider
    small_world.provider = Provider.objects.create(slug="nimbus", name="Nimbus GPU Cloud")
    small_world.save()
    alpha = Tenant.objects.get(slug="alpha")
    assert clusters_touched(RescoreScope(tenants={alpha.pk})) == [small_world.pk]
    assert clusters_touched(RescoreScope(providers={small_world.provider_id})) == [small_world.pk]
    assert clusters_touched(RescoreScope(clusters={elsewhere.pk})) == [elsewhere.pk]
    assert clusters_touched(RescoreScope(everything=True)) == [small_world.pk, elsewhere.pk]
