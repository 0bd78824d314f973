"""Beat's periodic checks: what time moves (a failed or stale sync, an approval pending
longer than N days, an acceptance about to expire, an assessment due for renewal) reaches the
users subscribed to it, once, and only what their role may see."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.core import mail
from django.utils import timezone

from inventory.models import SyncRun
from notifications import tasks
from notifications.models import Delivery, EventKind
from notifications.services import subscription_create
from posture.models import Finding
from posture.run_hooks import _listeners
from providers.models import Assessment, Provider, Questionnaire
from tenants.models import SharingRequest, Tenant


@pytest.fixture(autouse=True)
def _mail(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


def with_email(user):
    user.email = f"{user.username}@example.com"
    user.save()
    return user


def run_checks(capture) -> dict:
    with capture(execute=True):
        return tasks.notification_checks()


def test_periodic_events_reach_who_subscribed_once(
    small_world, personas, django_capture_on_commit_callbacks
):
    now = timezone.now()
    plat, lead = with_email(personas["platform_engineer"]), with_email(personas["security_lead"])
    proc, viewer = with_email(personas["procurement"]), with_email(personas["viewer_alpha"])
    subscription_create(user=plat, kind=EventKind.APPROVAL_PENDING, days=3)
    subscription_create(user=plat, kind=EventKind.SYNC_PROBLEM)
    subscription_create(user=lead, kind=EventKind.ACCEPTANCE_EXPIRING, days=7)
    subscription_create(user=viewer, kind=EventKind.ACCEPTANCE_EXPIRING, days=7)
    subscription_create(user=proc, kind=EventKind.ASSESSMENT_RENEWAL, days=30)

    alpha = Tenant.objects.get(slug="alpha")
    old = SharingRequest.objects.create(
        tenant=alpha,
        cluster=small_world,
        mode="time_slicing",
        justification="j",
        requested_by=viewer,
    )
    SharingRequest.objects.filter(pk=old.pk).update(requested_at=now - timedelta(days=5))
    fresh = SharingRequest.objects.create(
        tenant=alpha, cluster=small_world, mode="mps", justification="j", requested_by=viewer
    )
    SyncRun.objects.create(
        cluster=small_world,
        source="s",
        status="failed",
        finished_at=timezone.now(),
        error="boom: 403",
    )
    shared = Finding.objects.get(check_id="SHARE-001")  # affects alpha and beta
    Finding.objects.filter(pk=shared.pk).update(
        status="accepted", accepted_until=now + timedelta(days=2), accepted_by=lead
    )
    questionnaire, _ = Questionnaire.objects.get_or_create(
        slug="q", version=1, defaults={"title": "q", "spec": {}, "spec_hash": "x"}
    )
    Assessment.objects.create(
        provider=Provider.objects.create(slug="nimbus", name="Nimbus Cloud"),
        questionnaire=questionnaire,
        created_by=proc,
        status="accepted",
        expires_at=now + timedelta(days=10),
    )

    result = run_checks(django_capture_on_commit_callbacks)
    assert result["deliveries"] == 4
    by_user = {m.to[0]: m.body for m in mail.outbox}
    assert f"sharing request #{old.pk}" in by_user["plat@example.com"]
    assert f"sharing request #{fresh.pk}" not in by_user["plat@example.com"]  # not N days yet
    assert "sync of lab failed: boom: 403" in by_user["plat@example.com"]
    assert "acceptance expires" in by_user["sec@example.com"]
    assert "beta" in by_user["sec@example.com"]
    assert "acceptance expires" in by_user["viewer-alpha@example.com"]
    assert "beta" not in by_user["viewer-alpha@example.com"].lower()
    assert "assessment of Nimbus Cloud expires" in by_user["proc@example.com"]
    assert all(d.status == "sent" for d in Delivery.objects.all())

    # The next pass finds the same state: nothing is sent twice.
    again = run_checks(django_capture_on_commit_callbacks)
    assert again["deliveries"] == 0 and len(mail.outbox) == 4


def test_a_role_loses_what_it_may_no_longer_see(
    small_world, personas, django_capture_on_commit_callbacks
):
    """A subscription is kept when its owner's role changes, but finds nothing the new role
    may not see (a platform engineer demoted to procurement hears of no sync)."""
    plat = with_email(personas["platform_engineer"])
    subscription_create(user=plat, kind=EventKind.SYNC_PROBLEM)
    plat.groups.clear()
    plat.groups.add(personas["procurement"].groups.get())
    SyncRun.objects.create(cluster=small_world, source="s", status="failed", error="x")
    SyncRun.objects.filter(status="failed").update(finished_at=timezone.now())
    run_checks(django_capture_on_commit_callbacks)
    assert mail.outbox == []


def test_the_digest_follows_every_posture_run_and_beat_runs_the_checks():
    assert "notifications" in _listeners
    schedule = django_settings.CELERY_BEAT_SCHEDULE["notification checks"]
    assert schedule["task"] == tasks.notification_checks.name
