"""CI's bench smoke run (bench/smoke.sh, `make bench-smoke`) covers every bench in bench/, so a
new bench cannot be added without one, and none can rot unnoticed."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
# Scripts that are not benches of their own: each is run by a bench the smoke run starts
# (bench_auth.py and load_world.py by load.sh, fake_api.py by sync_scale.py), or by CI itself
# (fuzz.py: make fuzz-ci).
DRIVEN_BY_OTHERS = {"bench_auth.py", "load_world.py", "fake_api.py", "fuzz.py"}


def bench_scripts() -> set[str]:
    """Every runnable script in bench/: a Python file with a __main__ block, or a shell script."""
    python = {
        p.name for p in BENCH.glob("*.py") if 'if __name__ == "__main__"' in p.read_text("utf-8")
    }
    shell = {p.name for p in BENCH.glob("*.sh")} - {"smoke.sh"}
    return python | shell


def smoke_commands() -> dict[str, str]:
    """The smoke run's entries, name -> command."""
    text = (BENCH / "smoke.sh").read_text("utf-8")
    return dict(re.findall(r'^\s+"([a-z_]+)\|([^"]+)"$', text, re.M))


def test_every_bench_has_a_smoke_run() -> None:
    commands = " ".join(smoke_commands().values())
    missing = {
        name for name in bench_scripts() - DRIVEN_BY_OTHERS if f"bench/{name}" not in commands
    }
    assert missing == set()
    assert bench_scripts() >= DRIVEN_BY_OTHERS  # the exemptions name real scripts


def test_smoke_runs_each_bench_at_its_tiny_size() -> None:
    commands = smoke_commands()
    assert set(commands) == {
        "sync_scale",
        "sync_scale_worst",
        "score_cpu",
        "telemetry_scale",
        "export_scale",
        "checks_vs_checkov",
        "load",
    }
    for name, command in commands.items():
        assert "--tiny" in command or "TINY=1" in command, name


def test_ci_runs_the_smoke() -> None:
    assert "bash bench/smoke.sh" in (ROOT / "Makefile").read_text("utf-8")
    assert "make bench-smoke" in (ROOT / ".ci" / "run").read_text("utf-8")
