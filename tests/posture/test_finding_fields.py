"""posture.finding_fields is the one list of a finding's fields (issue 20, part 5): the
serializer, the values() rows, the JSON, CSV and SARIF exports and the search all follow it,
so a new field is one line there (plus the model)."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime

from django.core.exceptions import FieldDoesNotExist

from posture.exports import export_text, findings_sarif
from posture.finding_fields import (
    API_FIELDS,
    CSV_COLUMNS,
    FINDING_FIELDS,
    SARIF_FIELDS,
    SEARCHED,
    VALUE_COLUMNS,
)
from posture.finding_rows import finding_row, finding_values
from posture.finding_search import SHOWN
from posture.models import Finding
from posture.rules import CHECKS
from posture.serializers import FindingSerializer

# Model fields that never leave the app as a finding's field: identity, bookkeeping, the
# acceptor (the audit log says who), and the tenants (read from the links, as `tenants`).
# (`exposure` is read for the finding's `risk`.)
# accepted_basis: what an acceptance of a bulletin finding covered, to tell when it lists more
# (posture.finding_store); the acceptance itself is listed (accepted_*).
INTERNAL = {"key", "fingerprint", "evidence_digest", "accepted_by", "tenants", "accepted_basis"}
WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _stored() -> dict:
    """A values() row as finding_values reads one, every column filled."""
    stored: dict[str, object] = {column: f"<{column}>" for column in VALUE_COLUMNS}
    stored.update(id=7, check_id=sorted(CHECKS)[0], severity="high", evidence={"a": 1})
    for field in FINDING_FIELDS:
        if field.when:
            stored[field.source] = WHEN
    return stored


def _row() -> dict:
    return finding_row(_stored(), None, ["beta", "alpha"])


def test_every_field_is_the_serializers_in_the_same_order():
    assert list(FindingSerializer().fields) == API_FIELDS
    assert len(set(API_FIELDS)) == len(API_FIELDS)


def test_every_field_is_a_rows_key_in_the_same_order():
    row = _row()
    assert list(row) == API_FIELDS
    assert row["tenants"] == ["alpha", "beta"]
    assert all(
        row[f.name] == WHEN.isoformat().replace("+00:00", "Z") for f in FINDING_FIELDS if f.when
    )


def test_only_the_tenants_have_no_column():
    assert [f.name for f in FINDING_FIELDS if f.source is None] == ["tenants"]


def test_every_column_is_a_lookup_on_the_model_and_values_reads_them_all():
    for column in VALUE_COLUMNS:
        model = Finding
        *relations, last = column.split("__")
        for name in relations:
            model = model._meta.get_field(name).related_model
        model._meta.get_field(last)  # raises FieldDoesNotExist for a misspelt source
    query = finding_values(Finding.objects.all()).query
    assert tuple(query.values_select) == VALUE_COLUMNS


def test_every_model_field_is_listed_or_named_internal():
    sources = {f.source.split("__")[0] for f in FINDING_FIELDS if f.source}
    model_fields = {f.name for f in Finding._meta.get_fields() if f.concrete or f.many_to_many}
    assert model_fields - sources == INTERNAL, "a new Finding field: list it in finding_fields"


def test_every_field_is_in_the_json_export():
    exported = json.loads("".join(export_text("json", [_row()], (), CHECKS)))
    assert list(exported[0]) == API_FIELDS


def test_the_csv_export_has_a_column_per_csv_field_in_their_places():
    text = "".join(export_text("csv", [_row()], (), CHECKS))
    header, cells = list(csv.reader(io.StringIO(text)))
    assert header == CSV_COLUMNS
    places = sorted(f.csv for f in FINDING_FIELDS if f.csv)
    assert places == list(range(1, len(CSV_COLUMNS) + 1)), "each column in its own place"
    by_name = dict(zip(header, cells, strict=True))
    assert by_name["tenants"] == "alpha; beta"
    assert json.loads(by_name["evidence"]) == {"a": 1}


def test_the_sarif_result_has_a_property_per_sarif_field():
    row = _row()
    result = findings_sarif([row], CHECKS)["runs"][0]["results"][0]
    assert list(result["properties"]) == [f.sarif for f in SARIF_FIELDS]
    assert result["properties"]["findingId"] == 7
    assert result["properties"]["tenants"] == ["alpha", "beta"]


def test_the_search_matches_the_searched_fields():
    assert SHOWN == SEARCHED
    for name in SEARCHED:
        try:
            Finding._meta.get_field(name)
        except FieldDoesNotExist as exc:  # the presenter hides by model field names
            raise AssertionError(f"{name} is not a Finding field") from exc
