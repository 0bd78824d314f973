"""demo_notifications: subscribe the demo users (the `demo` command runs it before its
final score, whose digests then fill the delivery logs)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from notifications.demo import demo_subscriptions_ensure


class Command(BaseCommand):
    help = "Subscribe the demo users to the notifications their roles concern (demo only)."

    def handle(self, *args, **options) -> None:
        created = demo_subscriptions_ensure()
        self.stdout.write(f"notification subscriptions: {created} new (email, console backend)")
