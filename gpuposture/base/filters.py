"""Filters that name an object the way a person does (DESIGN §8): `?cluster=prod-east`,
`?tenant=alpha` or `?tenant=Team Alpha`, and still the id a script read from the API."""

from __future__ import annotations

import django_filters
from django.db.models import Q, QuerySet


def named(path: str, value: str, names: tuple[str, ...]) -> Q:
    """Matches the object at `path` ("" for the model itself) by any of its `names` fields,
    or by its id when the value is a number. A name that is all digits still matches by name:
    both are tried, and an id and a name rarely meet on one value."""
    prefix = f"{path}__" if path else ""
    value = value.strip()
    query = Q()
    for field in names:
        query |= Q(**{f"{prefix}{field}": value})
    if value.isdigit():
        query |= Q(**{f"{prefix}pk": int(value)})
    return query


class NamedFilter(django_filters.CharFilter):
    """A relation named by name, slug or id: `NamedFilter(path="cluster", names=("name",))`."""

    def __init__(self, *, path: str, names: tuple[str, ...], **kwargs) -> None:
        super().__init__(**kwargs)
        self.path = path
        self.names = names

    def filter(self, qs: QuerySet, value: str) -> QuerySet:
        if value in ([], (), {}, "", None):
            return qs
        return qs.filter(named(self.path, value, self.names))


def cluster_filter() -> NamedFilter:
    return NamedFilter(path="cluster", names=("name",), label="Cluster (name or id)")


def tenant_filter() -> NamedFilter:
    return NamedFilter(path="tenant", names=("slug", "name"), label="Tenant (slug, name or id)")
