"""Settings for the fuzz and load benches: the app's own, with two bench-only changes.

- `BENCH_VAR_DIR`: where the run's own files go (the demo's snapshots, STATIC_ROOT), so a
  bench never shares var/ with a `make demo` running beside it.
- `BENCH_FLOOR=1`: the URLconf adds the bare DRF floor endpoint (bench/floor_urls.py); the
  app's own URLs never have it.
"""

from __future__ import annotations

import os
from pathlib import Path

from gpuposture.settings import *  # noqa: F403
from gpuposture.settings import VAR_DIR as _APP_VAR_DIR

VAR_DIR = Path(os.environ.get("BENCH_VAR_DIR", str(_APP_VAR_DIR)))
STATIC_ROOT = VAR_DIR / "staticfiles"  # static files are served from the finders
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
if os.environ.get("BENCH_FLOOR") == "1":
    ROOT_URLCONF = "bench.floor_urls"
