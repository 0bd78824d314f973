from __future__ import annotations

from django.apps import AppConfig


class EnforcementConfig(AppConfig):
    name = "enforcement"
    default_auto_field = "django.db.models.BigAutoField"
