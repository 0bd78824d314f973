"""The declarative tenants file (DESIGN §9), validated into plain specs. PURE."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tenants.mapping import RESERVED_TENANT_SLUGS

SLUG_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
PRINCIPAL_RE = re.compile(r"^(group|user):(.{1,253})$")
# What Django accepts as a username (UnicodeUsernameValidator, 150 characters): a name outside it
# could never have an account, so it would wait for one forever.
USERNAME_RE = re.compile(r"^[\w.@+-]{1,150}\Z")
MAX_TENANTS = 10_000


class TenantSpecError(ValueError):
    """The tenants document is not valid; the message says where and why."""


@dataclass(frozen=True)
class TenantSpec:
    slug: str
    name: str
    trust_class: str
    namespaces: tuple[str, ...] = ()
    principals: tuple[tuple[str, str], ...] = ()  # (kind, name)
    viewers: tuple[str, ...] = ()


def parse_tenants_document(document: Any) -> list[TenantSpec]:
    if not isinstance(document, dict) or not isinstance(document.get("tenants"), list):
        raise TenantSpecError("expected a mapping with a `tenants:` list at the top level")
    items = document["tenants"]
    if len(items) > MAX_TENANTS:
        raise TenantSpecError(f"at most {MAX_TENANTS} tenants per file")
    specs = [_parse_tenant(item, index) for index, item in enumerate(items)]
    _reject_duplicates(specs)
    return specs


def _parse_tenant(item: Any, index: int) -> TenantSpec:
    where = f"tenants[{index}]"
    if not isinstance(item, dict):
        raise TenantSpecError(f"{where}: expected a mapping")
    unknown = set(item) - {"slug", "name", "trust_class", "namespaces", "principals", "viewers"}
    if unknown:
        raise TenantSpecError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    slug = _string(item, "slug", where)
    if not SLUG_RE.match(slug):
        raise TenantSpecError(f"{where}.slug {slug!r}: use lowercase letters, digits, hyphens")
    reserved_for = RESERVED_TENANT_SLUGS.get(slug)
    if reserved_for:
        raise TenantSpecError(
            f"{where}.slug {slug!r}: reserved for {reserved_for}; give the tenant another "
            "slug, or list such namespaces as platform namespaces"
        )
    namespaces = tuple(_string_list(item, "namespaces", where))
    for ns in namespaces:
        if not SLUG_RE.match(ns):
            raise TenantSpecError(f"{where}.namespaces: {ns!r} is not a Kubernetes namespace name")
    principals = []
    for principal in _string_list(item, "principals", where):
        match = PRINCIPAL_RE.match(principal)
        if not match:
            raise TenantSpecError(
                f"{where}.principals: {principal!r} must be 'group:NAME' or 'user:NAME'"
            )
        principals.append((match.group(1), match.group(2)))
    return TenantSpec(
        slug=slug,
        name=_string(item, "name", where, max_length=120),
        trust_class=_string(item, "trust_class", where, max_length=40),
        namespaces=namespaces,
        principals=tuple(principals),
        viewers=_viewers(item, where),
    )


def _viewers(item: dict, where: str) -> tuple[str, ...]:
    """The usernames, trimmed of the spaces around them and each once. Kept as written
    otherwise: a username is matched exactly, as signing in matches it, so "Ana" never gives
    the account "ana" a tenant (tenants.services warns of such a near miss)."""
    names = _string_list(item, "viewers", where)
    for name in names:
        if not USERNAME_RE.match(name):
            raise TenantSpecError(
                f"{where}.viewers: {name!r} is not a gpuposture username (letters, digits "
                "and @ . + - _, at most 150 characters)"
            )
    return tuple(dict.fromkeys(names))


def _string(item: dict, key: str, where: str, max_length: int = 63) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip():
        raise TenantSpecError(f"{where}.{key}: required, a non-empty string")
    if len(value) > max_length:
        raise TenantSpecError(f"{where}.{key}: at most {max_length} characters")
    return value.strip()


def _string_list(item: dict, key: str, where: str) -> list[str]:
    value = item.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise TenantSpecError(f"{where}.{key}: expected a list of strings")
    if len(value) > 1000:
        raise TenantSpecError(f"{where}.{key}: at most 1000 entries")
    return [v.strip() for v in value]


def _reject_duplicates(specs: list[TenantSpec]) -> None:
    seen_slugs: set[str] = set()
    owner_of_namespace: dict[str, str] = {}
    for spec in specs:
        if spec.slug in seen_slugs:
            raise TenantSpecError(f"tenant {spec.slug!r} appears twice")
        seen_slugs.add(spec.slug)
        for ns in spec.namespaces:
            if ns in owner_of_namespace:
                raise TenantSpecError(
                    f"namespace {ns!r} is claimed by both {owner_of_namespace[ns]!r} "
                    f"and {spec.slug!r}"
                )
            owner_of_namespace[ns] = spec.slug
