"""Calico's selector expressions (inventory/sources/calico_selector.py), written after Calico's
selector reference: what a policy's `selector` and `namespaceSelector` say."""

from __future__ import annotations

import pytest

from inventory.sources.calico_selector import parse_selector

LABELS = {"app": "train", "tenant-class": "external", "projectcalico.org/name": "acme"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("", True),
        ("all()", True),
        ("tenant-class == 'external'", True),
        ('app == "serve"', False),
        ("has(app) && app in {'train', 'serve'}", True),
        ("!has(app)", False),
        ("app != 'train' || projectcalico.org/name == 'acme'", True),
        ("!(app == 'train' && has(gpu))", True),
        ("app not in {'train'}", False),
        ("app starts with 'tr' && app ends with 'in' && app contains 'ai'", True),
        ("global()", False),
    ],
)
def test_selectors_match_as_calico_documents(selector, matches):
    matcher = parse_selector(selector)
    assert matcher is not None and matcher(LABELS) is matches


@pytest.mark.parametrize("selector", ["app ==", "app matches 'x'", "a == 'b' &&", "(a == 'b'"])
def test_a_selector_not_read_is_none_never_a_guess(selector):
    assert parse_selector(selector) is None
