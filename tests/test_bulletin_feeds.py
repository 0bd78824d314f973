"""Importing CSAF bulletins from URLs: a provider feed (provider-metadata.json -> ROLIE feed and
directory index.txt -> documents) served on 127.0.0.1 from the real-world samples, each document
on its own, every URL a feed names vetted by the guard; plus feed discovery as pure functions."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.core.management import CommandError, call_command

from inventory.bulletins.csaf.feed import Document, FeedError, Refusal, feed_documents, kind_of
from inventory.bulletins.feeds import bulletins_import_urls
from inventory.models import Bulletin
from tests.realworld import realworld
from tests.test_fetch import LocalServer, Route, _no_dns, local_server  # noqa: F401 (fixture)

DOCS = ("5614", "5616", "5630")


def sample(tracking: str) -> bytes:
    return realworld("csaf", f"nvidia-{tracking}.json").read_bytes()


def provider_routes(base: str) -> dict[str, Route | bytes]:
    """One ROLIE and one directory distribution; they overlap on 5614 (listed in both), and
    list one malformed document, one that is missing and one index entry that is not JSON."""
    metadata = {
        "canonical_url": f"{base}/csaf/provider-metadata.json",
        "metadata_version": "2.0",
        "publisher": {"category": "vendor", "name": "Test", "namespace": "https://test"},
        "role": "csaf_trusted_provider",
        "distributions": [
            {"rolie": {"feeds": [{"url": "rolie/white.json", "tlp_label": "WHITE"}]}},
            {"directory_url": f"{base}/csaf/white"},
        ],
    }
    feed = {
        "feed": {
            "id": "test-white",
            "entry": [
                {"content": {"type": "application/json", "src": "../white/2025/nvidia-5614.json"}},
                {"link": [{"rel": "self", "href": f"{base}/csaf/white/2025/nvidia-5616.json"}]},
                {"content": {"src": "../white/2025/broken.json"}},
            ],
        }
    }
    index = "2025/nvidia-5614.json\n2025/nvidia-5630.json\n2025/missing.json\nchanges.csv\n"
    return {
        "/csaf/provider-metadata.json": json.dumps(metadata).encode(),
        "/csaf/rolie/white.json": json.dumps(feed).encode(),
        "/csaf/white/index.txt": index.encode(),
        "/csaf/white/2025/broken.json": b"{nope",
        **{f"/csaf/white/2025/nvidia-{t}.json": sample(t) for t in DOCS},
    }


@contextmanager
def provider_feed(settings) -> Iterator[LocalServer]:
    """The provider's feed served on 127.0.0.1, which the allow-list lets the guard fetch."""
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = ["127.0.0.1"]
    with local_server({}) as running:
        running.routes.update(provider_routes(running.url("")))
        yield running


@pytest.fixture
def feed(settings):
    with provider_feed(settings) as running:
        yield running


@pytest.fixture
def refreshes(monkeypatch) -> list[int]:
    """Counts node patch refreshes, whichever import module makes them."""
    calls: list[int] = []
    for module in ("inventory.bulletins.store", "inventory.bulletins.feeds"):
        # append() for its effect, then 0 as the refresh's count
        monkeypatch.setattr(f"{module}.nodes_patch_refresh", lambda: calls.append(1) or 0)  # type: ignore[func-returns-value]
    return calls


@pytest.mark.django_db
def test_a_provider_feed_imports_each_document_and_refuses_the_bad_ones(
    feed: LocalServer, refreshes
):
    provider = feed.url("/csaf/provider-metadata.json")
    result = bulletins_import_urls(urls=[provider])
    assert len(result.imported) == 3 and Bulletin.objects.count() == 3
    refused = dict(result.refused)
    assert refused.keys() == {
        feed.url("/csaf/white/2025/broken.json"),
        feed.url("/csaf/white/2025/missing.json"),
    }
    assert refused[feed.url("/csaf/white/2025/broken.json")].startswith("not readable JSON")
    assert refused[feed.url("/csaf/white/2025/missing.json")] == "HTTP 404 Not Found"
    assert feed.paths().count("/csaf/white/2025/nvidia-5614.json") == 1  # listed twice
    assert "/csaf/white/changes.csv" not in feed.paths()
    bulletin = Bulletin.objects.get(tracking_id__icontains="5614")
    assert bulletin.source == feed.url("/csaf/white/2025/nvidia-5614.json")
    assert refreshes == [1]

    again = bulletins_import_urls(urls=[provider])
    assert not again.imported and not again.replaced and len(again.unchanged) == 3
    assert Bulletin.objects.count() == 3


@pytest.mark.django_db
def test_a_document_a_rolie_feed_or_an_index_can_be_given_directly(feed: LocalServer):
    result = bulletins_import_urls(
        urls=[
            feed.url("/csaf/white/2025/nvidia-5630.json"),
            feed.url("/csaf/rolie/white.json"),
            feed.url("/csaf/white/index.txt"),
        ]
    )
    assert len(result.imported) == 3 and len(result.unchanged) == 2
    assert len(result.refused) == 2  # broken (via ROLIE) and missing (via the index)


