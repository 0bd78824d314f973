"""CSV that is safe to open in a spreadsheet (CWE-1236). PURE."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

# A cell starting with one of these is a formula to Excel, LibreOffice and Sheets.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def spreadsheet_safe(value: Any) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def safe_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    return "".join(csv_lines(header, rows))


def csv_lines(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """safe_csv's text a line at a time (the header, then a line per row)."""
    out = io.StringIO()
    writer = csv.writer(out)

    def line(cells: Sequence[Any]) -> str:
        writer.writerow(cells)
        text = out.getvalue()
        out.seek(0)
        out.truncate()
        return text

    yield line(header)
    for row in rows:
        yield line([spreadsheet_safe(v) for v in row])
