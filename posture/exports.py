"""Findings as CSV (safe to open in a spreadsheet) and SARIF 2.1.0. PURE: takes the API's
finding dicts (posture.serializers.FindingSerializer output) and the check catalogue."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from gpuposture.base.spreadsheet import FORMULA_STARTS, safe_csv, spreadsheet_safe

__all__ = ["FORMULA_STARTS", "findings_csv", "findings_sarif", "spreadsheet_safe"]

CSV_COLUMNS = [
    "id", "check", "severity", "status", "tenants", "cluster", "subject_kind",
    "subject_namespace", "subject_name", "title", "first_seen", "last_seen", "mappings",
    "evidence",
]  # fmt: skip
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_LEVEL = {"critical": "error", "high": "error", "medium": "warning", "low": "note"}
# GitHub code scanning reads this 0-10 score to rank security results.
SECURITY_SEVERITY = {"critical": "9.5", "high": "8.0", "medium": "5.5", "low": "3.0"}
TOOL_URI = "https://github.com/gpuposture/gpuposture"


def findings_csv(rows: Iterable[Mapping[str, Any]]) -> str:
    def cells(row: Mapping[str, Any]) -> list[Any]:
        values = {
            **row,
            # One row per finding: the tenants it affects in one cell.
            "tenants": "; ".join(row.get("tenants") or []),
            "mappings": " ".join(row.get("mappings") or []),
            "evidence": json.dumps(row.get("evidence"), sort_keys=True),
        }
        return [values.get(column) for column in CSV_COLUMNS]

    return safe_csv(CSV_COLUMNS, (cells(row) for row in rows))


def findings_sarif(rows: Iterable[Mapping[str, Any]], checks: Mapping[str, Any]) -> dict[str, Any]:
    """One SARIF run: a rule per check that fired, a result per finding. Kubernetes objects
    are not files, so results carry logical locations (cluster / namespace / kind / name)."""
    rows = list(rows)
    used = sorted({row["check"] for row in rows})
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
                "results": [_result(row, index) for row in rows],
            }
        ],
    }


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
        for part in (row.get("cluster"), row.get("subject_namespace"), row.get("subject_kind"),
                     row.get("subject_name"))
        if part
    )  # fmt: skip
    result: dict[str, Any] = {
        "ruleId": row["check"],
        "level": SARIF_LEVEL[row["severity"]],
        "message": {"text": row["title"]},
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
        ],  # fmt: skip
        "partialFingerprints": {"gpuposture/finding/v1": str(row.get("fingerprint") or row["id"])},
        "properties": {
            "findingId": row["id"],
            "status": row["status"],
            "tenants": row.get("tenants") or [],
            "cluster": row.get("cluster"),
            "evidence": row.get("evidence"),
            "firstSeen": str(row.get("first_seen")),
            "lastSeen": str(row.get("last_seen")),
        },
    }
    if row["check"] in index:
        result["ruleIndex"] = index[row["check"]]
    if row.get("status") == "accepted":
        result["suppressions"] = [
            {"kind": "external", "status": "accepted",
             "justification": row.get("accepted_reason") or ""}
        ]  # fmt: skip
    return result
