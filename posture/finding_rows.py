"""Findings as the API's JSON rows, read with `values()` instead of model instances and a
ModelSerializer: the findings list and export are the API's busiest paths, and building 50
models with their tenant and cluster, then walking DRF's fields for each, cost three times
the query. The rows are exactly FindingSerializer's (tests/posture/test_finding_rows.py
compares them field by field); the serializer stays the schema and the detail view's. Both
follow posture.finding_fields, the one list of a finding's fields."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from operator import itemgetter
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone
from rest_framework.fields import DateTimeField

from gpuposture.base.batching import IDS_PER_QUERY
from gpuposture.base.finding_status import effective_status
from inventory.presenter import present
from posture.finding_fields import (
    FINDING_FIELDS,
    VALUE_COLUMNS,
    finding_points,
    remediation_shown,
)
from posture.models import Finding, FindingTenant
from tenants.redaction import HiddenScope

# The serializer's field, told the time zone: looking up the current one costs more than
# writing the date (the app never activates another, so it is always the default).
_DATETIME = DateTimeField(default_timezone=timezone.get_default_timezone())

# The JSON keys in order, and their values() columns read in one call (the tenants, which have
# no column, hold the id until they are read apart).
_NAMES = tuple(field.name for field in FINDING_FIELDS)
_READ = itemgetter(*(field.source or "id" for field in FINDING_FIELDS))
# (JSON key, what turns the stored value into the JSON one): dates written as the serializer
# writes them, the fields derived from the check.
_CONVERTS = tuple(
    (field.name, _DATETIME.to_representation if field.when else field.derive)
    for field in FINDING_FIELDS
    if field.when or field.derive
)


def by_id(queryset: QuerySet) -> QuerySet:
    """The same findings in the same order, without DISTINCT over whole rows. A tenant
    viewer's scope is DISTINCT (a join through the tenant's viewers): read as it is, every
    page or chunk sorts each visible row, JSON included, to drop duplicates there are none
    of, so a viewer's request grew with all they may see. Here only the ids go through it."""
    if not queryset.query.distinct:
        return queryset
    order = queryset.query.order_by or queryset.model._meta.ordering
    ids = queryset.order_by().values("pk")
    return queryset.model.objects.filter(pk__in=ids).order_by(*order)


def finding_values(queryset: QuerySet) -> QuerySet:
    """The columns a row needs, in one query (the cluster joined; the tenants are read for the
    rows' ids by finding_rows, in one more)."""
    return queryset.values(*VALUE_COLUMNS)


class PagedFindingValues:
    """What a paginator pages: a slice reads `finding_values()` rows, while the count stays
    the plain queryset's (counting the values() query would join the cluster for every
    finding)."""

    def __init__(self, queryset: QuerySet) -> None:
        self.queryset = by_id(queryset)
        self.ordered = queryset.ordered

    def count(self) -> int:
        return self.queryset.count()

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, window: slice) -> list[dict[str, Any]]:
        return list(finding_values(self.queryset[window]))


EXPORT_CHUNK = 2000


def finding_rows_streamed(
    queryset: QuerySet, scope: HiddenScope | None, chunk: int = EXPORT_CHUNK
) -> Iterator[dict[str, Any]]:
    """Every row of `queryset` in id order, read `chunk` at a time (by id, so each read is a
    short query on the primary key whatever the database: memory stays constant)."""
    queryset = by_id(queryset)
    last = 0
    while True:
        values = list(finding_values(queryset.filter(pk__gt=last).order_by("id")[:chunk]))
        weights: dict[str, float] = {}
        own: dict[int, dict[str, int]] = {}
        tenants = tenant_slugs([v["id"] for v in values], weights, own)
        now = timezone.now()
        for v in values:
            yield finding_row(v, scope, tenants.get(v["id"], []), weights, now, own.get(v["id"]))
        if len(values) < chunk:
            return
        last = values[-1]["id"]


def used_checks(queryset: QuerySet) -> list[str]:
    """The check ids of `queryset`'s findings (a SARIF export lists their rules first)."""
    return sorted(set(queryset.order_by().values_list("check_id", flat=True).distinct()))


def finding_rows(values: Iterable[Mapping[str, Any]], scope: HiddenScope | None) -> list[dict]:
    """API rows from `finding_values()`, with other tenants hidden as `scope` says."""
    values = list(values)
    weights: dict[str, float] = {}
    own: dict[int, dict[str, int]] = {}
    tenants = tenant_slugs([v["id"] for v in values], weights, own)
    now = timezone.now()
    return [
        finding_row(v, scope, tenants.get(v["id"], []), weights, now, own.get(v["id"]))
        for v in values
    ]


def finding_row(
    v: Mapping[str, Any],
    scope: HiddenScope | None,
    tenants: list[str],
    weights: Mapping[str, float] | None = None,
    now: datetime | None = None,
    own: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """One API row from a `finding_values()` row and the slugs of the tenants it affects,
    presented for `scope` (inventory.presenter: O(1) per row whatever the number of
    tenants). `weights`: each tenant's class weight, and `own` the tenants' own exposures
    where their links have one, for the finding's `risk`; `now`: the time the status is
    read at (the rows of one answer share it)."""
    # Built in FINDING_FIELDS order, then the converted values replace theirs in place.
    row = dict(zip(_NAMES, _READ(v), strict=True))
    for name, convert in _CONVERTS:
        row[name] = convert(row[name])
    # As read now: a lapsed acceptance is open before an evaluation reopens its row.
    row["status"] = effective_status(v["status"], v["accepted_until"], now or timezone.now())
    row["tenants"] = sorted(tenants)
    present(scope, row, Finding)
    row["remediation"] = remediation_shown(row)
    # After the presenter: a tenant viewer's risk is what the finding adds to their tenants.
    weights, own = weights or {}, own or {}
    row["risk"] = finding_points(
        status=row["status"],
        severity=row["severity"],
        tenants=[(weights.get(slug, 1.0), own.get(slug, v["exposure"])) for slug in row["tenants"]],
    )
    return row


def tenant_slugs(
    finding_ids: list[int],
    weights: dict[str, float] | None = None,
    own: dict[int, dict[str, int]] | None = None,
) -> dict[int, list[str]]:
    """finding id -> the slugs of the tenants it affects: one query per IDS_PER_QUERY findings (one
    for a page). Each tenant's class weight goes into `weights` (slug -> weight), and the
    links' own exposures, where they have one, into `own` (finding id -> slug -> exposure)."""
    found: dict[int, list[str]] = {}
    weights = {} if weights is None else weights
    own = {} if own is None else own
    for start in range(0, len(finding_ids), IDS_PER_QUERY):
        batch = finding_ids[start : start + IDS_PER_QUERY]
        links = FindingTenant.objects.filter(finding_id__in=batch)
        columns = ("finding_id", "tenant__slug", "tenant__trust_class__risk_weight", "exposure")
        for finding_id, slug, weight, exposure in links.values_list(*columns):
            found.setdefault(finding_id, []).append(slug)
            weights[slug] = weight
            if exposure is not None:
                own.setdefault(finding_id, {})[slug] = exposure
    return found
