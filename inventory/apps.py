from __future__ import annotations

from django.apps import AppConfig


class InventoryConfig(AppConfig):
    name = "inventory"

    def ready(self) -> None:
        # Register the tasks with the Celery app in every process (web and CLI too), so a
        # task named by another app (a score after a sync) runs in-process without a broker.
        from inventory import tasks  # noqa: F401
