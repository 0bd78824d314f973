"""Authentication wiring: accounts are created by admins or SSO, never by open signup; SSO
accounts never use or get a local password (gpuposture.base.sso_passwords)."""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from django import forms
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from gpuposture.base.mfa import IDP_MFA_SESSION_KEY
from gpuposture.base.sso_claims import idp_used_mfa, oidc_claims
from gpuposture.base.sso_passwords import REFUSED_MESSAGE, local_password_refused, sso_password_lock


class NoSignupAccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request: HttpRequest) -> bool:
        return False

    def post_login(self, request: HttpRequest, user: Any, **kwargs: Any) -> HttpResponse:
        # Every sign-in says afresh whether the IdP vouched for a second factor: only an SSO
        # sign-in whose ID token's `amr` reports one does (gpuposture.base.mfa counts it).
        sociallogin = (kwargs.get("signal_kwargs") or {}).get("sociallogin")
        if sociallogin is not None and idp_used_mfa(oidc_claims(sociallogin.account.extra_data)[1]):
            request.session[IDP_MFA_SESSION_KEY] = True
        else:
            request.session.pop(IDP_MFA_SESSION_KEY, None)
        return super().post_login(request, user, **kwargs)

    def authenticate(self, request: HttpRequest, **credentials: Any) -> AbstractBaseUser | None:
        # Sign-in and "confirm your password": an SSO account's password, set before it was
        # linked or by an admin, is not a way in; it is made unusable on first use.
        user = super().authenticate(request, **credentials)
        if user is not None and local_password_refused(user):
            sso_password_lock(user=user)
            raise forms.ValidationError(REFUSED_MESSAGE, code="sso_account")
        return user

    def set_password(self, user: AbstractBaseUser, password: str) -> None:
        # Every allauth flow that sets a password ends here; the forms refuse first.
        if local_password_refused(user):
            raise PermissionDenied(REFUSED_MESSAGE)
        super().set_password(user, password)

    def send_password_reset_mail(
        self, user: AbstractBaseUser, email: str, context: dict[str, Any]
    ) -> None:
        # The page says "sent" either way (allauth's rule against account discovery); the mail
        # to the account's own address says why there is no link.
        if local_password_refused(user):
            self.send_mail("account/email/password_reset_sso", email, context)
            return
        super().send_password_reset_mail(user, email, context)
