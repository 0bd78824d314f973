"""Keys the settings need beyond SECRET_KEY, failing fast like it (STYLE rule 12)."""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from gpuposture.settings.env import env_secret

MFA_KEY = "GPUPOSTURE_MFA_ENCRYPTION_KEY"
MIN_KEY_LENGTH = 32


def mfa_encryption_key(*, debug: bool, secret_key: str) -> str:
    """Key material for TOTP secrets and recovery-code seeds at rest
    (gpuposture.base.mfa_secrets), from MFA_KEY or MFA_KEY_FILE."""
    key = env_secret("GPUPOSTURE_MFA_ENCRYPTION_KEY")
    if key:
        if len(key) < MIN_KEY_LENGTH:
            raise ImproperlyConfigured(
                f"{MFA_KEY} is too short: use {MIN_KEY_LENGTH} or more random characters."
            )
        return key
    # The demo and the test suite (pytest sets PYTEST_VERSION) derive one from SECRET_KEY: a
    # development database is then protected as well as its SECRET_KEY is, and no better.
    if debug or os.environ.get("PYTEST_VERSION"):
        return f"derived from SECRET_KEY: {secret_key}"
    raise ImproperlyConfigured(
        f"{MFA_KEY} is not set. Set it (or {MFA_KEY}_FILE) to {MIN_KEY_LENGTH} or more random "
        "characters, or DEBUG=1 to derive one from SECRET_KEY."
    )
