"""Sending one delivery: email through Django's backend, or a signed webhook POST.

A worker claims the delivery with a conditional UPDATE (STYLE rule 4: a redelivered task or
a second worker finds it claimed and does nothing); a claim expires after CLAIM_SECONDS, so
a worker killed mid-send leaves it to the sweep. A transient failure (network, timeout,
HTTP 5xx or 429, SMTP) is retried after the next step of
GPUPOSTURE_NOTIFY_RETRY_BACKOFF; a permanent one (another 4xx, no URL or address set) or
the last retry marks it failed. Every attempt leaves its status, count and error on the row:
the delivery log on the settings page."""

from __future__ import annotations

import json
import logging
import smtplib
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from gpuposture.base.fetch import FetchError, post
from gpuposture.base.queue import QueueUnavailable
from notifications.models import Channel, Delivery, NotificationProfile
from notifications.queue import enqueue_delivery
from notifications.secrets import SIGNATURE_HEADER, SecretUnreadable, secret_unseal, signature

logger = logging.getLogger(__name__)

CLAIM_SECONDS = 120
WEBHOOK_ALLOW_SETTING = "GPUPOSTURE_WEBHOOK_ALLOWED_HOSTS"
_LIVE = (Delivery.Status.PENDING, Delivery.Status.RETRYING)


class Permanent(Exception):
    """Retrying cannot help: the message says what the user must fix."""


class Transient(Exception):
    """A failure a later attempt may not meet."""


@dataclass(frozen=True)
class Outcome:
    status: str
    retry_in: int | None = None  # seconds until the next attempt, when one is due


def backoff() -> list[int]:
    return list(settings.GPUPOSTURE_NOTIFY_RETRY_BACKOFF)


def deliveries_enqueue(deliveries: list[Delivery]) -> None:
    """Queue each delivery once the transaction that recorded it commits."""
    for delivery in deliveries:
        transaction.on_commit(lambda pk=delivery.pk: _enqueue(pk))


def _enqueue(pk: int, countdown: float | None = None) -> None:
    try:
        enqueue_delivery(delivery_id=pk, countdown=countdown)
    except QueueUnavailable:
        logger.warning("notification %s waits for the sweep (queue unreachable)", pk)


def delivery_attempt(*, delivery_id: int, now: datetime | None = None) -> Outcome | None:
    """One attempt at one delivery; None when it is not ours to send (gone, done, claimed)."""
    now = now or timezone.now()
    claimable = Q(status__in=_LIVE) | Q(status=Delivery.Status.SENDING, claimed_until__lt=now)
    claimed = Delivery.objects.filter(claimable, pk=delivery_id).update(
        status=Delivery.Status.SENDING,
        attempts=F("attempts") + 1,
        claimed_until=now + timedelta(seconds=CLAIM_SECONDS),
    )
    if claimed != 1:
        return None
    delivery = Delivery.objects.select_related("user").get(pk=delivery_id)
    try:
        _send(delivery)
    except Permanent as exc:
        return _finish(delivery, Delivery.Status.FAILED, str(exc))
    except Transient as exc:
        steps = backoff()
        if delivery.attempts > len(steps):
            return _finish(delivery, Delivery.Status.FAILED, f"gave up: {exc}")
        wait = steps[delivery.attempts - 1]
        _finish(delivery, Delivery.Status.RETRYING, str(exc), next_at=now + timedelta(seconds=wait))
        return Outcome(Delivery.Status.RETRYING, retry_in=wait)
    return _finish(delivery, Delivery.Status.SENT, "")


def _finish(
    delivery: Delivery, status: str, error: str, next_at: datetime | None = None
) -> Outcome:
    delivery.status, delivery.last_error = status, error[:500]
    delivery.next_attempt_at, delivery.claimed_until = next_at, None
    if status == Delivery.Status.SENT:
        delivery.sent_at = timezone.now()
    delivery.save(
        update_fields=["status", "last_error", "next_attempt_at", "claimed_until", "sent_at"]
    )
    return Outcome(status)


def _send(delivery: Delivery) -> None:
    if delivery.channel == Channel.EMAIL:
        _send_email(delivery)
    else:
        _send_webhook(delivery)


def _send_email(delivery: Delivery) -> None:
    from notifications.digest import digest_text  # digest imports this module

    address = delivery.user.email
    if not address:
        raise Permanent("your account has no email address")
    try:
        send_mail(
            delivery.subject,
            digest_text(delivery.payload),
            settings.DEFAULT_FROM_EMAIL,
            [address],
        )
    except (smtplib.SMTPException, OSError) as exc:
        raise Transient(f"email not sent: {exc}") from exc


def webhook_body(delivery: Delivery) -> bytes:
    """The exact bytes posted and signed: the digest and its delivery id (receivers may use it
    to drop a retry they already processed)."""
    body = {**delivery.payload, "delivery": delivery.pk}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def _send_webhook(delivery: Delivery) -> None:
    profile = NotificationProfile.objects.filter(user=delivery.user).first()
    if profile is None or not profile.webhook_url or not profile.webhook_secret_sealed:
        raise Permanent("no webhook URL and secret are set")
    try:
        secret = secret_unseal(profile.webhook_secret_sealed)
    except SecretUnreadable as exc:
        raise Permanent(str(exc)) from exc
    body = webhook_body(delivery)
    headers = {
        "Content-Type": "application/json",
        SIGNATURE_HEADER: signature(secret, body),
        "X-Gpuposture-Delivery": str(delivery.pk),
    }
    try:
        post(profile.webhook_url, body=body, headers=headers, allow_setting=WEBHOOK_ALLOW_SETTING)
    except FetchError as exc:
        if exc.status is not None and exc.status < 500 and exc.status != 429:
            raise Permanent(str(exc)) from exc
        raise Transient(str(exc)) from exc


def deliveries_sweep(*, now: datetime | None = None) -> list[int]:
    """Re-queue deliveries whose task was lost (queue down, worker killed): due for a retry
    or left pending for longer than a claim lasts."""
    now = now or timezone.now()
    grace = now - timedelta(seconds=CLAIM_SECONDS)
    lost = Delivery.objects.filter(
        Q(status=Delivery.Status.RETRYING, next_attempt_at__lt=grace)
        | Q(status=Delivery.Status.PENDING, created_at__lt=grace)
        | Q(status=Delivery.Status.SENDING, claimed_until__lt=now)
    ).values_list("pk", flat=True)
    ids = list(lost[:500])
    for pk in ids:
        _enqueue(pk)
    return ids
