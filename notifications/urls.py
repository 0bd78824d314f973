from __future__ import annotations

from django.urls import path

from notifications import views

urlpatterns = [
    path("", views.notification_settings, name="notification-settings"),
    path(
        "subscriptions/<int:pk>/delete/",
        views.subscription_delete_view,
        name="notification-subscription-delete",
    ),
]
