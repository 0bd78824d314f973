"""The demo world shows notifications: the demo users are subscribed and the demo's own
posture run leaves each a delivery log; a tenant viewer's digest names no other tenant."""

from __future__ import annotations

import io
import json

import pytest
from django.core import mail
from django.core.management import call_command

from notifications.models import Delivery, Subscription
from tenants.models import Tenant

pytestmark = pytest.mark.django_db


def test_demo_users_have_subscriptions_and_a_delivery_log(
    client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        call_command("demo", stdout=io.StringIO())
    subscribed = set(Subscription.objects.values_list("user__username", flat=True))
    assert {"security-lead", "platform-engineer", "procurement", "viewer-orbital"} <= subscribed
    log = Delivery.objects.select_related("user")
    senders = {d.user.username for d in log if d.status == "sent"}
    assert {"security-lead", "platform-engineer", "viewer-orbital"} <= senders, senders
    assert len(mail.outbox) == log.count()
    # neo-west's last sync failed: its platform engineer hears of it.
    plat = Delivery.objects.get(user__username="platform-engineer")
    assert "neo-west" in json.dumps(plat.payload)

    viewer = Delivery.objects.filter(user__username="viewer-orbital")
    mine = set(
        Tenant.objects.filter(viewers__username="viewer-orbital").values_list("slug", flat=True)
    )
    others = set(Tenant.objects.exclude(slug__in=mine).values_list("slug", flat=True))
    for delivery in viewer:
        text = json.dumps(delivery.payload)
        for event in delivery.payload["events"]:
            assert set(event["tenants"]) <= mine
        named = [slug for slug in others if f'"{slug}"' in text or f" {slug} " in text]
        assert named == [], named

    client.force_login(plat.user)
    page = client.get("/account/notifications/").content.decode()
    assert "Delivery log" in page and plat.subject in page

    # Re-running the demo subscribes nobody twice.
    count = Subscription.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("demo", stdout=io.StringIO())
    assert Subscription.objects.count() == count
