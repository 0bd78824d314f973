"""CSV that is safe to open in a spreadsheet (CWE-1236). PURE."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any

# A cell starting with one of these is a formula to Excel, LibreOffice and Sheets.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def spreadsheet_safe(value: Any) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def safe_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    for row in rows:
        writer.writerow([spreadsheet_safe(v) for v in row])
    return out.getvalue()
