from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "accounts"

    def ready(self) -> None:
        from allauth.socialaccount.signals import social_account_added

        from accounts.sso import sso_account_linked

        social_account_added.connect(sso_account_linked, dispatch_uid="gpuposture-sso-linked")
