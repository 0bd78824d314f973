"""Findings as JSON, CSV (safe to open in a spreadsheet), SARIF 2.1.0 and Kubernetes policy
reports (posture.policy_reports). PURE: takes the API's finding dicts
(posture.serializers.FindingSerializer output) and the check catalogue.

JSON, CSV and SARIF are written as a stream of text (`export_text`), a row at a time, so an
export of any size is served in constant memory (posture/api.py streams it, export_findings
writes it); the text is byte for byte what `json.dumps(document, indent=2, default=str)` and the csv
module write for the whole document at once."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from json.encoder import encode_basestring_ascii as _string
from typing import Any

from gpuposture.base.spreadsheet import FORMULA_STARTS, csv_lines, spreadsheet_safe
from posture.claims import claim_namespace, claim_note
from posture.finding_fields import CSV_COLUMNS, CSV_FIELDS, SARIF_FIELDS, FindingField
from posture.policy_reports import REPORT_FORMATS, report_documents, report_json

__all__ = ["CSV_COLUMNS", "FORMULA_STARTS", "findings_csv", "findings_sarif", "spreadsheet_safe"]

FORMATS = {  # format -> (content type, file name)
    "json": ("application/json", "findings.json"),
    "csv": ("text/csv", "findings.csv"),
    "sarif": ("application/sarif+json", "findings.sarif"),
    # Kubernetes policy reports (posture.policy_reports): one report, or a v1 List of them,
    # as JSON (which `kubectl apply -f` reads as it reads YAML).
    "openreports": ("application/json", "findings-openreports.json"),
    "policyreport": ("application/json", "findings-policyreport.json"),
}

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_LEVEL = {"critical": "error", "high": "error", "medium": "warning", "low": "note"}
# GitHub code scanning reads this 0-10 score to rank security results.
SECURITY_SEVERITY = {"critical": "9.5", "high": "8.0", "medium": "5.5", "low": "3.0"}
TOOL_URI = "https://github.com/gpuposture/gpuposture"


def export_text(
    kind: str,
    rows: Iterable[Mapping[str, Any]],
    used: Iterable[str],
    checks: Mapping[str, Any],
    *,
    link: str = "",
    namespaces: frozenset[str] | None = None,
) -> Iterator[str]:
    """The export in format `kind` as pieces of text, a row at a time. `used`: the check ids
    of the rows (SARIF lists their rules before the results, so they are known first).
    Policy reports group the rows by namespace, so they are written once all are read
    (bounded like every export by GPUPOSTURE_EXPORT_MAX_ROWS); `link` and `namespaces` are
    theirs (posture.policy_reports.report_documents)."""
    if kind in REPORT_FORMATS:
        documents = report_documents(kind, rows, checks, link=link, namespaces=namespaces)
        return report_json(documents)
    if kind == "csv":
        return csv_lines(CSV_COLUMNS, (_cells(row) for row in rows))
    if kind == "sarif":
        document, index = _sarif_document(sorted(set(used)), checks)
        return json_stream(document, (_result(row, index) for row in rows))
    return json_stream(STREAM, rows)


def export_refusal(count: int, limit: int) -> str | None:
    """Why an export of `count` findings is refused (more than `limit`), or None. A bound, not
    a background task: a streamed export costs a few seconds per 50,000 rows and no memory,
    so the answer comes at once; the bound keeps one request from holding a worker for long."""
    if count <= limit:
        return None
    return (
        f"{count:,} findings match and an export holds at most {limit:,} "
        "(GPUPOSTURE_EXPORT_MAX_ROWS): narrow it with the filters (tenant, cluster, status, "
        "severity, check) and export each part."
    )


def findings_csv(rows: Iterable[Mapping[str, Any]]) -> str:
    return "".join(export_text("csv", rows, (), {}))


def _cells(row: Mapping[str, Any]) -> list[Any]:
    return [
        field.csv_cell(row.get(field.name)) if field.csv_cell else row.get(field.name)
        for field in CSV_FIELDS
    ]


def findings_sarif(rows: Iterable[Mapping[str, Any]], checks: Mapping[str, Any]) -> dict[str, Any]:
    """One SARIF run: a rule per check that fired, a result per finding. Kubernetes objects
    are not files, so results carry logical locations (cluster / namespace / kind / name)."""
    rows = list(rows)
    document, index = _sarif_document(sorted({row["check"] for row in rows}), checks)
    document["runs"][0]["results"] = [_result(row, index) for row in rows]
    return document


def _sarif_document(
    used: list[str], checks: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, int]]:
    """The SARIF document around its results (STREAM where they go), and each rule's index."""
    rules = [_rule(checks[check_id]) for check_id in used if check_id in checks]
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "gpuposture",
                        "informationUri": TOOL_URI,
                        "rules": rules,
                    }
                },
                "results": STREAM,
            }
        ],
    }, index


def _rule(check: Any) -> dict[str, Any]:
    return {
        "id": check.id,
        "name": check.id.replace("-", ""),
        "shortDescription": {"text": check.title},
        "fullDescription": {"text": check.rationale},
        "help": {"text": check.remediation},
        "defaultConfiguration": {"level": SARIF_LEVEL[check.severity]},
        "properties": {
            "tags": ["security", *check.mappings],
            "security-severity": SECURITY_SEVERITY[check.severity],
            "scope": check.scope,
        },
    }


