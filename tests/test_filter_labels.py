"""Every filter on every list page has a label a person can read: django-filter writes
"[invalid name]" for a method filter given none."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import django_filters
import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(f"{path.parent.name}.filters" for path in ROOT.glob("*/filters.py"))


def _filtersets() -> list[type[django_filters.FilterSet]]:
    found = []
    for name in MODULES:
        module = importlib.import_module(name)
        found += [
            cls
            for _, cls in inspect.getmembers(module, inspect.isclass)
            if issubclass(cls, django_filters.FilterSet) and cls.__module__ == name
        ]
    return found


def test_the_filter_modules_are_found():
    assert {"inventory.filters", "posture.filters", "sharing.filters"} <= set(MODULES)
    assert len(_filtersets()) >= 5


@pytest.mark.parametrize("filterset", _filtersets(), ids=lambda cls: cls.__name__)
def test_every_filter_has_a_readable_label(filterset):
    form = filterset(data={}, queryset=filterset._meta.model.objects.none()).form
    labels = {name: str(field.label) for name, field in form.fields.items()}
    assert not [name for name, label in labels.items() if "invalid name" in label], labels
