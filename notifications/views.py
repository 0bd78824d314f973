"""The per-user notification settings page: webhook, subscriptions, delivery log."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from gpuposture.base.roles import has_any_role
from notifications.forms import SubscriptionForm, WebhookForm
from notifications.models import Delivery, NotificationProfile, Subscription
from notifications.offers import offered_kinds
from notifications.services import profile_save, subscription_create, subscription_delete

LOG_ROWS = 50


def _require_role(request: HttpRequest) -> None:
    if not has_any_role(request.user):
        raise PermissionDenied("Notifications need a gpuposture role; ask an administrator.")


@never_cache
def notification_settings(request: HttpRequest) -> HttpResponse:
    _require_role(request)
    user = request.user
    profile = NotificationProfile.objects.filter(user=user).first()
    posted = request.POST if request.method == "POST" else None
    form_name = request.POST.get("form") if posted else None
    webhook_form = WebhookForm(
        posted if form_name == "webhook" else None,
        profile=profile,
        initial={"webhook_url": profile.webhook_url if profile else ""},
    )
    sub_form = SubscriptionForm(
        posted if form_name == "subscribe" else None, user=user, profile=profile
    )
    if form_name == "webhook" and webhook_form.is_valid():
        profile_save(user=user, **webhook_form.cleaned_data)
        messages.success(request, "Webhook settings saved.")
        return redirect("notification-settings")
    if form_name == "subscribe" and sub_form.is_valid():
        data = sub_form.cleaned_data
        subscription_create(user=user, **data)
        messages.success(request, "Subscribed.")
        return redirect("notification-settings")
    failed = form_name in ("webhook", "subscribe")
    context = {
        "profile": profile,
        "webhook_form": webhook_form,
        "sub_form": sub_form,
        "offered": offered_kinds(user),
        "subscriptions": Subscription.objects.visible_to(user).select_related("tenant", "cluster"),
        "deliveries": Delivery.objects.filter(user=user)[:LOG_ROWS],
    }
    return render(request, "notifications/settings.html", context, status=400 if failed else 200)


@require_POST
def subscription_delete_view(request: HttpRequest, pk: int) -> HttpResponse:
    _require_role(request)
    # Another user's subscription is "not found": its existence is not yours to learn.
    sub = get_object_or_404(Subscription, pk=pk, user=request.user)
    subscription_delete(user=request.user, subscription=sub)
    messages.success(request, "Unsubscribed.")
    return redirect("notification-settings")
