"""Template filters shared by every page."""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.utils import timezone

register = template.Library()


@register.filter
def pretty_json(value: Any) -> str:
    """Evidence as indented JSON (autoescaped by the template like any other string)."""
    return json.dumps(value, indent=2, sort_keys=True, default=str)


@register.filter
def state_now(value: Any) -> str:
    """An object's state as of now, for objects whose state depends on the time (an approval
    past its expiry reads "expired")."""
    return value.state(timezone.now())
