"""The README's CLI commands on the demo database (issue 19 items 1, 2): manage.py reads the
settings `make demo` wrote to var/demo.env (the environment wins), and a missing setting is
one clear line, not Django's `KeyError: '<command>'` traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import manage
from demo.management.commands.demo import _address

ROOT = Path(manage.__file__).resolve().parent


def test_env_file_fills_only_what_the_environment_does_not_set(tmp_path):
    env_file = tmp_path / "demo.env"
    env_file.write_text("# written by make demo\nDEBUG=1\nSECRET_KEY = from-file\nnot a line\n")
    environ = {"SECRET_KEY": "from-env"}
    manage.load_env_file(env_file, environ)
    assert environ == {"SECRET_KEY": "from-env", "DEBUG": "1"}
    manage.load_env_file(tmp_path / "missing.env", environ)  # no file: nothing changes
    assert environ == {"SECRET_KEY": "from-env", "DEBUG": "1"}


def test_a_missing_setting_is_one_line_not_a_traceback():
    # DEBUG=0 set explicitly: var/demo.env (if `make demo` ran here) cannot turn it on.
    env = {"PATH": os.environ.get("PATH", ""), "DEBUG": "0", "HOME": os.environ.get("HOME", "/")}
    result = subprocess.run(
        [sys.executable, "manage.py", "apply_tenants", "tenants.yaml"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "manage.py: SECRET_KEY is not set. Set SECRET_KEY (or SECRET_KEY_FILE), or DEBUG=1 for "
        "a development key kept in var/secret_key."
    ]
    assert "Traceback" not in result.stderr and "KeyError" not in result.stderr


def test_demo_prints_the_address_the_server_listens_on():
    assert _address("127.0.0.1", "8811") == "http://127.0.0.1:8811/"
    assert _address("0.0.0.0", "9000") == "http://127.0.0.1:9000/"  # noqa: S104
    assert _address("::1", "8000") == "http://[::1]:8000/"


def test_make_demo_passes_host_and_port_and_writes_the_env_file():
    makefile = (ROOT / "Makefile").read_text()
    assert "manage.py demo --host $(HOST) --port $(PORT)" in makefile
    assert "> var/demo.env" in makefile


def test_a_setting_that_cannot_be_read_is_one_line():
    env = {
        "PATH": os.environ.get("PATH", ""),
        "DEBUG": "0",
        "SECRET_KEY": "k",
        "GPUPOSTURE_MFA_ENCRYPTION_KEY": "not-a-secret-but-long-enough-0123456789",
        "DATABASE_URL": "nope://db",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "score"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("manage.py: a setting from the environment is not valid:")
    assert "nope" in result.stderr
