"""Bulletin imports from URLs: a CSAF document, or a provider's feed (provider-metadata.json,
a ROLIE feed, a directory index.txt). Every URL, including each one a feed names, goes through
the guarded fetcher; each document is imported on its own, so one that fails to fetch or is not
valid CSAF is refused with the reason and the rest of the batch still lands."""

from __future__ import annotations

from gpuposture.base.fetch import FetchError, fetch, shown_url
from inventory.bulletins.csaf.feed import Document, FeedError, feed_documents
from inventory.bulletins.patch_refresh import nodes_patch_refresh
from inventory.bulletins.store import DEFAULTS, ImportOptions, ImportResult, bulletin_import


def bulletins_import_urls(
    *, urls: list[str], refresh: bool = True, options: ImportOptions = DEFAULTS
) -> ImportResult:
    """Import the documents behind each URL, then refresh node patch status once (unless
    `refresh` is False because the caller imports more and refreshes itself)."""
    result = ImportResult()
    for url in urls:
        for found in feed_documents(url, _fetch):
            if isinstance(found, Document):
                bulletin_import(data=found.data, source=found.url, result=result, options=options)
            else:
                result.refused.append((found.url, found.reason))
    if refresh:
        nodes_patch_refresh()
    return result


def _fetch(url: str) -> bytes:
    # The feed module is pure and knows only its own error. It records the URL it asked for, so
    # the reason names a URL only when the failure was elsewhere (after a redirect).
    try:
        return fetch(url)
    except FetchError as exc:
        raise FeedError(exc.reason if exc.url == shown_url(url) else str(exc)) from exc
