from __future__ import annotations

from django.apps import AppConfig


class ProvidersConfig(AppConfig):
    name = "providers"
