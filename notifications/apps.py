from __future__ import annotations

from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications"

    def ready(self) -> None:
        # Send the digests after each posture run through posture's after-run hook: a function
        # call, not a task name.
        from notifications.digest import digests_after_run
        from posture.run_hooks import run_listener_register

        run_listener_register("notifications", digests_after_run)
