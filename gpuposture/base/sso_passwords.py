"""Single sign-on accounts have no local password (GPUPOSTURE_SSO_LOCAL_PASSWORD allows one).

A password set through "forgot password" or "change password" would let a user whom the
identity provider disabled, or who never passed its second factor, sign in anyway. So an
account created or linked by SSO gets an unusable password, and every way to set or use one
refuses it: the password forms (ACCOUNT_FORMS), the reset mail (it says why instead of carrying a
link), the adapter's set_password, and password sign-in (gpuposture.base.auth).
"""

from __future__ import annotations

from typing import Any

from allauth.account import forms as allauth_forms
from allauth.socialaccount.models import SocialAccount
from django import forms
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

REFUSED_MESSAGE = (
    "This account signs in with single sign-on and has no password here. Ask an "
    "administrator if you need one."
)


def is_sso_user(user: AbstractBaseUser) -> bool:
    """Created by an SSO sign-in or linked to an identity provider account."""
    return user.pk is not None and SocialAccount.objects.filter(user_id=user.pk).exists()


def local_password_refused(user: AbstractBaseUser | None) -> bool:
    if user is None or settings.GPUPOSTURE_SSO_LOCAL_PASSWORD:
        return False
    return is_sso_user(user)


def sso_password_lock(*, user: AbstractBaseUser) -> bool:
    """Make an SSO user's local password unusable; whether it was usable."""
    if not local_password_refused(user) or not user.has_usable_password():
        return False
    user.set_unusable_password()
    user.save(update_fields=["password"])
    return True


class _RefuseForSso:
    """Before allauth's own checks: the form's user may not have a password at all."""

    user: Any

    def clean(self) -> dict[str, Any]:
        if local_password_refused(self.user):
            raise forms.ValidationError(REFUSED_MESSAGE, code="sso_account")
        return super().clean()


class ChangePasswordForm(_RefuseForSso, allauth_forms.ChangePasswordForm):
    pass


class SetPasswordForm(_RefuseForSso, allauth_forms.SetPasswordForm):
    pass


class ResetPasswordKeyForm(_RefuseForSso, allauth_forms.ResetPasswordKeyForm):
    pass
