"""The demo users' subscriptions: what each role of the demo would sign up for. Email only
(the console backend prints it in the demo); the digests then come from the demo's own
posture run, like any other."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from notifications.models import EventKind, Subscription
from notifications.offers import offered_kinds
from notifications.services import subscription_create

ACTOR = "manage.py demo"
# username -> (kind, options) it subscribes to.
DEMO_SUBSCRIPTIONS: dict[str, list[tuple[str, dict[str, object]]]] = {
    "security-lead": [
        (EventKind.FINDING_NEW, {"min_severity": "high"}),
        (EventKind.ACCEPTANCE_EXPIRING, {"days": 14}),
    ],
    "platform-engineer": [
        (EventKind.SYNC_PROBLEM, {}),
        (EventKind.APPROVAL_PENDING, {"days": 2}),
        (EventKind.PATCH_SLA, {}),
    ],
    "procurement": [(EventKind.ASSESSMENT_RENEWAL, {"days": 90})],
    "auditor": [(EventKind.FINDING_NEW, {"min_severity": "critical"})],
    "viewer-orbital": [
        (EventKind.FINDING_NEW, {"min_severity": "high"}),
        (EventKind.ACCEPTANCE_EXPIRING, {"days": 14}),
    ],
    "viewer-clinical": [(EventKind.FINDING_NEW, {"min_severity": "critical"})],
}


def demo_subscriptions_ensure() -> int:
    """Give the demo users an address and their subscriptions (once: a re-run adds none).
    Returns the subscriptions created."""
    created = 0
    users = get_user_model().objects.filter(username__in=DEMO_SUBSCRIPTIONS)
    for user in users:
        if not user.email:
            user.email = f"{user.username}@demo.example.com"
            user.save(update_fields=["email"])
        offered = set(offered_kinds(user))
        for kind, options in DEMO_SUBSCRIPTIONS[user.username]:
            if kind not in offered or Subscription.objects.filter(user=user, kind=kind).exists():
                continue
            subscription_create(user=user, actor=ACTOR, kind=kind, by_email=True, **options)
            created += 1
    return created
