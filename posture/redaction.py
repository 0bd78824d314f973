"""Hide other tenants from a tenant viewer inside evidence and titles. PURE.

A co-location finding is about two tenants; a tenant viewer must learn that they share a GPU
and with which trust class, but not who the other tenant is or what its pods are called."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

HIDDEN_TENANT = "(another tenant)"
HIDDEN_POD = "(another tenant's pod)"


@dataclass(frozen=True)
class HiddenScope:
    tenants: frozenset[str]
    namespaces: frozenset[str]

    def hides_string(self, value: str) -> str | None:
        if value in self.tenants:
            return HIDDEN_TENANT
        namespace = value.split("/", 1)[0] if "/" in value else None
        if namespace in self.namespaces or value in self.namespaces:
            return HIDDEN_POD
        return None


def redact(value: Any, scope: HiddenScope | None) -> Any:
    """A copy of `value` (evidence: dicts, lists, strings) with hidden tenants replaced."""
    if scope is None or not (scope.tenants or scope.namespaces):
        return value
    if isinstance(value, dict):
        return {k: redact(v, scope) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, scope) for v in value]
    if isinstance(value, str):
        return scope.hides_string(value) or redact_text(value, scope)
    return value


def redact_text(text: str, scope: HiddenScope | None) -> str:
    """Replace hidden tenant slugs and namespace-qualified names inside free text."""
    if scope is None or not (scope.tenants or scope.namespaces):
        return text
    for namespace in scope.namespaces:
        text = re.sub(rf"(?<![\w.-]){re.escape(namespace)}/[\w.-]+", HIDDEN_POD, text)
    for slug in scope.tenants:
        text = re.sub(rf"(?<![\w-]){re.escape(slug)}(?![\w-])", HIDDEN_TENANT, text)
    return text
