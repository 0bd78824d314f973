from __future__ import annotations

from django.apps import AppConfig


class SharingConfig(AppConfig):
    """Sharing requests and their approvals. No models: SharingRequest stays in `tenants`
    (moving a model between apps is a migration of its own)."""

    name = "sharing"
