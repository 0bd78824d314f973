"""One kind's watch, and the one-item list that asks whether a kind the last full list could
not read can be read now: the calls of a watch re-sync (inventory.sources.kube.read_changes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import urllib3
from kubernetes.client.exceptions import ApiException

from inventory.sources.base import SourceError, WatchExpired
from inventory.sources.kube_admission import is_admission_label
from inventory.sources.kube_kinds import OPTIONAL_KINDS, TOLERANT_KINDS
from inventory.sources.kube_unread import unread_warning, unwatched_warning
from inventory.sources.kube_wire import api_error, status_message, watch_events

Events = list[tuple[str, dict[str, Any]]]


def watch_kind(
    kind: str, list_call: Callable[..., Any], since: str, *, seconds: int, timeouts: tuple
) -> tuple[Events, str, str | None]:
    """Events of one kind since `since`, the resourceVersion they bring us to, and the run's
    warning when a kind that may be refused was."""
    try:
        response = list_call(
            watch=True,
            resource_version=since,
            timeout_seconds=seconds,
            allow_watch_bookmarks=True,
            _preload_content=False,
            _request_timeout=timeouts,
        )
        try:
            body = response.read()
        finally:
            response.release_conn()
    except ApiException as exc:
        if exc.status == 404 and kind in OPTIONAL_KINDS:
            return [], since, None  # the CRD went away: nothing of it to keep
        if exc.status == 410:
            # A server may refuse an expired resourceVersion with an HTTP 410 rather than a
            # 410 ERROR event (API concepts, "410 Gone responses"): only a full list helps,
            # and watching from the same place again would fail until the full resync.
            raise WatchExpired(f"watching {kind}: HTTP 410: {status_message(exc)}") from exc
        if exc.status in (401, 403) and kind in TOLERANT_KINDS:
            # The rest of the watch goes on; the run says this kind was not read, and the
            # next sync watches it from here again.
            return [], since, unwatched_warning(kind, str(api_error(kind, exc, verb="watching")))
        raise api_error(kind, exc, verb="watching") from exc
    except urllib3.exceptions.HTTPError as exc:
        raise SourceError(
            f"watching {kind}: cannot reach the API server: {exc}", retryable=True
        ) from exc
    return (*watch_events(kind, body, since), None)


def probe_kind(
    kind: str, list_call: Callable[..., Any], *, timeouts: tuple
) -> tuple[bool, str | None]:
    """Whether a kind the last full list could not read can be listed now (one item), or the
    run's warning when it still cannot. Not served stays an answer, said nowhere; a failure
    the full list would not tolerate (an admission kind's list tolerates any) fails the watch
    as it would the list."""
    try:
        response = list_call(limit=1, _preload_content=False, _request_timeout=timeouts)
        response.data  # noqa: B018 - read the answer so the connection goes back to the pool
    except ApiException as exc:
        error = api_error(kind, exc)
        if exc.status == 404:
            return False, None
        if exc.status in (401, 403) or is_admission_label(kind):
            return False, unread_warning(kind, str(error))
        raise error from exc
    except urllib3.exceptions.HTTPError as exc:
        error = SourceError(f"listing {kind}: cannot reach the API server: {exc}", retryable=True)
        if is_admission_label(kind):
            return False, unread_warning(kind, str(error))
        raise error from exc
    return True, None
