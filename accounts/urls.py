"""Account pages of gpuposture's own (allauth's are under /accounts/)."""

from __future__ import annotations

from django.urls import path

from accounts import views

urlpatterns = [
    path("tokens/", views.token_list, name="token-list"),
    path("tokens/<int:pk>/revoke/", views.token_revoke_view, name="token-revoke"),
]
