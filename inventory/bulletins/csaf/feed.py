"""Find the CSAF documents behind a URL: a document itself, a provider-metadata.json (CSAF 2.0
section 7.1.20) and its distributions (a directory with index.txt, or else its changes.csv, or
ROLIE feeds), a ROLIE feed, a directory's index.txt or changes.csv, or an aggregator.json (CSAF
2.0 section 7.2.1) and the providers and publishers it lists. The network is the caller's:
`fetch(url) -> bytes` raises FeedError when a URL cannot be read (the caller's fetch is where
the SSRF guard lives, so every URL a feed names is vetted)."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from gpuposture.base.safe_parse import SafeParseError, load_json

MAX_DOCUMENTS = 2000
MAX_JSON_BYTES = 20 * 1024 * 1024  # as inventory.bulletins.store.MAX_DOCUMENT_BYTES


class FeedError(Exception):
    """A URL that could not be read; the message says why."""


@dataclass(frozen=True)
class Document:
    url: str
    data: object  # decoded JSON, to be checked as CSAF by the importer


@dataclass(frozen=True)
class Refusal:
    url: str
    reason: str


Fetch = Callable[[str], bytes]


def feed_documents(
    url: str, fetch: Fetch, *, limit: int = MAX_DOCUMENTS
) -> Iterator[Document | Refusal]:
    """Each document behind `url`, fetched one by one; a URL that fails is a Refusal and the
    others still come."""
    path = urlsplit(url).path
    if path.endswith("/index.txt") or path.endswith("/changes.csv"):
        parse = _parse_index if path.endswith("/index.txt") else _parse_changes
        yield from _documents(url, _listing(url, fetch, parse), fetch, limit)
        return
    try:
        data = _json(fetch(url))
    except FeedError as exc:
        yield Refusal(url, str(exc))
        return
    kind = kind_of(data)
    if kind == "document":
        yield Document(url, data)
    elif kind == "provider":
        yield from _documents(url, _provider_urls(url, data, fetch), fetch, limit)
    elif kind == "rolie":
        yield from _documents(url, iter(rolie_urls(url, data)), fetch, limit)
    elif kind == "aggregator":
        yield from _documents(url, _aggregated_urls(url, data, fetch), fetch, limit)
    else:
        yield Refusal(url, "neither a CSAF document, a provider-metadata.json nor a ROLIE feed")


def kind_of(data: object) -> str | None:
    """What the JSON is: "document", "provider" (provider-metadata.json), "rolie",
    "aggregator" (aggregator.json), or None."""
    if not isinstance(data, dict):
        return None
    document = data.get("document")
    if isinstance(document, dict) and "csaf_version" in document:
        return "document"
    if isinstance(data.get("feed"), dict):
        return "rolie"
    keys = data.keys()
    if isinstance(data.get("aggregator"), dict) and keys & {"csaf_providers", "csaf_publishers"}:
        return "aggregator"
    if {"canonical_url", "metadata_version", "publisher"} <= keys and keys & {
        "distributions",
        "role",
    }:
        return "provider"
    return None


def rolie_urls(feed_url: str, data: dict) -> list[str]:
    """Document URLs of a ROLIE feed: each entry's content.src, else its rel=self link."""
    found = []
    entries = data["feed"].get("entry")
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        content = entry.get("content")
        src = content.get("src") if isinstance(content, dict) else None
        if not isinstance(src, str):
            links = entry.get("link") if isinstance(entry.get("link"), list) else []
            selves = [
                k.get("href") for k in links if isinstance(k, dict) and k.get("rel") == "self"
            ]
            src = next((h for h in selves if isinstance(h, str)), None)
        if src:
            found.append(urljoin(feed_url, src))
    return found


