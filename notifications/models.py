"""Per-user notification settings, subscriptions, and the log of what was delivered."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from gpuposture.base.querysets import Scope, ScopedQuerySet
from inventory.models import Cluster
from tenants.models import Tenant


class EventKind(models.TextChoices):
    FINDING_NEW = "finding_new", "New critical or high finding"
    PATCH_SLA = "patch_sla", "Patch SLA breached (STACK-005)"
    SYNC_PROBLEM = "sync_problem", "Cluster sync failed or stale"
    APPROVAL_PENDING = "approval_pending", "Sharing request pending longer than N days"
    ACCEPTANCE_EXPIRING = "acceptance_expiring", "Risk acceptance expiring within N days"
    ASSESSMENT_RENEWAL = "assessment_renewal", "Provider assessment due for renewal within N days"


class Channel(models.TextChoices):
    EMAIL = "email", "Email"
    WEBHOOK = "webhook", "Webhook"


class NotificationProfile(models.Model):
    """A user's webhook endpoint; its signing secret is stored sealed (notifications.secrets)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_profile"
    )
    webhook_url = models.URLField(max_length=500, blank=True)
    webhook_secret_sealed = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"notification settings of {self.user}"


class SubscriptionQuerySet(ScopedQuerySet):
    # A subscription is its subscriber's: not even a security lead reads another user's.
    scope = Scope(owner="user")


class Subscription(models.Model):
    """One thing a user wants to hear about, optionally narrowed to a tenant or a cluster."""

    class MinSeverity(models.TextChoices):
        CRITICAL = "critical", "critical only"
        HIGH = "high", "critical and high"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="notification_subscriptions",
    )
    kind = models.CharField(max_length=24, choices=EventKind.choices)
    min_severity = models.CharField(
        max_length=10, choices=MinSeverity.choices, default=MinSeverity.HIGH
    )
    tenant = models.ForeignKey(Tenant, null=True, blank=True, on_delete=models.CASCADE)
    cluster = models.ForeignKey(Cluster, null=True, blank=True, on_delete=models.CASCADE)
    days = models.PositiveSmallIntegerField(default=7)
    by_email = models.BooleanField(default=True)
    by_webhook = models.BooleanField(default=False)
    # Events older than the subscription are not news to its owner: nothing before this is sent.
    created_at = models.DateTimeField(auto_now_add=True)

    objects = SubscriptionQuerySet.as_manager()

    class Meta:
        ordering = ["kind", "pk"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(by_email=True) | models.Q(by_webhook=True),
                name="notifications_subscription_has_channel",
            ),
            models.CheckConstraint(
                condition=models.Q(days__gte=1) & models.Q(days__lte=365),
                name="notifications_subscription_days_range",
            ),
        ]

    def __str__(self) -> str:
        # The kind's label says "N days"; this subscription has a number.
        days = f"{self.days} day" + ("" if self.days == 1 else "s")
        return f"{self.user}: {self.get_kind_display().replace('N days', days)}"


class Delivery(models.Model):
    """One digest sent (or being sent) to one user over one channel: the delivery log."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SENDING = "sending", "Sending"
        RETRYING = "retrying", "Waiting to retry"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_deliveries"
    )
    channel = models.CharField(max_length=10, choices=Channel.choices)
    trigger = models.CharField(max_length=60)  # "posture run 12", "periodic checks"
    subject = models.CharField(max_length=200)
    payload = models.JSONField(default=dict)  # the digest, already narrowed to the recipient
    event_count = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["user", "-created_at"], name="notif_delivery_user_idx")]

    def __str__(self) -> str:
        return f"{self.channel} to {self.user}: {self.subject}"


class SentEvent(models.Model):
    """An event already put in one of the user's digests, so no later digest repeats it."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=120)  # "finding:42", "approval:7", ...
    sent_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="notifications_sent_event_once")
        ]

    def __str__(self) -> str:
        return f"{self.key} to {self.user}"
