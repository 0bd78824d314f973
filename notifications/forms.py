"""The settings page's forms: a user's webhook, and one subscription at a time."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django import forms

from gpuposture.base.fetch import FetchError, vet_url
from inventory.models import Cluster
from notifications.delivery import WEBHOOK_ALLOW_SETTING
from notifications.models import EventKind, NotificationProfile, Subscription
from notifications.offers import DAY_KINDS, FINDING_KINDS, offered_kinds
from tenants.models import Tenant

MIN_SECRET = 16
# The filters each kind may be narrowed by.
TENANT_KINDS = frozenset({*FINDING_KINDS, EventKind.APPROVAL_PENDING})
CLUSTER_KINDS = frozenset({*FINDING_KINDS, EventKind.SYNC_PROBLEM})


class WebhookForm(forms.Form):
    webhook_url = forms.CharField(
        label="Webhook URL",
        required=False,
        max_length=500,
        help_text="https, on a public address; empty removes the webhook.",
    )
    webhook_secret = forms.CharField(
        label="Signing secret",
        required=False,
        max_length=200,
        widget=forms.PasswordInput(render_value=False),
        help_text=f"{MIN_SECRET}+ characters; empty keeps the one stored. Stored encrypted.",
    )

    def __init__(self, *args: Any, profile: NotificationProfile | None = None, **kw: Any):
        super().__init__(*args, **kw)
        self.profile = profile

    def clean_webhook_url(self) -> str:
        url = self.cleaned_data["webhook_url"].strip()
        if not url:
            return ""
        if urlsplit(url).scheme not in ("http", "https"):
            raise forms.ValidationError("Only http(s) URLs can receive webhooks.")
        try:
            # The fetch guard's rule (SSRF): https and public addresses, unless an admin
            # allowed the host. Checked again at each delivery (DNS may change).
            vet_url(url, allow_setting=WEBHOOK_ALLOW_SETTING)
        except FetchError as exc:
            raise forms.ValidationError(f"This URL is refused: {exc.reason}.") from exc
        return url

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        url, secret = data.get("webhook_url"), data.get("webhook_secret", "")
        has_secret = bool(self.profile and self.profile.webhook_secret_sealed)
        if secret and len(secret) < MIN_SECRET:
            self.add_error("webhook_secret", f"Use {MIN_SECRET} or more characters.")
        elif url and not secret and not has_secret:
            self.add_error("webhook_secret", "A webhook needs a signing secret.")
        return data


class SubscriptionForm(forms.ModelForm):
    class Meta:
        model = Subscription
        fields = ["kind", "min_severity", "tenant", "cluster", "days", "by_email", "by_webhook"]
        labels = {
            "min_severity": "Severity",
            "days": "N days",
            "by_email": "Email",
            "by_webhook": "Webhook",
        }

    def __init__(self, *args: Any, user: Any, profile: NotificationProfile | None, **kw: Any):
        super().__init__(*args, **kw)
        self.user, self.profile = user, profile
        offered = set(offered_kinds(user))
        self.fields["kind"].choices = [c for c in EventKind.choices if c[0] in offered]
        # Only what the user may see can be chosen (a viewer's own tenants and clusters).
        tenants = Tenant.objects.visible_to(user).filter(is_system=False).order_by("slug")
        self.fields["tenant"].queryset = tenants
        self.fields["tenant"].empty_label = "any tenant"
        self.fields["cluster"].queryset = Cluster.objects.visible_to(user).order_by("name")
        self.fields["cluster"].empty_label = "any cluster"
        self.fields["days"].required = False
        self.fields["min_severity"].required = False

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        kind = data.get("kind")
        if not data.get("by_email") and not data.get("by_webhook"):
            raise forms.ValidationError("Choose email, webhook or both.")
        if data.get("by_email") and not self.user.email:
            self.add_error("by_email", "Your account has no email address.")
        if data.get("by_webhook") and not (self.profile and self.profile.webhook_url):
            self.add_error("by_webhook", "Set a webhook URL first.")
        days = data.get("days")
        if kind in DAY_KINDS and (days is None or not 1 <= days <= 365):
            self.add_error("days", "Between 1 and 365 days.")
        data["min_severity"] = data.get("min_severity") or Subscription.MinSeverity.HIGH
        # Filters a kind cannot use are dropped rather than stored as a promise not kept.
        if kind not in TENANT_KINDS:
            data["tenant"] = None
        if kind not in CLUSTER_KINDS:
            data["cluster"] = None
        if kind not in DAY_KINDS:
            data["days"] = Subscription._meta.get_field("days").default
        return data
