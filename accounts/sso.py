"""Single sign-on with OpenID Connect (GPUPOSTURE_OIDC_*): allauth's social account adapter.

Only SSO may create accounts (local signup stays closed). At every SSO sign-in the user's
roles and tenant views follow the IdP's group claim (gpuposture.base.sso_claims decides); a
change is an audit event on the user. An account created, signed in or linked by SSO has no
usable local password (gpuposture.base.sso_passwords). Tenants sit in a sibling layer: the
model is looked up by name, not imported.
"""

from __future__ import annotations

from typing import Any

from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from allauth.socialaccount.models import SocialLogin
from django.apps import apps
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, Group
from django.db import transaction
from django.http import HttpRequest

from audit.services import audit_record
from gpuposture.base.roles import ROLES, TENANT_VIEWER
from gpuposture.base.sso_claims import SsoGrant, oidc_claims, sso_grant
from gpuposture.base.sso_passwords import sso_password_lock

ACTOR = "single sign-on"  # who the audit log says changed the roles


def grant_for(sociallogin: SocialLogin) -> SsoGrant:
    claims, _id_token = oidc_claims(sociallogin.account.extra_data)
    return sso_grant(
        claims,
        groups_claim=settings.GPUPOSTURE_OIDC_GROUPS_CLAIM,
        role_map=settings.GPUPOSTURE_OIDC_ROLE_MAP,
        tenant_map=settings.GPUPOSTURE_OIDC_TENANT_MAP,
    )


def _access(user: AbstractBaseUser) -> dict[str, list[str]]:
    return {
        "roles": sorted(user.groups.filter(name__in=ROLES).values_list("name", flat=True)),
        "tenants": sorted(user.viewable_tenants.values_list("slug", flat=True)),
    }


@transaction.atomic
def sso_user_update(*, user: AbstractBaseUser, grant: SsoGrant) -> None:
    """Give the user the roles and tenant views one sign-in grants; an audit event if that
    changed anything."""
    before = _access(user)
    declared = _declared_tenants(user)
    if grant.managed_tenants:
        tenant_model = apps.get_model("tenants", "Tenant")
        managed = tenant_model.objects.filter(slug__in=grant.managed_tenants)
        viewing = set(before["tenants"])
        user.viewable_tenants.add(
            *(t for t in managed if t.slug in grant.tenants and t.slug not in viewing)
        )
        # A tenant the tenants file declares the user a viewer of stays: the IdP's map grants
        # tenants, it does not revoke the file's (tenants.viewer_role).
        user.viewable_tenants.remove(
            *(
                t
                for t in managed
                if t.slug not in grant.tenants and t.slug in viewing and t.slug not in declared
            )
        )
    current = set(before["roles"])
    wanted = set(grant.roles) if grant.roles_exact else current | grant.roles
    if declared:
        wanted.add(TENANT_VIEWER)
    if wanted != current:
        groups = {g.name: g for g in Group.objects.filter(name__in=current ^ wanted)}
        user.groups.remove(*(groups[n] for n in current - wanted if n in groups))
        user.groups.add(*(groups[n] for n in wanted - current if n in groups))
        user.__dict__.pop("_gpuposture_roles", None)  # the roles cached for this request
    after = _access(user)
    if after != before:
        audit_record(actor=ACTOR, action="update", obj=user, before=before, after=after)


def _declared_tenants(user: AbstractBaseUser) -> set[str]:
    """Slugs of the tenants the tenants file names the user a viewer of: the role and those
    tenants go with that declaration (tenants.viewer_role), whatever an exact role map or the
    tenant map says. A tenant an admin gave by hand is not declared: there the IdP decides."""
    declared = apps.get_model("tenants", "TenantViewerName").objects
    names = declared.filter(username=user.get_username(), tenant__is_system=False)
    return set(names.values_list("tenant__slug", flat=True))


class SsoAccountAdapter(DefaultSocialAccountAdapter):
    """SOCIALACCOUNT_ADAPTER: an SSO account is created at its first sign-in; its roles and
    tenant views are updated at every sign-in."""

    def is_open_for_signup(self, request: HttpRequest, sociallogin: SocialLogin) -> bool:
        # Only the configured IdP; NoSignupAccountAdapter keeps local signup closed.
        return sociallogin.account.provider == settings.GPUPOSTURE_OIDC_PROVIDER_ID

    def pre_social_login(self, request: HttpRequest, sociallogin: SocialLogin) -> None:
        # Before the login stages (two-factor), with the fresh claims. A new user has no row
        # yet: save_user updates them.
        if sociallogin.is_existing and sociallogin.user is not None:
            sso_password_lock(user=sociallogin.user)
            sso_user_update(user=sociallogin.user, grant=grant_for(sociallogin))

    def save_user(
        self, request: HttpRequest, sociallogin: SocialLogin, form: Any = None
    ) -> AbstractBaseUser:
        user = super().save_user(request, sociallogin, form)  # with an unusable password
        sso_user_update(user=user, grant=grant_for(sociallogin))
        return user


def sso_account_linked(*, sociallogin: SocialLogin, **_kwargs: Any) -> None:
    """allauth's social_account_added: a signed-in local user linked an IdP account (the
    adapter has no hook after a link). From now on the IdP is their way in."""
    if sociallogin.user is not None:
        sso_password_lock(user=sociallogin.user)
