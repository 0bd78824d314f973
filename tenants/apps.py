from __future__ import annotations

from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"

    def ready(self) -> None:
        from django.conf import settings
        from django.db.models.signals import post_save

        from tenants import checks  # noqa: F401  registers the startup checks
        from tenants.signals import declared_viewer_created

        post_save.connect(
            declared_viewer_created,
            sender=settings.AUTH_USER_MODEL,
            dispatch_uid="gpuposture-declared-viewer-created",
        )
