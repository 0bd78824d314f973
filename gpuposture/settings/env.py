"""Read settings from the environment, failing fast on bad values (STYLE rule 12).

Every variable can also be given as NAME_FILE, the path of a file holding the value (a mounted
secret: Docker/Kubernetes secrets, systemd credentials). Setting both is an error: which one
wins would otherwise be a guess.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured


def _from_file(name: str, file_path: str) -> str:
    try:
        return Path(file_path).read_text()
    except OSError as exc:
        raise ImproperlyConfigured(f"{name}_FILE={file_path} cannot be read: {exc}") from exc


def _raw(name: str) -> tuple[str | None, str | None]:
    """(value, file path) of NAME / NAME_FILE; refuses both set. Empty counts as unset."""
    value = os.environ.get(name) or None
    file_path = os.environ.get(f"{name}_FILE") or None
    if value is not None and file_path is not None:
        raise ImproperlyConfigured(f"Both {name} and {name}_FILE are set: set only one of them.")
    return value, file_path


def env_secret(name: str, default: str | None = None) -> str | None:
    """A secret from NAME or from the file named by NAME_FILE, exactly as written except one
    trailing newline (what `echo` and most editors add); an empty file is an error."""
    value, file_path = _raw(name)
    if file_path is not None:
        content = _from_file(name, file_path)
        if content.endswith("\r\n"):
            content = content[:-2]
        elif content.endswith("\n"):
            content = content[:-1]
        if not content:
            raise ImproperlyConfigured(f"{name}_FILE={file_path} is empty.")
        return content
    return value if value is not None else default


def env_str(name: str, default: str | None = None) -> str | None:
    """A variable's value, or the content of the file named by NAME_FILE, without surrounding
    whitespace (use env_secret for secrets, which keeps the value exactly)."""
    value, file_path = _raw(name)
    if file_path is not None:
        return _from_file(name, file_path).strip() or default
    return value if value is not None else default


def env_bool(name: str, default: bool = False) -> bool:
    value = env_str(name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use 1/0, true/false)")


def env_list(name: str, default: list[str]) -> list[str]:
    """A comma-separated list; a variable set but empty (`NAME=`) is the empty list, so an
    operator can clear a list whose default is not empty."""
    value = env_str(name)
    if value is None:
        present = name in os.environ or os.environ.get(f"{name}_FILE")
        return [] if present else default
    return [item.strip() for item in value.split(",") if item.strip()]


def env_int(name: str, default: int) -> int:
    value = env_str(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer") from exc
