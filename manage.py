#!/usr/bin/env python
"""Django's command-line utility for gpuposture."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Written by `make demo`: the settings the demo runs with (DEBUG=1), so the CLI works on the
# demo database exactly as the README shows it. The environment always wins over the file.
DEMO_ENV = Path(__file__).resolve().parent / "var" / "demo.env"


def load_env_file(path: Path, environ: dict[str, str] | os._Environ[str]) -> None:
    """Set NAME=value lines of `path` that the environment does not already set."""
    if not path.is_file():
        return
    for line in path.read_text().splitlines():
        name, sep, value = line.strip().partition("=")
        if sep and name and not name.startswith("#"):
            environ.setdefault(name.strip(), value.strip())


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuposture.settings")
    load_env_file(DEMO_ENV, os.environ)
    from django.core.exceptions import ImproperlyConfigured

    try:
        # Settings read the environment and fail fast; loading them here first turns a missing
        # setting into one line instead of Django's "KeyError: '<command>'" traceback.
        from django.conf import settings

        settings.INSTALLED_APPS  # noqa: B018
    except ImproperlyConfigured as exc:
        sys.stderr.write(f"manage.py: {exc}\n")
        sys.exit(2)
    except ValueError as exc:  # a value the settings cannot read, e.g. DATABASE_URL's scheme
        sys.stderr.write(f"manage.py: a setting from the environment is not valid: {exc}\n")
        sys.exit(2)
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
