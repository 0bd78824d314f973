"""The settings package: each setting is assigned in exactly one of its modules, every module
stays small, and every setting they assign reaches django.conf.settings."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from django.conf import settings

import gpuposture.settings as package

SETTINGS_DIR = Path(package.__file__).parent
CONCERNS = ["core", "auth", "security", "api", "app", "celery"]


def assigned(module: str) -> set[str]:
    """UPPERCASE names a module assigns at its top level (not those it imports)."""
    tree = ast.parse((SETTINGS_DIR / f"{module}.py").read_text())
    names: set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        names |= {t.id for t in targets if isinstance(t, ast.Name) and t.id.isupper()}
    return names


def test_the_package_reads_every_concern_module():
    on_disk = {p.stem for p in SETTINGS_DIR.glob("*.py")} - {"__init__", "env", "keys"}
    assert set(CONCERNS) == on_disk
    assert list(package._concerns) == CONCERNS


def test_each_setting_is_assigned_once_and_reaches_django():
    counts = Counter(name for module in CONCERNS for name in assigned(module))
    assert [name for name, n in counts.items() if n > 1] == []
    missing = [name for name in counts if not hasattr(settings, name)]
    assert missing == []
    assert len(counts) > 120  # the scan found the settings (an empty scan cannot pass)


def test_every_settings_module_is_small():
    sizes = {p.name: len(p.read_text().splitlines()) for p in SETTINGS_DIR.glob("*.py")}
    assert max(sizes.values()) < 400, sizes
