"""Search findings by the words a person sees: title, subject and check id, in the database.

A tenant viewer is shown other tenants' names hidden ("(another tenant)"), but the stored
title or subject may name them. Matched in the database alone, a viewer searching "beta"
would find the findings that name tenant beta and learn it shares their GPUs. So for a
viewer the database match only proposes candidates, and a finding is kept when the text
they are shown matches (inventory.presenter, the one rule of what is hidden)."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from inventory.presenter import present
from posture.finding_fields import SEARCHED
from posture.models import Finding
from tenants.redaction import HiddenScope

MAX_CHARS = 200
# A viewer's candidates checked against what they are shown: a viewer sees their tenants'
# findings only, far fewer than this; past it the search asks to be narrowed by filters.
VIEWER_CANDIDATES = 5000
# The stored columns matched: the fields posture.finding_fields marks as searched.
SHOWN = SEARCHED


def search_text(text: str | None) -> str:
    """The text searched for: spaces collapsed, bounded."""
    return " ".join((text or "").split())[:MAX_CHARS]


def finding_search(queryset: QuerySet, text: str | None, scope: HiddenScope | None) -> QuerySet:
    """The findings of `queryset` whose title, subject kind, namespace or name, or check id
    contains `text`, case-insensitively."""
    text = search_text(text)
    if not text:
        return queryset
    matched = queryset.filter(Q(*((f"{name}__icontains", text) for name in SHOWN), _connector=Q.OR))
    if scope is None or scope.empty:
        return matched
    # With its cluster: a namespace is named as it is there (inventory.presenter.present).
    rows = matched.order_by("id").values("id", "cluster_id", *SHOWN)[:VIEWER_CANDIDATES]
    kept = [row["id"] for row in rows if shown_matches(present(scope, row, Finding), text)]
    return queryset.filter(pk__in=kept)


def shown_matches(row: dict, text: str) -> bool:
    """Whether `text` is in the row as shown (already presented for the viewer)."""
    needle = text.casefold()
    return any(needle in str(row[name]).casefold() for name in SHOWN)
