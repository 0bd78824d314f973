"""A filled assessment as CSV and JSON, and answers read back from that CSV (issue 8). PURE.

Export: one CSV row per question in questionnaire order, answered or not, every cell made safe
for spreadsheets (CWE-1236: a cell starting with = + - @ or a control character is written with
a leading "'"). JSON carries the same answers plus the questionnaire, the caller's metadata and
the score.

Import, for providers who answer offline in a spreadsheet: the same CSV (UTF-8, a BOM accepted,
comma or semicolon separated, columns in any order, at least question_id and answer). Each row
is checked on its own and every problem is reported with its row number; valid rows are kept
even when others fail, and the caller decides whether to save a partial import. An empty cell
never clears a saved value. One leading "'" before a formula character is taken as the
export's quoting and dropped, as a spreadsheet does; so a text that itself starts with "'="
comes back without its quote. The reviewer's columns (score, red_flag, review_comment) are not
read back: a provider cannot set them.

Row numbers are spreadsheet rows: the header is row 1, the first answer row 2. They equal line
numbers unless a quoted cell spans several lines.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from gpuposture.base.spreadsheet import FORMULA_STARTS, safe_csv
from providers.questionnaire_spec import YES_NO_VALUES, QuestionnaireSpec, QuestionSpec
from providers.scoring import AnswerError, QuestionScore, ScoreResult, Value, coerce_answer

CSV_COLUMNS = (
    "question_id",
    "category",
    "question",
    "type",
    "allowed_answers",
    "answer",
    "unit",
    "note",
    "evidence_url",
    "evidence_required",
    "red_flag",
    "score",
    "review_comment",
)
REQUIRED_COLUMNS = ("question_id", "answer")
MAX_BYTES = 2_000_000
MAX_ROWS = 2_000
MAX_NOTE = 4_000  # the same limits as providers.assessments.answers_save
MAX_EVIDENCE_URL = 500
MAX_ID_SHOWN = 60  # a hostile question id cell is cut to this in errors
JSON_RESERVED = ("questionnaire", "score", "answers")


@dataclass(frozen=True)
class AnswerRow:
    """One question's stored answer, as the caller (the DB layer) gives it."""

    question_id: str
    value: str | float | None = None
    note: str = ""
    evidence_url: str = ""
    review_comment: str = ""
    evidence_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class RowError:
    row: int  # spreadsheet row, header is row 1
    question_id: str
    message: str


@dataclass
class ImportResult:
    # question_id -> {"value", "note", "evidence_url"}, each key only when its cell was filled
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[RowError] = field(default_factory=list)
    rows_read: int = 0  # answer rows read, blank rows not counted


# --- export -----------------------------------------------------------------------------------


def allowed_answers(question: QuestionSpec) -> str:
    """What a responder may write in the answer cell, e.g. "yes|partial|no|na"."""
    if question.type == "yes_no":
        return "|".join(YES_NO_VALUES)
    if question.type == "choice":
        return "|".join(c.value for c in question.choices)
    if question.type == "number":
        return f"number ({question.unit})" if question.unit else "number"
    return "free text"


