"""The settings page: only what the role may see is offered, changes are audited, hostile
input is refused with a clear error and changes nothing."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from audit.models import AuditEvent
from notifications.models import NotificationProfile, Subscription
from tenants.models import Tenant

URL = "/account/notifications/"


@pytest.fixture(autouse=True)
def _plain(settings):
    settings.GPUPOSTURE_WEBHOOK_ALLOWED_HOSTS = []


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_each_role_is_offered_only_what_it_may_see(personas):
    def offered(name: str) -> set[str]:
        form = client_for(personas[name]).get(URL).context["sub_form"]
        return {value for value, _ in form.fields["kind"].choices}

    assert offered("security_lead") == {
        "finding_new",
        "patch_sla",
        "sync_problem",
        "approval_pending",
        "acceptance_expiring",
        "assessment_renewal",
    }
    assert offered("viewer_alpha") == {"finding_new", "patch_sla", "acceptance_expiring"}
    assert offered("procurement") == {"assessment_renewal"}
    assert client_for(personas["no_role"]).get(URL).status_code == 403


def test_a_tenant_viewer_cannot_subscribe_to_another_tenant_or_to_syncs(small_world, personas):
    viewer = personas["viewer_alpha"]
    viewer.email = "a@example.com"
    viewer.save()
    client = client_for(viewer)
    tenants = client.get(URL).context["sub_form"].fields["tenant"].queryset
    assert [t.slug for t in tenants] == ["alpha"]
    beta = Tenant.objects.get(slug="beta")
    for data in (
        {"kind": "finding_new", "tenant": beta.pk},
        {"kind": "sync_problem"},
    ):
        response = client.post(URL, {"form": "subscribe", "by_email": "on", **data})
        assert response.status_code == 400
    assert not Subscription.objects.filter(user=viewer).exists()
    assert b"beta" not in client.get(URL).content.lower()


def test_subscribing_and_unsubscribing_are_audited(personas):
    lead = personas["security_lead"]
    lead.email = "lead@example.com"
    lead.save()
    client = client_for(lead)
    response = client.post(
        URL,
        {"form": "subscribe", "kind": "approval_pending", "days": "3", "by_email": "on"},
    )
    assert response.status_code == 302
    sub = Subscription.objects.get(user=lead)
    assert (sub.kind, sub.days, sub.by_email, sub.by_webhook) == (
        "approval_pending",
        3,
        True,
        False,
    )
    created = AuditEvent.objects.get(action="create", object_type="notifications.subscription")
    assert created.actor == lead and created.after["days"] == 3

    response = client.post(reverse("notification-subscription-delete", args=[sub.pk]))
    assert response.status_code == 302 and not Subscription.objects.exists()
    deleted = AuditEvent.objects.get(action="delete", object_type="notifications.subscription")
    assert deleted.before["kind"] == "approval_pending"


def test_another_users_subscription_is_not_found(personas):
    theirs = Subscription.objects.create(user=personas["auditor"], kind="finding_new")
    client = client_for(personas["security_lead"])
    response = client.post(reverse("notification-subscription-delete", args=[theirs.pk]))
    assert response.status_code == 404
    assert Subscription.objects.filter(pk=theirs.pk).exists()


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("ftp://hooks.example.com/x", "Only http(s) URLs"),
        ("javascript:alert(1)", "Only http(s) URLs"),
        ("http://127.0.0.1:8000/hook", "plain http is refused"),
        ("https://127.0.0.1/hook", "loopback"),
        ("https://169.254.169.254/latest/meta-data/", "link"),
        ("https://10.1.2.3/hook", "private"),
        ("https://user:pw@hooks.example.com/x", "user info"),
    ],
)
def test_a_hostile_webhook_url_is_refused_with_a_clear_error(personas, url, error):
    lead = personas["security_lead"]
    response = client_for(lead).post(
        URL, {"form": "webhook", "webhook_url": url, "webhook_secret": "s" * 20}
    )
    assert response.status_code == 400
    assert error in response.content.decode()
    assert not NotificationProfile.objects.filter(user=lead).exclude(webhook_url="").exists()
    assert not AuditEvent.objects.filter(object_type="notifications.notificationprofile").exists()


def test_webhook_settings_are_audited_without_the_secret(personas, settings):
    settings.GPUPOSTURE_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]
    lead = personas["security_lead"]
    client = client_for(lead)
    secret = "a-secret-nobody-should-read-back"
    short = client.post(
        URL, {"form": "webhook", "webhook_url": "http://127.0.0.1:9/hook", "webhook_secret": "x"}
    )
    assert short.status_code == 400 and "16 or more characters" in short.content.decode()
    response = client.post(
        URL, {"form": "webhook", "webhook_url": "http://127.0.0.1:9/hook", "webhook_secret": secret}
    )
    assert response.status_code == 302
    event = AuditEvent.objects.get(object_type="notifications.notificationprofile")
    assert event.after == {"webhook_url": "http://127.0.0.1:9/hook", "secret_set": True}
    page = client.get(URL).content.decode()
    assert secret not in page and "secret set" in page
    stored = NotificationProfile.objects.get(user=lead).webhook_secret_sealed
    assert secret not in stored


def test_webhook_channel_needs_a_webhook_first(personas):
    lead = personas["security_lead"]
    response = client_for(lead).post(
        URL,
        {
            "form": "subscribe",
            "kind": "finding_new",
            "min_severity": "critical",
            "by_webhook": "on",
        },
    )
    assert response.status_code == 400
    assert "Set a webhook URL first" in response.content.decode()


def test_removing_the_webhook_removes_webhook_only_subscriptions_audited(personas, settings):
    settings.GPUPOSTURE_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]
    from notifications.services import profile_save, subscription_create

    lead = personas["security_lead"]
    profile_save(user=lead, webhook_url="http://127.0.0.1:9/h", webhook_secret="s" * 16)
    both = subscription_create(user=lead, kind="finding_new", by_email=True, by_webhook=True)
    subscription_create(user=lead, kind="patch_sla", by_email=False, by_webhook=True)
    response = client_for(lead).post(URL, {"form": "webhook", "webhook_url": ""})
    assert response.status_code == 302
    assert list(Subscription.objects.filter(user=lead)) == [both]
    both.refresh_from_db()
    assert (both.by_email, both.by_webhook) == (True, False)
    assert (
        AuditEvent.objects.filter(action="delete", object_type="notifications.subscription").count()
        == 1
    )
    profile = NotificationProfile.objects.get(user=lead)
    assert (profile.webhook_url, profile.webhook_secret_sealed) == ("", "")
