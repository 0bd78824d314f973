"""Authentication wiring: accounts are created by admins or SSO, never by open signup."""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from django.http import HttpRequest, HttpResponse

from gpuposture.base.mfa import IDP_MFA_SESSION_KEY
from gpuposture.base.sso_claims import idp_used_mfa, oidc_claims


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
