"""API tokens in the admin: read only, with one action, revoke (superusers; audited).
Two-factor authenticators: listed and removable, never shown or edited (their secrets)."""

from __future__ import annotations

from typing import Any

from allauth.mfa.models import Authenticator
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.services import token_revoke
from gpuposture.base.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "user",
        "prefix",
        "scope",
        "created_at",
        "expires_at",
        "last_used_at",
        "last_used_ip",
        "revoked_at",
    )
    list_filter = ("scope", "revoked_at")
    search_fields = ("name", "prefix", "user__username")
    # The hash is left out: useless to a person, and one less thing to leak.
    fields = readonly_fields = (
        "user",
        "name",
        "prefix",
        "scope",
        "created_at",
        "expires_at",
        "last_used_at",
        "last_used_ip",
        "revoked_at",
    )
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a key is shown once to its owner: tokens are made on /account/tokens/

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoked rows stay: they are the token's history

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    @admin.action(description="Revoke the selected tokens", permissions=["revoke"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        active = queryset.filter(revoked_at__isnull=True)
        count = 0
        for token in active:
            token_revoke(token=token, user=request.user)
            count += 1
        self.message_user(request, f"{count} token(s) revoked.", messages.SUCCESS)


# allauth's own admin shows an authenticator's data (the TOTP secret) in an editable box.
admin.site.unregister(Authenticator)


@admin.register(Authenticator)
class AuthenticatorAdmin(admin.ModelAdmin):
    raw_id_fields = ("user",)
    list_display = ("user", "type", "created_at", "last_used_at")
    list_filter = ("type", "created_at", "last_used_at")
    search_fields = ("user__username",)
    # No `data`: a secret is shown once, to its owner, at enrolment. Removing a lost device
    # stays possible; its owner then enrols a new one.
    fields = readonly_fields = ("user", "type", "created_at", "last_used_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # an authenticator is enrolled by its owner, on /accounts/2fa/

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
