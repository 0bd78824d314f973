"""Issue 19 item 14, "Done means": a subscribed user receives a signed webhook (a real
receiver on 127.0.0.1) and an email (locmem) for a new critical finding, in ONE digest per
run; a tenant viewer's digest names no other tenant; retries back off; bad input refused."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from notifications.delivery import deliveries_sweep, delivery_attempt
from notifications.models import Delivery, EventKind, NotificationProfile, SentEvent
from notifications.secrets import SIGNATURE_HEADER, signature_valid
from notifications.services import profile_save, subscription_create
from posture.rescore import rescore_now
from tests.conftest import load_json, world_snapshot_path
from tests.notifications.receiver import Receiver

SECRET = "a-shared-secret-of-enough-length"


@pytest.fixture(autouse=True)
def _mail(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.GPUPOSTURE_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.GPUPOSTURE_NOTIFY_RETRY_BACKOFF = [1, 2]


@pytest.fixture
def unscored_world(personas):
    """The small world (alpha and beta time-sliced on one GPU: SHARE-001, critical), synced
    but not yet scored: the first score finds every finding new."""
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document

    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    cluster = cluster_get_or_create(name="lab")
    cluster_sync_from_snapshot(cluster=cluster, paths=[world_snapshot_path()])
    for name in ("security_lead", "viewer_alpha"):
        personas[name].email = f"{personas[name].username}@example.com"
        personas[name].save()
    return cluster


def score(capture) -> None:
    with capture(execute=True):
        rescore_now()


def test_webhook_and_email_for_a_new_critical_finding(
    personas, unscored_world, django_capture_on_commit_callbacks
):
    lead = personas["security_lead"]
    with Receiver() as receiver:
        profile_save(user=lead, webhook_url=receiver.url, webhook_secret=SECRET)
        subscription_create(
            user=lead,
            kind=EventKind.FINDING_NEW,
            min_severity="critical",
            by_email=True,
            by_webhook=True,
        )
        score(django_capture_on_commit_callbacks)

        assert len(receiver.requests) == 1  # one digest for the run, not one per finding
        request = receiver.requests[0]
        body = request["body"]
        signed = request["headers"][SIGNATURE_HEADER]
        assert signature_valid(SECRET, body, signed)
        assert not signature_valid("another-secret-entirely", body, signed)
        digest = json.loads(body)
        checks = {e["title"].split()[0] for e in digest["events"]}
        assert "SHARE-001" in checks
        assert {e["severity"] for e in digest["events"]} == {"critical"}
        assert digest["delivery"] == int(request["headers"]["X-Gpuposture-Delivery"])

    assert len(mail.outbox) == 1
    email = mail.outbox[0]
    assert email.to == ["sec@example.com"]
    assert "critical" in email.subject
    assert "SHARE-001" in email.body
    log = Delivery.objects.filter(user=lead).order_by("channel")
    assert [(d.channel, d.status, d.attempts) for d in log] == [
        ("email", "sent", 1),
        ("webhook", "sent", 1),
    ]
    # The secret is never stored in clear.
    sealed = NotificationProfile.objects.get(user=lead).webhook_secret_sealed
    assert SECRET not in sealed and sealed.startswith("fernet1:")

    # A second run finds nothing new: no second digest.
    score(django_capture_on_commit_callbacks)
    assert len(mail.outbox) == 1
    assert Delivery.objects.filter(user=lead).count() == 2


def test_tenant_viewers_digest_names_no_other_tenant(
    personas, unscored_world, django_capture_on_commit_callbacks
):
    viewer, lead = personas["viewer_alpha"], personas["security_lead"]
    for user in (viewer, lead):
        subscription_create(user=user, kind=EventKind.FINDING_NEW, min_severity="high")
    score(django_capture_on_commit_callbacks)

    by_user = {m.to[0]: m for m in mail.outbox}
    theirs, leads = by_user["viewer-alpha@example.com"], by_user["sec@example.com"]
    payload = Delivery.objects.get(user=viewer).payload
    text = theirs.subject + theirs.body + json.dumps(payload)
    assert "SHARE-001" in text  # the shared GPU is reported to alpha...
    for other in ("beta", "Beta Corp", "beta-ops"):  # ...never who alpha shares it with
        assert other not in text
    assert "(another tenant" in text or all(e["tenants"] == ["alpha"] for e in payload["events"])
    # The lead's digest of the same run does name beta: the check above can fail.
    assert "beta" in leads.body


def test_webhook_retries_with_backoff_then_succeeds(
    personas, unscored_world, django_capture_on_commit_callbacks
):
    lead = personas["security_lead"]
    with Receiver(statuses=[503, 502]) as receiver:
        profile_save(user=lead, webhook_url=receiver.url, webhook_secret=SECRET)
        subscription_create(user=lead, kind=EventKind.FINDING_NEW, by_email=False, by_webhook=True)
        score(django_capture_on_commit_callbacks)
        delivery = Delivery.objects.get(user=lead)
        assert (delivery.status, delivery.attempts) == ("retrying", 1)
        assert "HTTP 503" in delivery.last_error
        assert delivery.next_attempt_at > timezone.now() - timedelta(seconds=5)
        # Not due yet: the sweep leaves it to the task's own retry.
        assert deliveries_sweep() == []
        later = timezone.now() + timedelta(minutes=10)
        assert deliveries_sweep(now=later) == [delivery.pk]  # attempt 2: 502
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts) == ("retrying", 2)
        assert deliveries_sweep(now=later + timedelta(minutes=10)) == [delivery.pk]
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts, delivery.last_error) == ("sent", 3, "")
        assert len(receiver.requests) == 3
        assert len({r["body"] for r in receiver.requests}) == 1  # the same signed digest


def test_the_task_asks_celery_to_retry_after_the_backoff_step(personas, monkeypatch):
    """With a broker, the task itself schedules the retry `countdown` seconds later."""
    from notifications import tasks
    from notifications.delivery import Outcome

    monkeypatch.setattr(
        tasks, "delivery_attempt", lambda delivery_id: Outcome("retrying", retry_in=120)
    )
    asked = {}

    def retry(**kw):
        asked.update(kw)
        return RuntimeError("retry scheduled")

    monkeypatch.setattr(tasks.deliver, "retry", retry)
    request = tasks.deliver.request_stack
    request.push(type("Req", (), {"is_eager": False, "called_directly": False})())
    try:
        with pytest.raises(RuntimeError, match="retry scheduled"):
            tasks.deliver.run(1)
    finally:
        request.pop()
    assert asked == {"countdown": 120}


def test_webhook_gives_up_after_the_last_backoff_step(personas, unscored_world, settings):
    lead = personas["security_lead"]
    with Receiver(statuses=[500, 500, 500, 500]) as receiver:
        profile_save(user=lead, webhook_url=receiver.url, webhook_secret=SECRET)
        delivery = Delivery.objects.create(
            user=lead, channel="webhook", trigger="t", subject="s", payload={"events": []}
        )
        first = delivery_attempt(delivery_id=delivery.pk)
        second = delivery_attempt(delivery_id=delivery.pk)
        assert (first.retry_in, second.retry_in) == (1, 2)  # the backoff steps, in order
        third = delivery_attempt(delivery_id=delivery.pk)
        assert third.status == "failed" and third.retry_in is None
        delivery.refresh_from_db()
        assert delivery.attempts == 3 and "HTTP 500" in delivery.last_error
        assert delivery_attempt(delivery_id=delivery.pk) is None  # done: nothing to claim
        assert len(receiver.requests) == 3


def test_a_client_error_is_not_retried(personas, unscored_world):
    lead = personas["security_lead"]
    with Receiver(statuses=[404]) as receiver:
        profile_save(user=lead, webhook_url=receiver.url, webhook_secret=SECRET)
        delivery = Delivery.objects.create(
            user=lead, channel="webhook", trigger="t", subject="s", payload={"events": []}
        )
        outcome = delivery_attempt(delivery_id=delivery.pk)
    assert outcome.status == "failed" and outcome.retry_in is None
    assert "HTTP 404" in Delivery.objects.get(pk=delivery.pk).last_error


def test_events_are_sent_once(personas, unscored_world, django_capture_on_commit_callbacks):
    lead = personas["security_lead"]
    subscription_create(user=lead, kind=EventKind.FINDING_NEW, min_severity="high")
    subscription_create(user=lead, kind=EventKind.FINDING_NEW, min_severity="critical")
    score(django_capture_on_commit_callbacks)
    assert len(mail.outbox) == 1  # two subscriptions, one digest
    keys = SentEvent.objects.filter(user=lead).values_list("key", flat=True)
    assert len(keys) == len(set(keys)) == Delivery.objects.get(user=lead).event_count


def test_a_redirect_is_not_followed(personas, unscored_world):
    """Following it would send the signed digest where its owner did not say."""
    lead = personas["security_lead"]
    with Receiver(statuses=[302]) as receiver:
        profile_save(user=lead, webhook_url=receiver.url, webhook_secret=SECRET)
        delivery = Delivery.objects.create(
            user=lead, channel="webhook", trigger="t", subject="s", payload={"events": []}
        )
        outcome = delivery_attempt(delivery_id=delivery.pk)
        assert len(receiver.requests) == 1
    assert outcome.status == "failed"
    assert "HTTP 302" in Delivery.objects.get(pk=delivery.pk).last_error


def test_a_webhook_that_now_resolves_inside_is_refused_at_delivery(personas, settings):
    """The URL was vetted when saved; each delivery vets it again (DNS may have changed)."""
    lead = personas["security_lead"]
    settings.GPUPOSTURE_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]
    profile_save(user=lead, webhook_url="http://127.0.0.1:9/hook", webhook_secret=SECRET)
    settings.GPUPOSTURE_WEBHOOK_ALLOWED_HOSTS = []  # the admin withdrew the exception
    delivery = Delivery.objects.create(
        user=lead, channel="webhook", trigger="t", subject="s", payload={"events": []}
    )
    delivery_attempt(delivery_id=delivery.pk)
    assert "plain http is refused" in Delivery.objects.get(pk=delivery.pk).last_error
