"""Writes of a user's notification settings; each change is an audit event (never the
webhook secret itself: only whether one is set)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from audit.services import Actor, audit_record
from notifications.models import NotificationProfile, Subscription
from notifications.secrets import secret_seal


def _profile_audit(profile: NotificationProfile) -> dict[str, Any]:
    return {"webhook_url": profile.webhook_url, "secret_set": bool(profile.webhook_secret_sealed)}


@transaction.atomic
def profile_save(*, user: Any, webhook_url: str, webhook_secret: str = "") -> NotificationProfile:
    """Set (or, with an empty URL, remove) the user's webhook. An empty secret keeps the one
    stored; removing the URL removes the secret and the subscriptions' webhook channel."""
    profile, _ = NotificationProfile.objects.select_for_update().get_or_create(user=user)
    before = _profile_audit(profile)
    profile.webhook_url = webhook_url
    if not webhook_url:
        profile.webhook_secret_sealed = ""
        # Email stays where a subscription had it; the others have no channel left and go
        # (each an audit event of its own).
        for sub in Subscription.objects.filter(user=user, by_email=False):
            subscription_delete(user=user, subscription=sub)
        Subscription.objects.filter(user=user).update(by_webhook=False)
    elif webhook_secret:
        profile.webhook_secret_sealed = secret_seal(webhook_secret)
    profile.save()
    after = _profile_audit(profile)
    if after != before:
        audit_record(actor=user, action="update", obj=profile, before=before, after=after)
    return profile


def _sub_audit(sub: Subscription) -> dict[str, Any]:
    return {
        "kind": sub.kind,
        "min_severity": sub.min_severity,
        "days": sub.days,
        "tenant": sub.tenant.slug if sub.tenant else None,
        "cluster": sub.cluster.name if sub.cluster else None,
        "by_email": sub.by_email,
        "by_webhook": sub.by_webhook,
    }


@transaction.atomic
def subscription_create(*, user: Any, actor: Actor = None, **fields: Any) -> Subscription:
    """`actor`: who subscribed `user` (the user themselves unless given, e.g. the demo)."""
    sub = Subscription.objects.create(user=user, **fields)
    audit_record(actor=actor or user, action="create", obj=sub, after=_sub_audit(sub))
    return sub


@transaction.atomic
def subscription_delete(*, user: Any, subscription: Subscription) -> None:
    before, pk, shown = _sub_audit(subscription), subscription.pk, str(subscription)
    subscription.delete()
    audit_record(
        actor=user,
        action="delete",
        object_type="notifications.subscription",
        object_id=pk,
        object_repr=shown,
        before=before,
    )
