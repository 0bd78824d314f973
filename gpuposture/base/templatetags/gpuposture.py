"""Template filters shared by every page."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from gpuposture.base.changes import PathChange, changed_paths
from gpuposture.base.labels import evidence_rows, words

register = template.Library()


@register.filter
def pretty_json(value: Any) -> str:
    """Evidence as indented JSON (autoescaped by the template like any other string)."""
    return json.dumps(value, indent=2, sort_keys=True, default=str)


@register.filter
def changes_from(after: Any, before: Any) -> list[PathChange]:
    """`after|changes_from:before`: only the paths that differ, each as words."""
    return changed_paths(before, after)


@register.filter
def state_now(value: Any) -> str:
    """An object's state as of now, for objects whose state depends on the time (an approval
    past its expiry reads "expired")."""
    return value.state(timezone.now())


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


@register.filter
def inline_code(text: Any) -> SafeString:
    """Check texts quote names as `this` (as in the docs): escape the text, then show the
    quoted parts as <code>. The markup is ours; the text inside is escaped first."""
    escaped = escape(str(text))
    return mark_safe(_CODE_SPAN.sub(r"<code>\1</code>", escaped))  # noqa: S308


@register.filter
def breakable(text: Any) -> SafeString:
    """A long name (a taint, a label) that may wrap after "/", "=" or ":" rather than in the
    middle of a word, or run off a narrow table. Escaped first; the <wbr> markup is ours."""
    escaped = escape(str(text))
    return mark_safe(re.sub(r"([/=:])", r"\1<wbr>", escaped))  # noqa: S308


SMALLEST_SHOWN = 0.001


@register.filter
def points(value: Any) -> str:
    """A score or a number of risk points as people read it: whole numbers without ".0",
    others with the digits stored (a score below 10 keeps its decimal, never showing 0)."""
    if value is None or value == "":
        return ""
    number = float(value)
    if number.is_integer():
        return f"{int(number):,}"
    if 0 < number < SMALLEST_SHOWN:
        # A score far below 0.1 (a huge risk) reads as a bound, never as 4e-08 nor as 0.
        return f"< {SMALLEST_SHOWN}"
    # Ten significant digits (float noise such as 56.10000000000003 reads 56.1), written out.
    rounded = float(f"{number:.10g}")
    if rounded.is_integer():
        return f"{int(rounded):,}"
    return f"{Decimal(repr(rounded)):,f}"


@register.filter(name="words")
def words_filter(value: Any) -> str:
    """A code (`mig_gi`) as words ("MIG GPU instance"): gpuposture.base.labels."""
    return words(value)


@register.filter
def evidence_table(value: Any) -> list[dict[str, Any]]:
    """Evidence as rows for a table (gpuposture.base.labels.evidence_rows)."""
    return evidence_rows(value)


@register.filter
def squash(text: Any) -> str:
    """Runs of whitespace as one space, trimmed (a page title built from indented blocks)."""
    return " ".join(str(text).split())


@register.filter
def model_words(object_type: Any) -> str:
    """An audit event's `app_label.model` ("tenants.sharingrequest") as the model's name in
    words ("sharing request"); an unknown type reads as it is."""
    from django.apps import apps

    try:
        return str(apps.get_model(str(object_type))._meta.verbose_name)
    except (LookupError, ValueError):
        return str(object_type)
