"""One kind's full list, page by page (`limit` + `continue`), as the live source reads it
(inventory.sources.kube): every page at the first page's resourceVersion, the list restarted
whose continue token expired (410 Gone), each item given the kind and version typed lists
leave out. Responses are read as raw JSON (`_preload_content=False`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import urllib3
from kubernetes.client.exceptions import ApiException

from inventory.sources.base import Progress, SourceError
from inventory.sources.kube_wire import api_error, decode
from inventory.sources.nul_strings import NulReplaced, may_hold_nul, nul_replace

MAX_LIST_RESTARTS = 3


def list_all(
    kind: str,
    list_call: Any,
    progress: Progress,
    *,
    page_size: int,
    timeouts: tuple[float, float],
    versions: dict[str, str],
    keep: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    nul: NulReplaced | None = None,
) -> list[dict[str, Any]]:
    """Every page of one list; `keep` cuts each item as its page is read (owner kinds). The
    list's resourceVersion is recorded in `versions` under `kind` as its first page is read.
    A NUL in an item's strings is removed, counted in `nul` (nul_strings): only a page
    whose answer holds one is walked."""
    found = NulReplaced()  # this list's, counted once it is read to the end
    items: list[dict[str, Any]] = []
    token: str | None = None
    restarts = 0
    while True:
        try:
            body, holds_nul = _page(kind, list_call, token, page_size=page_size, timeouts=timeouts)
        except ApiException as exc:
            if exc.status == 410 and token and restarts < MAX_LIST_RESTARTS:
                # The continue token expired: the only consistent answer is a new list.
                items, token, restarts = [], None, restarts + 1
                found = NulReplaced()
                continue
            raise api_error(kind, exc) from exc
        if token is None:
            # Every page of a list is read at the first page's resourceVersion.
            version = (body.get("metadata") or {}).get("resourceVersion")
            if isinstance(version, str) and version:
                versions[kind] = version
        for item in body.get("items") or []:
            if isinstance(item, dict):
                # Typed lists leave kind out of their items; normalise needs it. A
                # custom kind's label is "group/Kind" (kube_kinds.NETWORK_CUSTOM_KINDS).
                item.setdefault("kind", kind.rpartition("/")[2])
                # The version read (DRA kinds may be served at several).
                if isinstance(body.get("apiVersion"), str):
                    item.setdefault("apiVersion", body["apiVersion"])
                if holds_nul:
                    nul_replace([item], found)
                item = keep(item) if keep else item
            items.append(item)
        progress(kind, len(items))
        token = (body.get("metadata") or {}).get("continue") or None
        if not token:
            if nul is not None:
                nul.extend(found)
            return items


def _page(
    kind: str, list_call: Any, token: str | None, *, page_size: int, timeouts: tuple[float, float]
) -> tuple[dict[str, Any], bool]:
    """The page's list object, and whether its answer may hold a NUL in a string."""
    kwargs: dict[str, Any] = {
        "limit": page_size,
        "_preload_content": False,
        "_request_timeout": timeouts,
    }
    if token:
        kwargs["_continue"] = token
    try:
        response = list_call(**kwargs)
        body = decode(response.data)
    except urllib3.exceptions.HTTPError as exc:
        raise SourceError(
            f"listing {kind}: cannot reach the API server: {exc}", retryable=True
        ) from exc
    except ValueError as exc:
        raise SourceError(f"listing {kind}: the answer is not JSON: {exc}", retryable=True) from exc
    if not isinstance(body, dict):
        raise SourceError(f"listing {kind}: the answer is not a list object", retryable=True)
    return body, may_hold_nul(response.data)