def index_urls(index_url: str, text: str) -> list[str]:
    """Document URLs of a CSAF directory's index.txt (paths relative to the directory)."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        # index.txt lists only documents, but a stray entry must not be fetched as one.
        if line and urlsplit(line).path.lower().endswith(".json"):
            found.append(urljoin(index_url, line))
    return found


def changes_urls(changes_url: str, text: str) -> list[str]:
    """Document URLs of a CSAF directory's changes.csv: rows `"<path>","<date-time>"`, the path
    relative to the directory."""
    found = []
    for row in csv.reader(io.StringIO(text)):
        if row and urlsplit(row[0].strip()).path.lower().endswith(".json"):
            found.append(urljoin(changes_url, row[0].strip()))
    return found


def _aggregated_urls(url: str, data: dict, fetch: Fetch) -> Iterator[str | Refusal]:
    """The documents of each provider (and publisher) an aggregator lists: its own
    provider-metadata.json, else the aggregator's mirror of it."""
    listed = [*_entries(data.get("csaf_providers")), *_entries(data.get("csaf_publishers"))]
    if not listed:
        yield Refusal(url, "the aggregator lists no providers")
    for entry in listed:
        metadata = entry.get("metadata")
        first = metadata.get("url") if isinstance(metadata, dict) else None
        mirrors = [m for m in _entries(entry.get("mirrors"), str)]
        refusals: list[Refusal] = []
        for where in [u for u in (first, *mirrors) if isinstance(u, str)]:
            try:
                provider = _json(fetch(urljoin(url, where)))
            except FeedError as exc:
                refusals.append(Refusal(urljoin(url, where), str(exc)))
                continue
            if kind_of(provider) != "provider":
                refusals.append(Refusal(urljoin(url, where), "not a provider-metadata.json"))
                continue
            yield from _provider_urls(urljoin(url, where), provider, fetch)
            break
        else:
            yield from refusals


def _entries(value: object, kind: type = dict) -> list:
    return [v for v in value if isinstance(v, kind)] if isinstance(value, list) else []


def _provider_urls(url: str, data: dict, fetch: Fetch) -> Iterator[str | Refusal]:
    distributions = data.get("distributions")
    if not isinstance(distributions, list) or not distributions:
        yield Refusal(url, "the provider metadata lists no distributions")
        return
    for distribution in distributions:
        if not isinstance(distribution, dict):
            continue
        directory = distribution.get("directory_url")
        if isinstance(directory, str):
            base = urljoin(url, directory.rstrip("/") + "/")
            listed = list(_listing(urljoin(base, "index.txt"), fetch, _parse_index))
            if any(isinstance(item, Refusal) for item in listed):
                # A directory must have both; changes.csv lists the same documents.
                changes = list(_listing(urljoin(base, "changes.csv"), fetch, _parse_changes))
                if not any(isinstance(item, Refusal) for item in changes):
                    listed = changes
            yield from listed
        rolie = distribution.get("rolie")
        feeds = rolie.get("feeds") if isinstance(rolie, dict) else None
        for feed in feeds if isinstance(feeds, list) else []:
            if isinstance(feed, dict) and isinstance(feed.get("url"), str):
                yield from _listing(urljoin(url, feed["url"]), fetch, _parse_rolie)


def _listing(
    url: str, fetch: Fetch, parse: Callable[[str, bytes], list[str]]
) -> Iterator[str | Refusal]:
    try:
        yield from parse(url, fetch(url))
    except FeedError as exc:
        yield Refusal(url, str(exc))


def _parse_index(url: str, raw: bytes) -> list[str]:
    try:
        return index_urls(url, raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise FeedError(f"index.txt is not UTF-8 text: {exc}") from exc


def _parse_changes(url: str, raw: bytes) -> list[str]:
    try:
        return changes_urls(url, raw.decode("utf-8"))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise FeedError(f"changes.csv is not UTF-8 CSV text: {exc}") from exc


def _parse_rolie(url: str, raw: bytes) -> list[str]:
    data = _json(raw)
    if kind_of(data) != "rolie":
        raise FeedError("not a ROLIE feed (no top-level feed)")
    return rolie_urls(url, data)


def _documents(
    url: str, found: Iterator[str | Refusal], fetch: Fetch, limit: int
) -> Iterator[Document | Refusal]:
    """Fetch each listed document once (a provider may list one in several distributions)."""
    seen: set[str] = set()
    for item in found:
        if isinstance(item, Refusal):
            yield item
            continue
        if item in seen:
            continue
        if len(seen) >= limit:
            yield Refusal(url, f"lists more than {limit} documents; only the first {limit} read")
            return
        seen.add(item)
        try:
            yield Document(item, _json(fetch(item)))
        except FeedError as exc:
            yield Refusal(item, str(exc))


def _json(raw: bytes) -> object:
    try:
        return load_json(raw, max_bytes=MAX_JSON_BYTES)
    except SafeParseError as exc:
        raise FeedError(f"not readable JSON: {exc}") from exc
