"""The one call every change that can move a score makes: `rescore_request(...)`.

It lives in the lowest layer so that tenants, providers, inventory and telemetry can call it
without importing posture (imports go one way). It only records *what* the change touched
(clusters, tenants, providers, or everything) in the caller's transaction; when that
transaction commits, the dispatcher posture registers at start-up (posture.rescore) turns it
into a debounced re-score of the clusters concerned. A rolled-back change asks for nothing.

Requests made inside one transaction are merged into one dispatch: `apply_tenants` editing
50 tenants asks once, not 50 times.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

logger = logging.getLogger(__name__)


@dataclass
class RescoreScope:
    """What a change touched. `everything`: every cluster (a trust class, a global setting)."""

    clusters: set[int] = field(default_factory=set)
    tenants: set[int] = field(default_factory=set)
    providers: set[int] = field(default_factory=set)
    everything: bool = False
    reasons: set[str] = field(default_factory=set)

    def merge(self, other: RescoreScope) -> None:
        self.clusters |= other.clusters
        self.tenants |= other.tenants
        self.providers |= other.providers
        self.everything = self.everything or other.everything
        self.reasons |= other.reasons

    @property
    def empty(self) -> bool:
        return not (self.everything or self.clusters or self.tenants or self.providers)


Dispatcher = Callable[[RescoreScope], object]
_dispatcher: list[Dispatcher] = []
_suppressed: ContextVar[bool] = ContextVar("rescore_suppressed", default=False)
# What this thread's open transaction asked for (a connection belongs to one thread).
_waiting = threading.local()


@contextmanager
def rescore_suppressed() -> Iterator[None]:
    """Ask for nothing while loading many changes that end with a score of everything (the
    demo's world): one score at the end instead of one per step."""
    token = _suppressed.set(True)
    try:
        yield
    finally:
        _suppressed.reset(token)


def dispatcher_register(dispatch: Dispatcher) -> None:
    """Posture's AppConfig.ready() registers the function that enqueues the re-scores."""
    _dispatcher[:] = [dispatch]


def rescore_request(
    *,
    reason: str,
    clusters: Iterable[int] = (),
    tenants: Iterable[int] = (),
    providers: Iterable[int] = (),
    everything: bool = False,
) -> None:
    """Ask for a re-score of what a change touched, once the current transaction commits
    (at once outside a transaction). `reason` is a short word for logs ("acceptance")."""
    scope = RescoreScope(
        clusters={int(c) for c in clusters if c is not None},
        tenants={int(t) for t in tenants if t is not None},
        providers={int(p) for p in providers if p is not None},
        everything=everything,
        reasons={reason},
    )
    if scope.empty or _suppressed.get():
        return
    waiting = getattr(_waiting, "scope", None)
    if waiting is None:
        _waiting.scope = scope
    else:
        waiting.merge(scope)
    transaction.on_commit(_dispatch_waiting)


def _dispatch_waiting() -> None:
    """On commit: hand everything asked for so far to posture, once. A transaction's later
    callbacks find nothing left, so 50 requests in one transaction make one dispatch. What a
    rolled-back transaction asked for joins the next dispatch: a re-score that finds nothing
    changed, never a change left unscored."""
    scope = getattr(_waiting, "scope", None)
    _waiting.scope = None
    if scope is None or scope.empty:
        return
    if not _dispatcher:
        logger.warning("no re-score dispatcher registered: %s waits", sorted(scope.reasons))
        return
    _dispatcher[0](scope)


class RescoringAdminMixin:
    """A ModelAdmin whose saves and deletions can move scores (tenants, trust classes,
    exemptions): each asks for a re-score of what `rescore_scope(obj)` names. Put it before
    the admin base class."""

    rescore_reason = "admin edit"

    def rescore_scope(self, obj: Any) -> dict[str, Any]:
        """Keyword arguments for rescore_request; every cluster unless overridden."""
        return {"everything": True}

    def save_model(self, request: Any, obj: Any, form: Any, change: bool) -> None:
        # What the object touched before the edit too (an exemption moved to another cluster).
        stored = type(obj)._base_manager.filter(pk=obj.pk).first() if change else None
        super().save_model(request, obj, form, change)
        if stored is not None:
            rescore_request(reason=self.rescore_reason, **self.rescore_scope(stored))
        rescore_request(reason=self.rescore_reason, **self.rescore_scope(obj))

    def delete_model(self, request: Any, obj: Any) -> None:
        scope = self.rescore_scope(obj)
        super().delete_model(request, obj)
        rescore_request(reason=self.rescore_reason, **scope)

    def delete_queryset(self, request: Any, queryset: Any) -> None:
        scopes = [self.rescore_scope(obj) for obj in queryset]
        super().delete_queryset(request, queryset)
        for scope in scopes:
            rescore_request(reason=self.rescore_reason, **scope)
