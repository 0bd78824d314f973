from __future__ import annotations

from django.apps import AppConfig


class InventoryConfig(AppConfig):
    name = "inventory"