def _result(row: Mapping[str, Any], index: Mapping[str, int]) -> dict[str, Any]:
    path = "/".join(
        part
        for part in (
            row.get("cluster"),
            row.get("subject_namespace"),
            row.get("subject_kind"),
            row.get("subject_name"),
        )
        if part
    )
    result: dict[str, Any] = {
        "ruleId": row["check"],
        "level": SARIF_LEVEL[row["severity"]],
        "message": {"text": _message(row)},
        "locations": [
            {
                "logicalLocations": [
                    {
                        "name": row.get("subject_name") or "",
                        "kind": "resource",
                        "fullyQualifiedName": path,
                    }
                ]
            }
        ],
        "partialFingerprints": {"gpuposture/finding/v1": str(row.get("fingerprint") or row["id"])},
        "properties": {field.sarif: _property(row, field) for field in SARIF_FIELDS},
    }
    if row["check"] in index:
        result["ruleIndex"] = index[row["check"]]
    if row.get("status") == "resolved":
        # A fixed finding is no alert: code-scanning tools raise every "fail" result as one
        # (SARIF 2.1.0 §3.27.9 kind, §3.27.10 level "none" when not a fail, §3.27.24).
        result.update(kind="pass", level="none", baselineState="absent")
    if row.get("status") == "accepted":
        result["suppressions"] = [
            {
                "kind": "external",
                "status": "accepted",
                "justification": row.get("accepted_reason") or "",
            }
        ]
    return result


def _message(row: Mapping[str, Any]) -> str:
    """The result's text: the finding's title, and for a finding of the unclassified party
    the claim of its namespace, as the API's and the JSON export's remediation say it first
    (posture.claims). The rule's help stays the check's own remediation: it is every
    result's, and the claim is this finding's."""
    namespace = claim_namespace(
        row.get("tenants") or (),
        row.get("subject_kind") or "",
        row.get("subject_namespace") or "",
        row.get("subject_name") or "",
        row.get("evidence"),
    )
    return f"{row['title']}\n\n{claim_note(namespace)}" if namespace else row["title"]


def _property(row: Mapping[str, Any], field: FindingField) -> Any:
    """A SARIF result's property: dates as text, the tenants a list even when absent."""
    value = row.get(field.name)
    if field.when:
        return str(value)
    return (value or []) if field.source is None else value


# Where json_stream writes the items: a list holding one string no data can hold (JSON writes
# a NUL as an escape, so the marker's text cannot come from a value).
_SLOT = "\x00items\x00"
STREAM: list[str] = [_SLOT]


def json_stream(document: Any, items: Iterable[Any]) -> Iterator[str]:
    """`json.dumps(document, indent=2, default=str)` with the list STREAM in `document` (once)
    holding `items`, as pieces of text: the items are encoded one at a time."""
    text = json.dumps(document, indent=2, default=str)
    at = text.index(json.dumps(_SLOT))
    line = text.rfind("\n", 0, at) + 1
    pad, before, after = text[line:at], text[:line], text[at + len(json.dumps(_SLOT)) :]
    first = True
    for item in items:
        yield (before if first else ",\n") + pad + indented(item, pad)
        first = False
    # No item: json.dumps writes an empty list as "[]".
    yield before.rstrip("\n") + after.lstrip("\n ") if first else after


def indented(value: Any, pad: str = "") -> str:
    """`json.dumps(value, indent=2, default=str)` with every line after the first starting with
    `pad`, built directly: four times faster than the json module, whose encoder is pure
    Python once `indent` is given (strings go through its C escaping, as there)."""
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, dict | list | tuple):
        if not value:
            return "{}" if isinstance(value, dict) else "[]"
        inner = pad + "  "
        # Text is most of what is written: escaped here rather than in a call per value.
        if isinstance(value, dict):
            parts = [
                f"{_string(k) if type(k) is str else _key(k)}: "
                + (_string(v) if type(v) is str else indented(v, inner))
                for k, v in value.items()
            ]
            opening, closing = "{", "}"
        else:
            parts = [_string(v) if type(v) is str else indented(v, inner) for v in value]
            opening, closing = "[", "]"
        return f"{opening}\n{inner}" + f",\n{inner}".join(parts) + f"\n{pad}{closing}"
    return _scalar(value) or _string(str(value))  # default=str


def _scalar(value: Any) -> str | None:
    """JSON's text for None, a bool, an int or a float (as the json module writes them)."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value in (math.inf, -math.inf):
            return "Infinity" if value > 0 else "-Infinity"
        return float.__repr__(value)
    return None


def _key(key: Any) -> str:
    """A mapping key as the json module writes it: text, or a scalar turned into text."""
    if isinstance(key, str):
        return _string(key)
    text = _scalar(key)
    if text is None:
        raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
    return _string(text)


def batched(pieces: Iterable[str], size: int = 64 * 1024) -> Iterator[bytes]:
    """The pieces joined into UTF-8 blocks of about `size` bytes: a server writes each block
    it is given with one system call, so a row per block would be a call per row."""
    held: list[str] = []
    length = 0
    for piece in pieces:
        held.append(piece)
        length += len(piece)
        if length >= size:
            yield "".join(held).encode()
            held, length = [], 0
    if held:
        yield "".join(held).encode()
