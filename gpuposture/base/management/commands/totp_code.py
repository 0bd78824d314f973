"""totp_code USERNAME: the current two-factor code of a demo account (DEBUG only).

The demo gives each account whose role requires two-factor sign-in a TOTP secret (printed by
`manage.py demo`); this prints the code an authenticator app would show, so the demo can be
tried without one. It refuses to run with DEBUG off: on a real deployment nobody but the user
should be able to produce their code.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from gpuposture.base.mfa import totp_current_code


class Command(BaseCommand):
    help = "Print the current TOTP code of a demo account (only with DEBUG=1)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEBUG:
            raise CommandError(
                "totp_code is for the demo only and runs only with DEBUG=1; real users read "
                "their code from their authenticator app."
            )
        username = options["username"]
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}. The demo logins are printed by `demo`.")
        current = totp_current_code(user)
        if current is None:
            raise CommandError(f"{username} has no TOTP authenticator (their role needs none).")
        code, seconds = current
        self.stdout.write(code)
        self.stderr.write(f"valid for {seconds} more seconds (and the next 30)")