def answer_text(value: object) -> str:
    """A stored value as a cell: whole numbers without ".0", None as an empty cell."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def assessment_csv(
    spec: QuestionnaireSpec, answers: Mapping[str, AnswerRow], result: ScoreResult | None = None
) -> str:
    """Every question in questionnaire order with its answer; score columns empty without a
    result. Every cell goes through spreadsheet_safe."""
    scores = _scores(result)
    rows = []
    for question in spec.questions:
        row = answers.get(question.id) or AnswerRow(question.id)
        score = scores.get(question.id)
        rows.append(
            (
                question.id,
                question.category,
                question.text,
                question.type,
                allowed_answers(question),
                answer_text(row.value),
                question.unit,
                row.note,
                row.evidence_url,
                "yes" if question.evidence == "required" else "",
                "yes" if score and score.red_flag else "",
                _percent(score, digits=None),
                row.review_comment,
            )
        )
    return safe_csv(CSV_COLUMNS, rows)


def assessment_json(
    spec: QuestionnaireSpec,
    answers: Mapping[str, AnswerRow],
    result: ScoreResult,
    meta: Mapping[str, Any],
) -> dict[str, Any]:
    """The assessment as JSON-ready data; `meta` (provider, status, responder, dates) is merged
    in at the top level, dates as ISO strings. ValueError if meta uses a reserved key."""
    clash = sorted(set(meta) & set(JSON_RESERVED))
    if clash:
        raise ValueError(f"meta may not set {', '.join(clash)}")
    scores = _scores(result)
    return {
        "questionnaire": {"id": spec.id, "version": spec.version, "title": spec.title},
        **{str(key): _jsonable(value) for key, value in meta.items()},
        "score": _score_json(result),
        "answers": [
            _answer_json(question, answers.get(question.id), scores.get(question.id))
            for question in spec.questions
        ],
    }


def _score_json(result: ScoreResult) -> dict[str, Any]:
    return {
        "overall": _round(result.overall),
        "categories": [
            {
                "id": c.id,
                "title": c.title,
                "score": _round(c.score),
                "red_flags": c.red_flags,
                "questions": c.questions,
                "answered": c.answered,
            }
            for c in result.categories
        ],
        "red_flags": [
            {
                "question_id": f.question_id,
                "category": f.category,
                "question": f.text,
                "answer": f.answer,
                "reason": f.reason,
            }
            for f in result.red_flags
        ],
        "unanswered": list(result.unanswered),
        "evidence_missing": list(result.evidence_missing),
    }


def _answer_json(
    question: QuestionSpec, row: AnswerRow | None, score: QuestionScore | None
) -> dict[str, Any]:
    row = row or AnswerRow(question.id)
    value: Any = row.value
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return {
        "question_id": question.id,
        "category": question.category,
        "question": question.text,
        "type": question.type,
        "answer": value,
        "unit": question.unit,
        "note": row.note,
        "evidence_url": row.evidence_url,
        "evidence_files": list(row.evidence_files),
        "red_flag": bool(score and score.red_flag),
        "score": _percent(score, digits=1),
        "review_comment": row.review_comment,
    }


def _scores(result: ScoreResult | None) -> dict[str, QuestionScore]:
    return {} if result is None else {s.question_id: s for s in result.questions}


def _percent(score: QuestionScore | None, *, digits: int | None) -> Any:
    if score is None or score.score is None:
        return "" if digits is None else None
    return round(score.score * 100, digits)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _jsonable(value: Any) -> Any:
    if isinstance(value, date | datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    return value


# --- import -----------------------------------------------------------------------------------


def unquote_cell(text: str) -> str:
    """Undo spreadsheet_safe: one leading "'" goes when the rest would be a formula."""
    if text.startswith("'") and text[1:].startswith(FORMULA_STARTS):
        return text[1:]
    return text


def parse_answers_csv(
    text: str | bytes, spec: QuestionnaireSpec, max_bytes: int = MAX_BYTES
) -> ImportResult:
    """Answers by question id from an answer CSV, and every problem with its row number."""
    result = ImportResult()
    decoded = _decode(text, max_bytes)
    if isinstance(decoded, RowError):
        result.errors.append(decoded)
        return result
    rows = _records(decoded)
    header = _header(next(rows, None))
    if isinstance(header, RowError):
        result.errors.append(header)
        return result
    first_row: dict[str, int] = {}
    for number, cells in rows:
        if isinstance(cells, list) and not any(cell.strip() for cell in cells):
            continue  # blank rows, or Excel's trailing ",,,,"
        if result.rows_read == MAX_ROWS:
            message = f"more than {MAX_ROWS} answer rows; this row and the rest were not read"
            result.errors.append(RowError(number, "", message))
            break
        result.rows_read += 1
        if isinstance(cells, RowError):
            result.errors.append(cells)
        else:
            _read_row(number, cells, header, spec, first_row, result)
    return result


def _decode(text: str | bytes, max_bytes: int) -> str | RowError:
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        return RowError(1, "", f"the file is larger than {max_bytes} bytes")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            message = f"the file is not UTF-8 text (byte {exc.start}); save it as CSV UTF-8"
            return RowError(1, "", message)
    text = text.removeprefix("\ufeff")  # Excel's "CSV UTF-8" starts with a BOM
    if not text.strip():
        return RowError(1, "", "the file is empty")
    return text


def _records(text: str) -> Iterator[tuple[int, list[str] | RowError]]:
    """(spreadsheet row number, cells or the row's error); broken quoting ends only its row."""
    first_line = text.split("\n", 1)[0]
    delimiter = ";" if ";" in first_line and "," not in first_line else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    number = 0
    while True:
        number += 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield number, RowError(number, "", f"not valid CSV: {exc}")
            continue
        yield number, cells


@dataclass(frozen=True)
class _Header:
    columns: Mapping[str, int]  # name -> index; unknown names are kept here, never read
    width: int


def _header(record: tuple[int, list[str] | RowError] | None) -> _Header | RowError:
    needed = " and ".join(REQUIRED_COLUMNS)
    message = f"the first row must be a header naming at least the columns {needed}"
    if record is None or isinstance(record[1], RowError):
        return RowError(1, "", message)
    names = [cell.strip().lower() for cell in record[1]]
    missing = [name for name in REQUIRED_COLUMNS if name not in names]
    if missing:
        return RowError(1, "", f"{message}; missing: {', '.join(missing)}")
    repeated = sorted({name for name in names if name and names.count(name) > 1})
    if repeated:
        return RowError(1, "", f"column(s) {', '.join(repeated)} appear more than once")
    return _Header({name: index for index, name in enumerate(names) if name}, len(names))


def _read_row(
    number: int,
    cells: list[str],
    header: _Header,
    spec: QuestionnaireSpec,
    first_row: dict[str, int],
    result: ImportResult,
) -> None:
    cells = [unquote_cell(text) for text in cells]
    cell = {name: cells[index] for name, index in header.columns.items() if index < len(cells)}
    question_id = cell.get("question_id", "").strip()
    shown = question_id[:MAX_ID_SHOWN]

    def fail(message: str) -> None:
        result.errors.append(RowError(number, shown, message))

    if len(cells) != header.width:
        return fail(f"expected {header.width} fields as in the header, found {len(cells)}")
    if not question_id:
        return fail("question_id is empty")
    question = spec.question(question_id)
    if question is None:
        return fail(f"unknown question id {shown!r} (not in {spec.id} v{spec.version})")
    if question_id in first_row:
        return fail(f"{question_id} appears again (first on row {first_row[question_id]})")
    first_row[question_id] = number
    fields, problems = _row_fields(question, cell)
    for problem in problems:
        fail(problem)
    if not problems and fields:
        result.answers[question_id] = fields


def _row_fields(
    question: QuestionSpec, cell: Mapping[str, str]
) -> tuple[dict[str, Any], list[str]]:
    fields: dict[str, Any] = {}
    problems: list[str] = []
    try:
        value: Value = coerce_answer(question, cell.get("answer", ""))
    except AnswerError as exc:
        problems.append(str(exc))
    else:
        if value is not None:
            fields["value"] = value
    note = cell.get("note", "").strip()
    if len(note) > MAX_NOTE:
        problems.append(f"note is longer than {MAX_NOTE} characters")
    elif note:
        fields["note"] = note
    url = cell.get("evidence_url", "").strip()
    if len(url) > MAX_EVIDENCE_URL:
        problems.append(f"evidence_url is longer than {MAX_EVIDENCE_URL} characters")
    elif url and not _is_http_url(url):
        problems.append("evidence_url must be an http(s) URL")
    elif url:
        fields["evidence_url"] = url
    return fields, problems


def _is_http_url(url: str) -> bool:
    # The same prefix test as answers_save, plus a host and no spaces or control characters.
    for scheme in ("https://", "http://"):
        if url.startswith(scheme):
            rest = url[len(scheme) :]
            host = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
            return bool(host) and not any(ch.isspace() or ord(ch) < 32 for ch in url)
    return False
