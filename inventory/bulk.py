"""Set-based writes of plain rows, for syncs that touch tens of thousands of rows at once.

bulk_create and bulk_update build a model instance per row and serialise every JSON value
again; on PostgreSQL bulk_create also quotes each JSON document into an UNNEST array in Python,
and bulk_update compares every row of a batch with every other (CASE WHEN). With 40,000 pods
that was most of a sync. Here rows are tuples whose JSON columns are already JSON text (sync has
it from hashing), written with COPY on PostgreSQL and one executemany on SQLite.

The SQL is assembled from table and column names of the models, quoted by the backend (the
`noqa: S608` below); every value goes as a parameter or through COPY.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Model


def db_datetime(value: datetime) -> Any:
    """A datetime as the database driver takes it in a raw row (text on SQLite)."""
    return connection.ops.adapt_datetimefield_value(value)


def rows_insert(
    model: type[Model], columns: Sequence[str], rows: list[tuple[Any, ...]], now: datetime
) -> None:
    """Insert `rows` (values in `columns` order, by attname) into the model's table; every other
    column gets its field default, or `now` for auto_now(_add) fields."""
    if not rows:
        return
    defaults = _defaults(model, columns, now)
    names = [*columns, *defaults]
    extra = tuple(defaults.values())
    table = _quoted(model._meta.db_table)
    column_list = ", ".join(_quoted(_column(model, name)) for name in names)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({column_list}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row + extra)
        else:
            marks = ", ".join(["%s"] * len(names))
            insert = f"INSERT INTO {table} ({column_list}) VALUES ({marks})"  # noqa: S608
            cursor.executemany(insert, [row + extra for row in rows])


def rows_update(model: type[Model], columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
    """Set `columns` of each row by primary key; `rows` are (pk, *values in columns order)."""
    if not rows:
        return
    table = _quoted(model._meta.db_table)
    pk = _quoted(model._meta.pk.column)
    targets = [_quoted(_column(model, name)) for name in columns]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            temp = _quoted(f"bulk_update_{model._meta.db_table}")
            _update_through_temp_table(cursor, (table, temp, pk), targets, rows)
        else:
            sets = ", ".join(f"{target} = %s" for target in targets)
            update = f"UPDATE {table} SET {sets} WHERE {pk} = %s"  # noqa: S608
            cursor.executemany(update, [(*values, key) for key, *values in rows])


def _update_through_temp_table(
    cursor: Any, names: tuple[str, str, str], targets: list[str], rows: list[tuple[Any, ...]]
) -> None:
    """One COPY into a temp table and one UPDATE ... FROM it. The temp table copies the
    column types, so COPY parses JSON text into jsonb as it would for the table itself."""
    table, temp, pk = names
    column_list = ", ".join([pk, *targets])
    cursor.execute(f"DROP TABLE IF EXISTS {temp}")
    empty = f"SELECT {column_list} FROM {table} WITH NO DATA"  # noqa: S608
    cursor.execute(f"CREATE TEMP TABLE {temp} AS {empty}")
    with cursor.cursor.copy(f"COPY {temp} ({column_list}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    sets = ", ".join(f"{target} = u.{target}" for target in targets)
    update = f"UPDATE {table} AS t SET {sets} FROM {temp} AS u WHERE t.{pk} = u.{pk}"  # noqa: S608
    cursor.execute(update)
    cursor.execute(f"DROP TABLE {temp}")


def _defaults(model: type[Model], columns: Sequence[str], now: datetime) -> dict[str, Any]:
    """attname -> database value for the concrete fields a raw row leaves out."""
    given = set(columns)
    values: dict[str, Any] = {}
    for field in model._meta.concrete_fields:
        if field.primary_key or field.attname in given:
            continue
        auto = getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)
        value = now if auto else field.get_default()
        values[field.attname] = field.get_db_prep_save(value, connection)
    return values


def _column(model: type[Model], attname: str) -> str:
    for field in model._meta.concrete_fields:
        if field.attname == attname:
            return field.column  # type: ignore[return-value]  # a concrete field has a column
    raise ValueError(f"{model.__name__} has no column {attname!r}")


def _quoted(name: str) -> str:
    return connection.ops.quote_name(name)
