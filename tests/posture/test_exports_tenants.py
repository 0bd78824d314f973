"""Exports keep one row per finding, with the tenants it affects in one column (DESIGN §8)."""

from __future__ import annotations

import csv
import io

from posture.exports import findings_csv, findings_sarif
from posture.rules import CHECKS

ROW = {
    "id": 7,
    "check": "STACK-004",
    "severity": "medium",
    "status": "open",
    "tenants": ["alpha", "beta"],
    "cluster": "lab",
    "subject_kind": "Node",
    "subject_namespace": "",
    "subject_name": "gpu-1",
    "title": "GPU node gpu-1: unknown",
    "first_seen": "2026-12-01T00:00:00Z",
    "last_seen": "2026-12-02T00:00:00Z",
    "mappings": ["SP800-53:CM-8"],
    "evidence": {"node": "gpu-1"},
}


def test_csv_has_one_row_per_finding_with_its_tenants_in_one_cell():
    text = findings_csv([ROW, {**ROW, "id": 8, "tenants": []}])
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [(r["id"], r["tenants"]) for r in rows] == [("7", "alpha; beta"), ("8", "")]
    assert "tenant" not in rows[0]


def test_sarif_results_carry_the_tenants():
    (result,) = findings_sarif([ROW], CHECKS)["runs"][0]["results"]
    assert result["properties"]["tenants"] == ["alpha", "beta"]
    assert "tenant" not in result["properties"]
