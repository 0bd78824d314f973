"""Admin changes to accounts are audit events: users (their roles, i.e. Django groups, and
flags), groups, MFA authenticators, e-mail addresses and SSO identities. These models' admins
belong to Django and allauth (and may be replaced by ours), so they are wrapped, not
rewritten: `admin_accounts_audited` runs from AccountsConfig.ready, after every admin module
has registered its classes."""

from __future__ import annotations

from typing import Any

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from allauth.socialaccount.models import SocialAccount
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.http import HttpRequest, HttpResponse

from accounts.audit_state import (
    authenticator_state,
    email_address_state,
    group_state,
    social_account_state,
    user_state,
)
from audit.admin import admin_audited
from audit.services import audit_record


class PasswordChangeAudited:
    """UserAdmin's "change password" page saves outside save_model: record it here (that a
    password was set or disabled, by whom; never the password or its hash)."""

    def user_change_password(
        self, request: HttpRequest, id: str, form_url: str = ""
    ) -> HttpResponse:
        with transaction.atomic():
            user = self.get_object(request, unquote(id))
            before = user_state(user) if user is not None else None
            response = super().user_change_password(request, id, form_url)
            if request.method == "POST" and response.status_code == 302 and user is not None:
                user.refresh_from_db()
                audit_record(
                    actor=request.user,
                    action="set_password",
                    obj=user,
                    before=before,
                    after=user_state(user),
                )
        return response


def admin_accounts_audited(site: admin.AdminSite = admin.site) -> None:
    users: Any = get_user_model()
    admin_audited(users, audit_state=user_state, mixins=(PasswordChangeAudited,), site=site)
    admin_audited(Group, audit_state=group_state, site=site)
    admin_audited(Authenticator, audit_state=authenticator_state, site=site)
    admin_audited(EmailAddress, audit_state=email_address_state, site=site)
    admin_audited(SocialAccount, audit_state=social_account_state, site=site)
