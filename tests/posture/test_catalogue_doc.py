"""docs/checks.md is the catalogue the product runs: every registered check, in its family."""

from __future__ import annotations

from posture.catalogue_doc import DOC_PATH, catalogue_markdown
from posture.rules import CHECKS


def test_the_catalogue_doc_is_up_to_date():
    assert DOC_PATH.read_text() == catalogue_markdown(), "run `make docs` and commit docs/checks.md"


def test_every_check_is_in_the_doc_with_its_fix():
    text = catalogue_markdown()
    for check in CHECKS.values():
        assert f"| `{check.id}` |" in text
        assert f"**{check.id}**:" in text
    assert "## Sharing" in text and text.index("## Sharing") < text.index("## Providers")
