"""Names for the ids an audit event stores: a person reads "decided_by: ana", not "4".

Events keep a foreign key as its id (audit.snapshots; the hash chain and the API keep it so);
the page swaps each id for the related object's name when it shows the event. One query per
related model on the page, whatever the number of events.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any

from django.apps import apps
from django.db import models

from audit.diff import Change, changed_keys, shown
from audit.models import AuditEvent


def _relations(object_type: str) -> dict[str, type[models.Model]]:
    """Field name -> related model, for the foreign keys and many-to-many fields of a model."""
    try:
        model = apps.get_model(object_type)
    except (LookupError, ValueError):
        return {}
    return {
        f.name: f.related_model
        for f in model._meta.get_fields()
        if f.concrete and f.is_relation and isinstance(f.related_model, type)
    }


def _labels(object_type: str) -> dict[str, str]:
    """Field name -> its verbose name ("accepted until"), for the concrete fields of a model."""
    try:
        model = apps.get_model(object_type)
    except (LookupError, ValueError):
        return {}
    return {
        f.name: str(f.verbose_name) for f in model._meta.get_fields() if hasattr(f, "verbose_name")
    }


def _ids(value: Any) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
    return []


def named_event_rows(events: list[AuditEvent]) -> list[tuple[AuditEvent, list[Change]]]:
    """Each event with the keys it changed, ids of related objects shown as their names."""
    wanted: dict[type[models.Model], set[int]] = defaultdict(set)
    plans = []
    for event in events:
        relations = _relations(event.object_type)
        labels = _labels(event.object_type)
        changes = [
            replace(c, label=labels.get(c.key, "")) for c in changed_keys(event.before, event.after)
        ]
        for change in changes:
            model = relations.get(change.key)
            if model is not None:
                for side in (event.before, event.after):
                    if isinstance(side, dict):
                        wanted[model].update(_ids(side.get(change.key)))
        plans.append((event, changes, relations))
    names = {
        model: {obj.pk: str(obj) for obj in model._default_manager.filter(pk__in=ids)}
        for model, ids in wanted.items()
        if ids
    }
    return [
        (event, [_named(c, event, relations, names) for c in changes])
        for event, changes, relations in plans
    ]


def _named(change: Change, event: AuditEvent, relations: dict, names: dict) -> Change:
    model = relations.get(change.key)
    if model is None:
        return change

    def show(side: Any, text: str | None) -> str | None:
        if text is None or not isinstance(side, dict):
            return text
        value = side.get(change.key)
        known = names.get(model, {})

        def name(pk: int) -> str:
            return known.get(pk, f"#{pk} (deleted)")

        if isinstance(value, list):
            return shown([name(v) if v in _ids([v]) else v for v in value])
        return name(value) if _ids(value) else text

    return replace(
        change,
        before=show(event.before, change.before),
        after=show(event.after, change.after),
    )