@pytest.mark.django_db
def test_every_url_a_feed_names_goes_through_the_guard(feed: LocalServer):
    feed.routes["/csaf/white/index.txt"] = (
        b"2025/nvidia-5630.json\n2025/moved.json\nhttps://10.0.0.7/csaf/x.json\n"
    )
    feed.routes["/csaf/white/2025/moved.json"] = Route(
        status=302, headers={"Location": "https://169.254.169.254/latest/x.json"}
    )
    result = bulletins_import_urls(urls=[feed.url("/csaf/white/index.txt")])
    refused = dict(result.refused)
    assert len(result.imported) == 1
    assert "link-local" in refused[feed.url("/csaf/white/2025/moved.json")]
    assert (
        "https://169.254.169.254/latest/x.json" in refused[feed.url("/csaf/white/2025/moved.json")]
    )
    assert "10.0.0.7 (private address)" in refused["https://10.0.0.7/csaf/x.json"]


@pytest.mark.django_db
def test_without_the_allow_list_a_local_feed_is_refused(feed: LocalServer, settings):
    settings.GPUPOSTURE_FETCH_ALLOWED_HOSTS = []
    result = bulletins_import_urls(urls=[feed.url("/csaf/provider-metadata.json")])
    assert not result.imported and "plain http is refused" in result.refused[0][1]
    assert not feed.seen


@pytest.mark.django_db
def test_the_command_imports_urls_and_paths_together(feed: LocalServer, tmp_path, refreshes):
    (tmp_path / "local.json").write_bytes(sample("5599"))
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "import_bulletins",
        feed.url("/csaf/provider-metadata.json"),
        str(tmp_path),
        stdout=out,
        stderr=err,
    )
    assert "4 imported" in out.getvalue() and "2 refused" in out.getvalue()
    assert f"refused {feed.url('/csaf/white/2025/missing.json')}: HTTP 404" in err.getvalue()
    assert refreshes == [1]  # one refresh for the whole command


@pytest.mark.django_db
def test_the_command_reports_a_url_refused_by_the_guard():
    with pytest.raises(CommandError, match="no document could be imported.*link-local"):
        call_command(
            "import_bulletins",
            "https://169.254.169.254/latest/meta-data",
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )


# Feed discovery without a network: `fetch` is a dictionary.


def fake_fetch(pages: dict[str, object]):
    def fetch(url: str) -> bytes:
        if url not in pages:
            raise FeedError("HTTP 404 Not Found")
        page = pages[url]
        return page if isinstance(page, bytes) else json.dumps(page).encode()

    return fetch


def test_a_feed_longer_than_the_cap_is_cut_and_says_so():
    entries = [{"content": {"src": f"d{i}.json"}} for i in range(3)]
    pages = {"https://p/feed.json": {"feed": {"entry": entries}}}
    pages |= {f"https://p/d{i}.json": {"document": {"csaf_version": "2.0"}} for i in range(3)}
    found = list(feed_documents("https://p/feed.json", fake_fetch(pages), limit=2))
    assert [f.url for f in found if isinstance(f, Document)] == [
        "https://p/d0.json",
        "https://p/d1.json",
    ]
    assert found[-1] == Refusal(
        "https://p/feed.json", "lists more than 2 documents; only the first 2 read"
    )


@pytest.mark.parametrize(
    ("page", "reason"),
    [
        ({"hello": 1}, "neither a CSAF document, a provider-metadata.json nor a ROLIE feed"),
        (b"{nope", "not readable JSON"),
        (
            {"canonical_url": "x", "metadata_version": "2.0", "publisher": {}, "role": "r"},
            "the provider metadata lists no distributions",
        ),
    ],
)
def test_what_is_not_a_feed_is_refused_with_a_reason(page, reason):
    (found,) = feed_documents("https://p/x.json", fake_fetch({"https://p/x.json": page}))
    assert isinstance(found, Refusal) and found.reason.startswith(reason)


def test_a_distribution_that_cannot_be_read_does_not_stop_the_others():
    pages = {
        "https://p/provider-metadata.json": {
            "canonical_url": "https://p/provider-metadata.json",
            "metadata_version": "2.0",
            "publisher": {},
            "distributions": [
                {"rolie": {"feeds": [{"url": "https://p/gone.json"}, {"url": "https://p/f.json"}]}}
            ],
        },
        "https://p/f.json": {"feed": {"entry": [{"content": {"src": "/d.json"}}]}},
        "https://p/d.json": {"document": {"csaf_version": "2.0"}},
    }
    found = list(feed_documents("https://p/provider-metadata.json", fake_fetch(pages)))
    assert found == [
        Refusal("https://p/gone.json", "HTTP 404 Not Found"),
        Document("https://p/d.json", {"document": {"csaf_version": "2.0"}}),
    ]


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        ({"document": {"csaf_version": "2.0"}}, "document"),
        ({"document": {"title": "no version"}}, None),
        ({"feed": {"entry": []}}, "rolie"),
        (
            {"canonical_url": "", "metadata_version": "", "publisher": {}, "distributions": []},
            "provider",
        ),
        ({"canonical_url": "", "metadata_version": ""}, None),
        ([1, 2], None),
    ],
)
def test_kind_of(data, kind):
    assert kind_of(data) == kind
