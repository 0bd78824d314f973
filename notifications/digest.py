"""Digests: after each posture run (posture.run_hooks) and on beat's periodic checks, each
subscribed user gets at most ONE delivery per channel, holding every event their
subscriptions found that no earlier digest sent them. Nothing in it names what the user's
role and tenant scope may not see (notifications.collect narrows every event)."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from notifications.collect import Event, Viewer, events_collect
from notifications.delivery import deliveries_enqueue
from notifications.models import Channel, Delivery, NotificationProfile, SentEvent
from notifications.offers import offered_kinds
from posture.models import PostureRun

logger = logging.getLogger(__name__)

MAX_DIGEST_EVENTS = 200
SEVERITY_RANK = {"critical": 0, "high": 1, "medium": 2, "low": 3, "": 4}


def digests_after_run(run: PostureRun) -> int:
    """posture's after-run listener: one digest per subscribed user for this run."""
    return digests_send(trigger=f"posture run {run.pk}")


def digests_send(*, trigger: str, now: datetime | None = None) -> int:
    """Send every subscribed user their digest; returns the deliveries created."""
    now = now or timezone.now()
    users = get_user_model().objects.filter(
        is_active=True, notification_subscriptions__isnull=False
    )
    created = 0
    for user in users.distinct().order_by("pk"):
        created += len(digest_for_user(user=user, trigger=trigger, now=now))
    return created


@transaction.atomic
def digest_for_user(*, user: Any, trigger: str, now: datetime) -> list[Delivery]:
    """Collect, drop what was sent before, and record one delivery per channel."""
    # Locks the user's settings row: a run's digest and beat's at the same moment would
    # otherwise both find the same events unsent and send them twice.
    NotificationProfile.objects.get_or_create(user=user)
    NotificationProfile.objects.select_for_update().get(user=user)
    offered = set(offered_kinds(user))
    viewer = Viewer.of(user)
    by_channel: dict[str, dict[str, Event]] = {Channel.EMAIL: {}, Channel.WEBHOOK: {}}
    # A subscription whose kind the user's role no longer allows is kept but finds nothing.
    for sub in user.notification_subscriptions.filter(kind__in=offered):
        events = events_collect(sub, viewer, now=now)
        for channel, wanted in ((Channel.EMAIL, sub.by_email), (Channel.WEBHOOK, sub.by_webhook)):
            if wanted:
                by_channel[channel].update((e.key, e) for e in events)
    keys = {key for events in by_channel.values() for key in events}
    if not keys:
        return []
    sent = set(SentEvent.objects.filter(user=user, key__in=keys).values_list("key", flat=True))
    deliveries = []
    for channel, events in by_channel.items():
        fresh = [e for key, e in events.items() if key not in sent]
        if fresh:
            deliveries.append(_delivery(user, channel, trigger, fresh, now))
    SentEvent.objects.bulk_create(
        [SentEvent(user=user, key=key) for key in sorted(keys - sent)], ignore_conflicts=True
    )
    deliveries_enqueue(deliveries)
    return deliveries


def _delivery(user: Any, channel: str, trigger: str, events: list[Event], now: datetime):
    events.sort(key=lambda e: (SEVERITY_RANK.get(e.severity, 4), e.kind, e.key))
    shown = events[:MAX_DIGEST_EVENTS]
    critical = sum(1 for e in events if e.severity == "critical")
    subject = f"gpuposture: {len(events)} new notification{'s' if len(events) != 1 else ''}"
    if critical:
        subject += f" ({critical} critical)"
    payload = {
        "type": "gpuposture.digest",
        "recipient": user.get_username(),
        "trigger": trigger,
        "generated_at": now.isoformat(),
        "base_url": settings.GPUPOSTURE_BASE_URL,
        "events": [e.as_json() for e in shown],
        "more": len(events) - len(shown),
    }
    return Delivery.objects.create(
        user=user,
        channel=channel,
        trigger=trigger[:60],
        subject=subject,
        payload=payload,
        event_count=len(events),
    )


def digest_text(payload: dict[str, Any]) -> str:
    """The email body: one line per event, with a link to the page that shows it."""
    base = payload.get("base_url") or ""
    lines = [f"gpuposture notifications ({payload.get('trigger', '')}):", ""]
    for e in payload.get("events", []):
        where = ", ".join(p for p in (e.get("cluster"), ", ".join(e.get("tenants") or [])) if p)
        severity = f"[{e['severity']}] " if e.get("severity") else ""
        lines.append(f"- {severity}{e['title']}" + (f" ({where})" if where else ""))
        if e.get("path"):
            lines.append(f"  {base}{e['path']}")
    if payload.get("more"):
        lines.append(f"... and {payload['more']} more on gpuposture.")
    lines += ["", "Change what you receive at " + base + "/account/notifications/"]
    return "\n".join(lines) + "\n"
