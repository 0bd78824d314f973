"""The repository documents itself (issue 19 item 5): a short README whose links and
screenshots exist, docs that never point outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def links(path: Path) -> list[str]:
    return [t for t in LINK.findall(path.read_text()) if "://" not in t]


def test_readme_is_short_and_starts_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 80
    assert text.split("```sh\n")[1].startswith("make demo")
    assert "make test" in text.split("```")[1]


def test_every_local_link_in_readme_and_docs_exists():
    missing = []
    for page in [ROOT / "README.md", *DOCS.glob("*.md")]:
        for target in links(page):
            if not (page.parent / target).resolve().exists():
                missing.append(f"{page.relative_to(ROOT)} -> {target}")
    assert missing == []


def test_docs_cover_what_the_readme_promises():
    for name in ("architecture", "checks", "scoring", "api", "operations", "first-cluster"):
        assert f"docs/{name}.md" in (ROOT / "README.md").read_text(), name
        assert (DOCS / f"{name}.md").is_file(), name


def test_nothing_points_outside_the_repository():
    for page in [ROOT / "README.md", *DOCS.glob("*.md")]:
        assert "../shared" not in page.read_text(), page.name


def test_screenshots_are_small_pngs():
    images = [target for target in links(ROOT / "README.md") if target.endswith(".png")]
    assert len(images) >= 3
    for target in images:
        data = (ROOT / target).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", target
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert width <= 1280 and height <= 800, (target, width, height)
        assert len(data) < 150_000, (target, len(data))
