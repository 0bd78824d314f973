"""Feed shapes CSAF 2.0 section 7 defines besides index.txt and ROLIE: a directory's
changes.csv (given directly, or where a provider's directory has no readable index.txt) and an
aggregator.json listing providers (their own metadata, else the aggregator's mirror). Pure:
`fetch` is a dictionary (tests.test_bulletin_feeds.fake_fetch)."""

from __future__ import annotations

from inventory.bulletins.csaf.feed import Document, Refusal, feed_documents, kind_of
from tests.test_bulletin_feeds import fake_fetch

DOC = {"document": {"csaf_version": "2.0"}}
CHANGES = '"2025/a.json","2025-07-15T00:00:00+00:00"\n"2024/b.json","2024-02-01T00:00:00+00:00"\n'


def provider(url: str, directory: str) -> dict:
    return {
        "canonical_url": url,
        "metadata_version": "2.0",
        "publisher": {"category": "vendor", "name": "P", "namespace": "https://p"},
        "role": "csaf_provider",
        "distributions": [{"directory_url": directory}],
    }


def urls(found) -> list[str]:
    return [f.url for f in found if isinstance(f, Document)]


def test_a_changes_csv_lists_the_documents():
    pages = {
        "https://p/white/changes.csv": CHANGES.encode(),
        "https://p/white/2025/a.json": DOC,
        "https://p/white/2024/b.json": DOC,
    }
    found = list(feed_documents("https://p/white/changes.csv", fake_fetch(pages)))
    assert urls(found) == ["https://p/white/2025/a.json", "https://p/white/2024/b.json"]


def test_a_directory_without_index_txt_is_read_from_its_changes_csv():
    pages = {
        "https://p/provider-metadata.json": provider(
            "https://p/provider-metadata.json", "https://p/white/"
        ),
        "https://p/white/changes.csv": CHANGES.encode(),
        "https://p/white/2025/a.json": DOC,
        "https://p/white/2024/b.json": DOC,
    }
    found = list(feed_documents("https://p/provider-metadata.json", fake_fetch(pages)))
    assert urls(found) == ["https://p/white/2025/a.json", "https://p/white/2024/b.json"]
    assert not [f for f in found if isinstance(f, Refusal)]


def test_an_aggregator_lists_providers_and_a_mirror_stands_in_for_one_gone():
    aggregator = {
        "aggregator": {"category": "aggregator", "name": "A", "namespace": "https://a"},
        "aggregator_version": "2.0",
        "canonical_url": "https://a/aggregator.json",
        "csaf_providers": [
            {"metadata": {"url": "https://p/provider-metadata.json", "role": "csaf_provider"}},
            {
                "metadata": {"url": "https://gone/provider-metadata.json"},
                "mirrors": ["https://a/mirror/q/provider-metadata.json"],
            },
        ],
        "last_updated": "2026-12-01T00:00:00Z",
    }
    pages = {
        "https://a/aggregator.json": aggregator,
        "https://p/provider-metadata.json": provider(
            "https://p/provider-metadata.json", "https://p/white"
        ),
        "https://p/white/index.txt": b"2025/a.json\n",
        "https://p/white/2025/a.json": DOC,
        "https://a/mirror/q/provider-metadata.json": provider(
            "https://a/mirror/q/provider-metadata.json", "https://a/mirror/q/white/"
        ),
        "https://a/mirror/q/white/index.txt": b"2024/c.json\n",
        "https://a/mirror/q/white/2024/c.json": DOC,
    }
    assert kind_of(aggregator) == "aggregator"
    found = list(feed_documents("https://a/aggregator.json", fake_fetch(pages)))
    assert urls(found) == ["https://p/white/2025/a.json", "https://a/mirror/q/white/2024/c.json"]
    assert not [f for f in found if isinstance(f, Refusal)]


def test_an_aggregator_provider_that_cannot_be_read_is_a_refusal():
    aggregator = {
        "aggregator": {"category": "lister"},
        "csaf_providers": [{"metadata": {"url": "https://gone/provider-metadata.json"}}],
    }
    found = list(feed_documents("https://a/x.json", fake_fetch({"https://a/x.json": aggregator})))
    assert found == [Refusal("https://gone/provider-metadata.json", "HTTP 404 Not Found")]
