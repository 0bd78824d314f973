"""The seam to the task queue: each app writes its task names once, in its queue module, and
sends work by name, so nothing imports a tasks module (import-linter holds that in `make lint`)
and a web or CLI process finds the tasks without a hand list of modules."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

from gpuposture.base.queue import task_named
from tests.workers import REPO

QUEUE_MODULES = ["inventory.queue", "notifications.queue", "posture.queue", "telemetry.queue"]


def declared_names() -> list[tuple[str, str]]:
    found = []
    for module_name in QUEUE_MODULES:
        module = importlib.import_module(module_name)
        found += [
            (module_name, value)
            for key, value in vars(module).items()
            if key.isupper() and isinstance(value, str)
        ]
    return found


@pytest.mark.parametrize(("module_name", "name"), declared_names())
def test_each_declared_name_is_a_task_of_its_own_app(module_name, name):
    app = module_name.split(".")[0]
    assert name.startswith(f"{app}.tasks.")
    assert task_named(name).name == name


def test_a_fresh_process_finds_every_task_by_name_without_importing_tasks_first():
    names = [name for _, name in declared_names()]
    ours = sorted({name.rsplit(".", 1)[0] for name in names})
    script = (
        "import sys, django; django.setup()\n"
        "from gpuposture.base.queue import task_named\n"
        f"assert not set({ours!r}) & set(sys.modules)\n"
        f"print(all(task_named(n).name == n for n in {names!r}))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "gpuposture.settings", "DEBUG": "1"}
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "True"
