"""Where the real third-party samples live; tests read them in place and skip when absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def realworld_dir() -> Path:
    return Path(os.environ.get("GPUPOSTURE_REALWORLD", REPO_ROOT.parent / "shared" / "realworld"))


def realworld(*parts: str) -> Path:
    """Path of a sample under ../shared/realworld, or skip the test saying why."""
    path = realworld_dir().joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real-world sample {path} is absent (set GPUPOSTURE_REALWORLD)")
    return path
