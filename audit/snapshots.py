"""Model instances as JSON data for an event's before and after."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from audit.chain import normalise_json


def as_json_data(value: Any) -> Any:
    """`value` as plain JSON data (dates as ISO strings, decimals and UUIDs as strings), in the
    form the hash chain takes it, so what is hashed is what the database gives back."""
    if value is None:
        return None
    return normalise_json(json.loads(json.dumps(value, cls=DjangoJSONEncoder, allow_nan=False)))


def model_to_audit_dict(
    obj: models.Model, *, fields: Iterable[str] | None = None, exclude: Iterable[str] = ()
) -> dict[str, Any]:
    """The instance's concrete fields (a foreign key by its id, under the field's name) as
    JSON data; many-to-many fields only when named in `fields` (as a sorted list of ids)."""
    wanted = set(fields) if fields is not None else None
    skipped = set(exclude)
    data: dict[str, Any] = {}
    for field in obj._meta.concrete_fields:
        if field.primary_key or field.name in skipped:
            continue
        if wanted is not None and field.name not in wanted:
            continue
        data[field.name] = getattr(obj, field.attname)
    for field in obj._meta.many_to_many:
        if wanted is not None and field.name in wanted and obj.pk is not None:
            data[field.name] = sorted(getattr(obj, field.name).values_list("pk", flat=True))
    return as_json_data(data)
