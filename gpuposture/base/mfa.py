"""Two-factor authentication required per role (GPUPOSTURE_MFA_REQUIRED_ROLES).

A signed-in user who holds such a role (or is a superuser, when "superuser" is listed) and has
neither a TOTP app nor a security key is sent to the two-factor setup page, whatever page they
ask for; the API answers their session's calls with 403. allauth's login flow asks every user
who has an authenticator for a code (or key) at each sign-in, single sign-on included, so "has
an authenticator" means "signed in with two factors"; the admin's login redirects to allauth's.
An IdP that reports two factors in the ID token's `amr` counts (gpuposture.base.auth sets
IDP_MFA_SESSION_KEY at sign-in). API tokens are the automation path and are not
affected (a token call is recognised by its Authorization header).

Also here: the TOTP helpers of the demo (`manage.py demo`, `manage.py totp_code`), so the
demo uses allauth's internal TOTP module in one place only.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from allauth.account.authentication import get_authentication_records
from allauth.mfa.adapter import get_adapter as get_mfa_adapter
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import (
    TOTP,
    format_hotp_value,
    generate_totp_secret,
    hotp_value,
)
from allauth.mfa.utils import decrypt, is_mfa_enabled
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import reverse

from gpuposture.base.roles import user_roles

SUPERUSER = "superuser"
# Set by gpuposture.base.auth at sign-in when the IdP reported two factors (amr).
IDP_MFA_SESSION_KEY = "gpuposture.mfa_by_idp"
SECOND_FACTORS = (Authenticator.Type.TOTP, Authenticator.Type.WEBAUTHN)
API_MESSAGE = (
    "Set up two-factor authentication first: your role requires it. Sign in to the web "
    "interface and add an authenticator app or a security key, or use an API token."
)
PAGE_MESSAGE = (
    "Your role requires two-factor authentication. Add an authenticator app or a security "
    "key to continue."
)


def mfa_required(user: AbstractBaseUser | AnonymousUser) -> bool:
    """Whether the user's roles require a second factor (GPUPOSTURE_MFA_REQUIRED_ROLES)."""
    required = set(settings.GPUPOSTURE_MFA_REQUIRED_ROLES)
    if not required or not user.is_authenticated:
        return False
    if user.is_superuser and SUPERUSER in required:
        return True
    return bool(user_roles(user) & required)


def mfa_satisfied(request: HttpRequest, user: AbstractBaseUser) -> bool:
    """The identity provider vouched for a second factor, this session passed one at sign-in
    (allauth's record; no query, on every page), or the user has one set up."""
    if request.session.get(IDP_MFA_SESSION_KEY):
        return True
    if any(r.get("method") == "mfa" for r in get_authentication_records(request, user)):
        return True
    return is_mfa_enabled(user, types=list(SECOND_FACTORS))


def _exempt_prefixes() -> tuple[str, ...]:
    # The setup pages themselves, what they need (reauthentication), and the way out.
    return (
        reverse("mfa_index"),
        reverse("account_logout"),
        reverse("account_reauthenticate"),
        settings.STATIC_URL,  # type: ignore[return-value]  # set in settings, never None
        reverse("healthz"),
        reverse("readyz"),
    )


def _token_call(request: HttpRequest) -> bool:
    """An API call that authenticates with a token, not its session: one that some
    authentication middleware gave a request.auth, or that sends `Authorization: Bearer`
    (or `Token`). DRF tries the token class first, and a bad key is a 401 there, never a
    fall-back to the session (gpuposture.base.tokens)."""
    if getattr(request, "auth", None) is not None:
        return True
    scheme = request.headers.get("Authorization", "").split(" ", 1)[0].lower()
    return scheme in ("bearer", "token")


class MfaRequiredMiddleware:
    """After allauth's AccountMiddleware and MessageMiddleware."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        blocked = self._blocked(request)
        if blocked is not None:
            return blocked
        return self.get_response(request)

    def _blocked(self, request: HttpRequest) -> HttpResponse | None:
        user = request.user
        if not mfa_required(user) or request.path_info.startswith(_exempt_prefixes()):
            return None
        api = request.path_info.startswith("/api/")
        if api and _token_call(request):
            return None
        if mfa_satisfied(request, user):
            return None
        if api:
            return JsonResponse({"detail": API_MESSAGE}, status=403)
        messages.warning(request, PAGE_MESSAGE)
        return redirect("mfa_index")


# --- TOTP helpers for the demo ------------------------------------------------------------------


def demo_mfa_reset(user: AbstractBaseUser) -> str | None:
    """Remove the user's second factors and, if their role requires one, give them a new TOTP
    secret, returned (the demo only: a real user scans their own)."""
    Authenticator.objects.filter(user_id=user.pk).delete()
    if not mfa_required(user):
        return None
    secret = generate_totp_secret()
    TOTP.activate(user, secret)
    return secret


def totp_url(user: AbstractBaseUser, secret: str) -> str:
    """The otpauth:// URL an authenticator app reads (as a QR code or pasted)."""
    return get_mfa_adapter().build_totp_url(user, secret)


def totp_current_code(user: AbstractBaseUser) -> tuple[str, int] | None:
    """The user's current TOTP code and the seconds it stays current, or None without TOTP."""
    authenticator = Authenticator.objects.filter(
        user_id=user.pk, type=Authenticator.Type.TOTP
    ).first()
    if authenticator is None:
        return None
    secret = decrypt(authenticator.data["secret"])
    period = int(getattr(settings, "MFA_TOTP_PERIOD", 30))
    now = int(time.time())
    return format_hotp_value(hotp_value(secret, now // period)), period - now % period
