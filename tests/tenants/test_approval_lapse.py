"""An approval is judged against the tenant's CURRENT trust class (DESIGN §3): a tenant moved
into the sensitive class is bound by its 90 days from the decision (SHARE-004 fires, the API and
the sweep agree), and an approval for a mode its new class forbids between tenants still covers
its own pods (scope within_tenant)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from posture.models import Finding
from posture.read_model import sharing_requests_for
from posture.rescore import rescore_sweep
from posture.services import posture_evaluate
from sharing.services import sharing_request_approve, sharing_request_create
from tenants.models import SharingRequest, Tenant, TrustClass
from tests.conftest import api_client

pytestmark = pytest.mark.django_db

URL = "/api/v1/sharing-requests/"


def move(slug: str, trust_class: str) -> None:
    Tenant.objects.filter(slug=slug).update(trust_class=TrustClass.objects.get(slug=trust_class))


def approve(world, personas, mode: str) -> SharingRequest:
    request = sharing_request_create(
        tenant=Tenant.objects.get(slug="alpha"),
        cluster=world,
        mode=mode,
        justification="replicas of one inference service",
        user=personas["viewer_alpha"],
    )
    sharing_request_approve(request=request, user=personas["platform_engineer"], reason="ok")
    request = SharingRequest.objects.select_related("tenant__trust_class").get(pk=request.pk)
    return request


def share004_alpha() -> Finding | None:
    rows = Finding.objects.filter(check_id="SHARE-004", status="open", tenants__slug="alpha")
    return rows.first()


def test_a_tenant_moved_into_sensitive_loses_an_approval_older_than_90_days(
    client, small_world, personas
):
    request = approve(small_world, personas, "mig_gi")  # internal: no expiry of its own
    assert request.expires_at is None
    move("alpha", "sensitive")
    request.refresh_from_db()
    assert request.state(timezone.now()) == "approved"
    assert SharingRequest.objects.active(timezone.now()).filter(pk=request.pk).exists()

    with time_machine.travel(request.decided_at + timedelta(days=91)):
        now = timezone.now()
        assert request.state(now) == "expired"
        assert not SharingRequest.objects.active(now).exists()
        [info] = sharing_requests_for(small_world)
        assert info.state == "expired"
        auditor = api_client(personas["auditor"])
        shown = auditor.get(f"{URL}{request.pk}/").json()
        assert (shown["state"], shown["expires_at"]) == ("expired", None)
        ends = request.decided_at + timedelta(days=90)
        assert shown["effective_expires_at"].startswith(ends.strftime("%Y-%m-%dT%H:%M"))
        client.force_login(personas["auditor"])
        page = client.get(f"/sharing-requests/{request.pk}/")
        assert page.status_code == 200
        assert "never (its trust class sets no expiry)" not in page.content.decode()
        assert ends.strftime("%Y-%m-%d") in page.content.decode()
        assert [r["id"] for r in auditor.get(URL, {"state": "expired"}).json()["results"]] == [
            request.pk
        ]
        assert auditor.get(URL, {"state": "active"}).json()["count"] == 0
    assert request.effective_expiry() == request.decided_at + timedelta(days=90)


def test_the_sweep_rescores_when_the_class_ceiling_passes(small_world, personas):
    request = approve(small_world, personas, "mig_gi")
    move("alpha", "sensitive")
    posture_evaluate()
    assert rescore_sweep() == []
    with time_machine.travel(request.decided_at + timedelta(days=90, minutes=5)):
        assert rescore_sweep() == [small_world.pk]
        assert rescore_sweep() == []


def test_an_approval_for_a_mode_the_new_class_forbids_covers_the_tenants_own_pods(
    small_world, personas
):
    # alpha time-slices in the small world; as platform it may time-slice with anyone.
    move("alpha", "platform")
    request = approve(small_world, personas, "time_slicing")
    assert request.scope() == "with_other_tenants"
    posture_evaluate()
    assert share004_alpha() is None

    move("alpha", "internal")  # internal allows exclusive, mig_gi, vgpu_fixed, vgpu_equal
    request = SharingRequest.objects.select_related("tenant__trust_class").get(pk=request.pk)
    now = timezone.now()
    # Within one tenant any mode is allowed: still approved, narrowed to alpha's own pods.
    assert (request.state(now), request.scope()) == ("approved", "within_tenant")
    assert SharingRequest.objects.active(now).filter(pk=request.pk).exists()
    [info] = sharing_requests_for(small_world)
    assert (info.state, info.scope) == ("active", "within_tenant")
    posture_evaluate()
    assert share004_alpha() is None
    # Sharing the GPU with beta (external) is reported whatever alpha's approval says.
    assert Finding.objects.filter(check_id="SHARE-003", status="open", tenants__slug="alpha")

    auditor = api_client(personas["auditor"])
    shown = auditor.get(f"{URL}{request.pk}/").json()
    assert (shown["state"], shown["scope"]) == ("approved", "within_tenant")
    assert "trust class 'internal' forbids sharing by time_slicing" in shown["scope_rule"]
    assert [r["id"] for r in auditor.get(URL, {"state": "active"}).json()["results"]] == [
        request.pk
    ]
    refused = auditor.get(URL, {"state": "not_permitted"})
    assert refused.status_code == 400  # the state is gone: the scope says it now


def test_an_approval_with_no_decision_time_counts_from_the_ask(small_world, personas):
    # Written outside the services (a restore, a hand edit): the model and the query agree.
    request = approve(small_world, personas, "mig_gi")
    SharingRequest.objects.filter(pk=request.pk).update(decided_at=None)
    move("alpha", "sensitive")
    request.refresh_from_db()
    with time_machine.travel(request.requested_at + timedelta(days=91)):
        now = timezone.now()
        assert request.state(now) == "expired"
        assert not SharingRequest.objects.active(now).exists()
    assert request.state(timezone.now()) == "approved"
    assert SharingRequest.objects.active(timezone.now()).filter(pk=request.pk).exists()
