from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "accounts"

    def ready(self) -> None:
        from allauth.socialaccount.signals import social_account_added

        from accounts.sso import sso_account_linked

        social_account_added.connect(sso_account_linked, dispatch_uid="gpuposture-sso-linked")

        # After django.contrib.admin's ready (first in INSTALLED_APPS) has imported every
        # app's admin module: the admins wrapped here are the ones that serve the models.
        from accounts.admin_audit import admin_accounts_audited

        admin_accounts_audited()
