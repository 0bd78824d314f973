"""providers.exchange: an assessment as CSV and JSON, and answers imported back from the CSV."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, date, datetime

import pytest

from gpuposture.base.spreadsheet import FORMULA_STARTS
from providers.exchange import (
    CSV_COLUMNS,
    MAX_ROWS,
    AnswerRow,
    RowError,
    allowed_answers,
    answer_text,
    assessment_csv,
    assessment_json,
    parse_answers_csv,
    unquote_cell,
)
from providers.questionnaire_spec import LIBRARY_DIR, read_questionnaire_file
from providers.scoring import AnswerValue, score_assessment

SPEC = read_questionnaire_file(LIBRARY_DIR / "gpu-provider-v1.yaml")
QUESTIONS = {q.id: q for q in SPEC.questions}
HOSTILE = "<script>alert(1)</script>"

# Realistic answers covering every question type; GPU-SUB-04 and GPU-HOST-04 stay unanswered.
ANSWERS = {
    row.question_id: row
    for row in [
        AnswerRow("GPU-PART-01", "mig_gi", "MIG 1g.10gb per customer", "https://docs.example/mig"),
        AnswerRow("GPU-PART-02", "yes", evidence_files=("scheduler.pdf",)),
        AnswerRow("GPU-PART-03", "partial", 'Spot tier only, see\nthe second paragraph, "B"'),
        AnswerRow("GPU-PART-04", "na"),
        AnswerRow("GPU-WIPE-01", "reset_only", review_comment="ask for logs"),
        AnswerRow("GPU-WIPE-02", "no", '=HYPERLINK("http://evil","x")'),
        AnswerRow("GPU-WIPE-03", "yes", "@SUM(A1)"),
        AnswerRow("GPU-WIPE-04", "yes", "+cmd|' /C calc'!A0"),
        AnswerRow("GPU-WIPE-05", "We run nvidia-smi -r and a 0xAA pattern scrub, then verify."),
        AnswerRow("GPU-LEAK-01", "=1+1 is what our tool printed; also " + HOSTILE),
        AnswerRow("GPU-LEAK-02", "mitigated", HOSTILE, "http://intranet.example/leak?id=1&x=2"),
        AnswerRow("GPU-PATCH-01", 14.0),
        AnswerRow("GPU-PATCH-02", 7.5, "-2 days when critical"),
        AnswerRow("GPU-PATCH-03", 30.0),
        AnswerRow("GPU-PATCH-04", "yes"),
        AnswerRow("GPU-PATCH-05", "no"),
        AnswerRow("GPU-BULL-01", "yes"),
        AnswerRow("GPU-BULL-02", 0.0),
        AnswerRow("GPU-LOG-01", "audit_only"),
        AnswerRow("GPU-LOG-02", 400.0),
        AnswerRow("GPU-LOG-03", "partial"),
        AnswerRow("GPU-CC-01", "cpu_only"),
        AnswerRow("GPU-CC-02", "na"),
        AnswerRow("GPU-CC-03", "no"),
        AnswerRow("GPU-IAM-01", "federation_only", "Büro Zürich: OIDC ✓"),
        AnswerRow("GPU-IAM-02", "yes"),
        AnswerRow("GPU-IAM-03", "yes"),
        AnswerRow("GPU-IAM-04", "no"),
        AnswerRow("GPU-NET-01", "yes"),
        AnswerRow("GPU-NET-02", "partitioned"),
        AnswerRow("GPU-NET-03", "yes"),
        AnswerRow("GPU-IR-01", 72.0),
        AnswerRow("GPU-IR-02", "yes"),
        AnswerRow("GPU-IR-03", "no"),
        AnswerRow("GPU-DATA-01", "yes"),
        AnswerRow("GPU-DATA-02", 90.0),
        AnswerRow("GPU-DATA-03", "yes"),
        AnswerRow("GPU-DATA-04", "no"),
        AnswerRow("GPU-SUB-01", "yes"),
        AnswerRow("GPU-SUB-02", "yes"),
        AnswerRow("GPU-SUB-03", "partial"),
        AnswerRow("GPU-SUB-04", None, "will send the list next week"),
        AnswerRow("GPU-HOST-01", "vm_passthrough"),
        AnswerRow("GPU-HOST-02", "yes"),
        AnswerRow("GPU-HOST-03", "yes"),
    ]
}


def score(answers: dict[str, AnswerRow] = ANSWERS):
    return score_assessment(SPEC, [AnswerValue(a.question_id, a.value) for a in answers.values()])


def make_csv(header: list[str], rows: list[list[str]], end: str = "\r\n") -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=end)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def read_csv(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def parse(text: str | bytes, **kwargs):
    return parse_answers_csv(text, SPEC, **kwargs)


# --- export -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question_id", "expected"),
    [
        ("GPU-PART-02", "yes|partial|no|na"),
        ("GPU-LOG-01", "full|audit_only|on_request|none"),
        ("GPU-PATCH-01", "number (days)"),
        ("GPU-IR-01", "number (hours)"),
        ("GPU-WIPE-05", "free text"),
    ],
)
def test_allowed_answers(question_id: str, expected: str) -> None:
    assert allowed_answers(QUESTIONS[question_id]) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ""),
        (30.0, "30"),
        (0.0, "0"),
        (7.5, "7.5"),
        (14, "14"),
        ("yes", "yes"),
        (1e15, "1000000000000000"),
    ],
)
def test_answer_text(value: object, expected: str) -> None:
    assert answer_text(value) == expected


def test_csv_has_every_question_in_order_answered_or_not() -> None:
    rows = read_csv(assessment_csv(SPEC, {}))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert [r[0] for r in rows[1:]] == [q.id for q in SPEC.questions]
    assert all(len(r) == len(CSV_COLUMNS) for r in rows)
    by_id = {r[0]: dict(zip(CSV_COLUMNS, r, strict=True)) for r in rows[1:]}
    patch = by_id["GPU-PATCH-01"]
    assert patch["answer"] == "" and patch["score"] == "" and patch["red_flag"] == ""
    assert patch["type"] == "number" and patch["unit"] == "days" and patch["category"] == "patching"
    assert patch["allowed_answers"] == "number (days)"
    assert patch["evidence_required"] == "yes" and by_id["GPU-PATCH-04"]["evidence_required"] == ""
    assert patch["question"] == QUESTIONS["GPU-PATCH-01"].text


def test_csv_values_scores_and_red_flags() -> None:
    result = score()
    by_id = {
        r[0]: dict(zip(CSV_COLUMNS, r, strict=True))
        for r in read_csv(assessment_csv(SPEC, ANSWERS, result))[1:]
    }
    assert by_id["GPU-PATCH-01"]["answer"] == "14"  # no trailing .0
    assert by_id["GPU-PATCH-02"]["answer"] == "7.5"
    assert by_id["GPU-PART-01"]["answer"] == "mig_gi"
    assert by_id["GPU-PART-01"]["score"] == "90"
    assert by_id["GPU-PART-03"]["score"] == "50"
    assert by_id["GPU-PART-04"]["score"] == ""  # na is answered but not scored
    assert by_id["GPU-WIPE-05"]["score"] == ""  # text is never scored
    assert by_id["GPU-WIPE-01"]["review_comment"] == "ask for logs"
    flagged = {f.question_id for f in result.red_flags}
    assert flagged  # the answers above do raise some
    assert {qid for qid, row in by_id.items() if row["red_flag"] == "yes"} == flagged
    assert all(row["red_flag"] in ("yes", "") for row in by_id.values())


def test_csv_cells_never_start_a_formula() -> None:
    rows = read_csv(assessment_csv(SPEC, ANSWERS, score()))
    assert all(not cell.startswith(FORMULA_STARTS) for row in rows for cell in row)
    by_id = {r[0]: dict(zip(CSV_COLUMNS, r, strict=True)) for r in rows[1:]}
    assert by_id["GPU-WIPE-02"]["note"] == """'=HYPERLINK("http://evil","x")"""
    assert by_id["GPU-WIPE-03"]["note"] == "'@SUM(A1)"
    assert by_id["GPU-WIPE-04"]["note"] == "'+cmd|' /C calc'!A0"
    assert by_id["GPU-PATCH-02"]["note"] == "'-2 days when critical"
    assert by_id["GPU-LEAK-01"]["answer"].startswith("'=1+1")


# --- round trip -------------------------------------------------------------------------------


def test_round_trip_with_the_library_questionnaire() -> None:
    text = assessment_csv(SPEC, ANSWERS, score())
    result = parse(text)
    assert result.errors == []
    assert result.rows_read == len(SPEC.questions)
    for question_id, row in ANSWERS.items():
        got = result.answers[question_id]
        assert got.get("value") == row.value, question_id
        assert got.get("note", "") == row.note, question_id
        assert got.get("evidence_url", "") == row.evidence_url, question_id
    # Unanswered, with no note or link: nothing to save.
    assert "GPU-HOST-04" not in result.answers
    # The empty answer cell is not a value, but the note is kept.
    assert result.answers["GPU-SUB-04"] == {"note": "will send the list next week"}
    # Reviewer columns are never read back.
    assert all(set(a) <= {"value", "note", "evidence_url"} for a in result.answers.values())


def test_round_trip_as_excel_bytes_with_bom() -> None:
    data = ("\ufeff" + assessment_csv(SPEC, ANSWERS)).encode("utf-8")
    result = parse(data)
    assert result.errors == []
    assert result.answers["GPU-IAM-01"]["note"] == "Büro Zürich: OIDC ✓"
    assert result.answers["GPU-LOG-02"]["value"] == 400.0


@pytest.mark.parametrize(
    "note",
    ['=HYPERLINK("http://evil","x")', "@SUM(A1)", "+cmd", "-1+2", "plain", "'quoted"],
)
def test_formula_notes_are_written_quoted_and_read_back(note: str) -> None:
    text = assessment_csv(SPEC, {"GPU-PART-02": AnswerRow("GPU-PART-02", "yes", note)})
    cell = dict(zip(CSV_COLUMNS, read_csv(text)[2], strict=True))["note"]
    assert cell == ("'" + note if note.startswith(FORMULA_STARTS) else note)
    assert parse(text).answers["GPU-PART-02"] == {"value": "yes", "note": note}


def test_a_text_starting_with_quote_and_formula_loses_its_quote_as_in_a_spreadsheet() -> None:
    text = assessment_csv(SPEC, {"GPU-PART-02": AnswerRow("GPU-PART-02", "yes", "'=x'")})
    assert parse(text).answers["GPU-PART-02"]["note"] == "=x'"


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("'=1", "=1"),
        ("'-5", "-5"),
        ("'+x", "+x"),
        ("'@a", "@a"),
        ("'\tx", "\tx"),
        ("'x", "'x"),
        ("''=1", "''=1"),
        ("'", "'"),
        ("=1", "=1"),
        ("", ""),
    ],
)
def test_unquote_cell_strips_one_quote_before_a_formula(cell: str, expected: str) -> None:
    assert unquote_cell(cell) == expected


def test_a_quoted_negative_number_is_read_as_a_number() -> None:
    # The quote written before "-" goes: the cell reads as the number -5 (so it is refused as a
    # negative number of days, not as text that is no number).
    result = parse(make_csv(["question_id", "answer"], [["GPU-PATCH-01", "'-5"]]))
    assert result.answers == {}
    assert [e.message for e in result.errors] == [
        "GPU-PATCH-01: -5 days is refused: answer 0 or more (a number of days cannot be negative)"
    ]


def test_hostile_text_is_kept_as_text() -> None:
    rows = [["GPU-LEAK-01", HOSTILE, HOSTILE, "https://x.example/<b>"]]
    result = parse(make_csv(["question_id", "answer", "note", "evidence_url"], rows))
    assert result.errors == []
    assert result.answers["GPU-LEAK-01"] == {
        "value": HOSTILE,
        "note": HOSTILE,
        "evidence_url": "https://x.example/<b>",
    }


# --- JSON -------------------------------------------------------------------------------------


def test_json_shape_and_serialisable() -> None:
    result = score()
    meta = {
        "provider": "Acme GPU <Cloud>",
        "status": "submitted",
        "responded_on": date(2025, 3, 1),
        "submitted_at": datetime(2025, 3, 2, 10, 0, tzinfo=UTC),
        "responder": {"name": "Ann", "email": "ann@example.com"},
    }
    data = assessment_json(SPEC, ANSWERS, result, meta)
    json.dumps(data)  # no dataclasses, dates or tuples left
    assert data["questionnaire"] == {"id": "gpu-provider", "version": 1, "title": SPEC.title}
    assert data["provider"] == "Acme GPU <Cloud>"
    assert data["responded_on"] == "2025-03-01"
    assert data["submitted_at"] == "2025-03-02T10:00:00+00:00"
    assert data["responder"]["email"] == "ann@example.com"
    assert list(data)[-2:] == ["score", "answers"]
    assert data["score"]["overall"] == round(result.overall, 1)
    assert [c["id"] for c in data["score"]["categories"]] == [c.id for c in SPEC.categories]
    category = data["score"]["categories"][0]
    assert set(category) >= {"id", "title", "score", "red_flags"}
    assert [f["question_id"] for f in data["score"]["red_flags"]] == [
        f.question_id for f in result.red_flags
    ]
    assert set(data["score"]["red_flags"][0]) == {
        "question_id",
        "category",
        "question",
        "answer",
        "reason",
    }


def test_json_answers_every_question() -> None:
    data = assessment_json(SPEC, ANSWERS, score(), {})
    answers = {a["question_id"]: a for a in data["answers"]}
    assert [a["question_id"] for a in data["answers"]] == [q.id for q in SPEC.questions]
    assert set(answers["GPU-PART-01"]) == {
        "question_id",
        "category",
        "question",
        "type",
        "answer",
        "unit",
        "note",
        "evidence_url",
        "evidence_files",
        "red_flag",
        "score",
        "review_comment",
    }
    assert answers["GPU-PATCH-01"]["answer"] == 14 and isinstance(
        answers["GPU-PATCH-01"]["answer"], int
    )
    assert answers["GPU-PATCH-02"]["answer"] == 7.5
    assert answers["GPU-PART-02"]["evidence_files"] == ["scheduler.pdf"]
    assert answers["GPU-PART-01"]["score"] == 90.0 and answers["GPU-PART-01"]["red_flag"] is False
    assert answers["GPU-HOST-04"]["answer"] is None and answers["GPU-HOST-04"]["score"] is None
    assert answers["GPU-WIPE-02"]["note"] == '=HYPERLINK("http://evil","x")'  # JSON is not a sheet


@pytest.mark.parametrize("key", ["score", "answers", "questionnaire"])
def test_json_meta_may_not_replace_reserved_keys(key: str) -> None:
    with pytest.raises(ValueError, match=key):
        assessment_json(SPEC, ANSWERS, score(), {key: "x"})


# --- import: per-row errors -------------------------------------------------------------------

HEADER = ["question_id", "answer", "note", "evidence_url"]


@pytest.mark.parametrize(
    ("row", "question_id", "message"),
    [
        (["GPU-NOPE-01", "yes", "", ""], "GPU-NOPE-01", "unknown question id 'GPU-NOPE-01'"),
        (["", "yes", "", ""], "", "question_id is empty"),
        (["GPU-PART-01", "shared", "", ""], "GPU-PART-01", "'shared' is not one of whole_gpu"),
        (["GPU-PART-02", "maybe", "", ""], "GPU-PART-02", "answer one of yes, partial, no, na"),
        (["GPU-PATCH-01", "two weeks", "", ""], "GPU-PATCH-01", "'two weeks' is not a number"),
        (["GPU-PATCH-01", "inf", "", ""], "GPU-PATCH-01", "is not a finite number"),
        (["GPU-PATCH-01", "-500", "", ""], "GPU-PATCH-01", "days cannot be negative"),
        (["GPU-LOG-02", "-0.5", "", ""], "GPU-LOG-02", "days cannot be negative"),
        (["GPU-PART-02", "yes", "", "ftp://x.example/a"], "GPU-PART-02", "must be an http(s) URL"),
        (["GPU-PART-02", "yes", "", "javascript:alert(1)"], "GPU-PART-02", "http(s) URL"),
        (["GPU-PART-02", "yes", "", "https://"], "GPU-PART-02", "http(s) URL"),
        (["GPU-PART-02", "yes", "", "https://a b.example"], "GPU-PART-02", "http(s) URL"),
        (["GPU-PART-02", "yes", "x" * 4001, ""], "GPU-PART-02", "note is longer than 4000"),
        (
            ["GPU-PART-02", "", "", "https://x.example/" + "a" * 500],
            "GPU-PART-02",
            "evidence_url is longer than 500",
        ),
        (["GPU-WIPE-05", "x" * 20_001, "", ""], "GPU-WIPE-05", "at most 20000 characters"),
        (["GPU-PART-02", "yes", ""], "GPU-PART-02", "expected 4 fields as in the header, found 3"),
        (
            ["GPU-PART-02", "yes", "", "", "extra"],
            "GPU-PART-02",
            "expected 4 fields as in the header, found 5",
        ),
    ],
)
def test_row_errors(row: list[str], question_id: str, message: str) -> None:
    rows = [["GPU-IR-01", "24", "", ""], row, ["GPU-IR-02", "yes", "", ""]]
    result = parse(make_csv(HEADER, rows))
    assert len(result.errors) == 1
    error = result.errors[0]
    assert (error.row, error.question_id) == (3, question_id)
    assert message in error.message
    # The valid rows around it are kept; the failing row is not saved even in part.
    assert result.answers == {"GPU-IR-01": {"value": 24.0}, "GPU-IR-02": {"value": "yes"}}
    assert result.rows_read == 3


def test_a_row_with_several_problems_reports_each() -> None:
    result = parse(make_csv(HEADER, [["GPU-PART-02", "maybe", "x" * 4001, "ftp://a"]]))
    assert [e.row for e in result.errors] == [2, 2, 2]
    assert result.answers == {}


def test_duplicate_question_id_is_an_error_on_the_second_row() -> None:
    rows = [
        ["GPU-PART-02", "yes", "", ""],
        ["GPU-IR-01", "24", "", ""],
        ["GPU-PART-02", "no", "", ""],
    ]
    result = parse(make_csv(HEADER, rows))
    assert result.errors == [
        RowError(4, "GPU-PART-02", "GPU-PART-02 appears again (first on row 2)")
    ]
    assert result.answers["GPU-PART-02"] == {"value": "yes"}


def test_broken_quoting_is_an_error_on_its_row_only() -> None:
    text = 'question_id,answer\r\nGPU-IR-01,24\r\nGPU-PART-02,"yes"x\r\nGPU-IR-02,no\r\n'
    result = parse(text)
    assert [(e.row, e.question_id) for e in result.errors] == [(3, "")]
    assert result.errors[0].message.startswith("not valid CSV")
    assert result.answers == {"GPU-IR-01": {"value": 24.0}, "GPU-IR-02": {"value": "no"}}


def test_an_unterminated_quote_at_the_end_is_a_row_error() -> None:
    result = parse('question_id,answer\nGPU-IR-01,24\nGPU-PART-02,"yes\nGPU-IR-02,no\n')
    assert [e.row for e in result.errors] == [3]
    assert result.answers == {"GPU-IR-01": {"value": 24.0}}


def test_an_empty_answer_keeps_note_and_link_and_never_clears() -> None:
    rows = [
        ["GPU-PART-02", "", "asked the provider", "https://x.example/a"],
        ["GPU-PART-03", "  ", "", ""],
    ]
    result = parse(make_csv(HEADER, rows))
    assert result.errors == []
    assert result.answers == {
        "GPU-PART-02": {"note": "asked the provider", "evidence_url": "https://x.example/a"}
    }


def test_answers_are_coerced_for_saving() -> None:
    rows = [
        ["GPU-PART-02", " YES ", "  spaced  ", ""],
        ["GPU-PART-03", "N/A", "", ""],
        ["GPU-LOG-02", "365.0", "", ""],
    ]
    result = parse(make_csv(HEADER, rows))
    assert result.answers == {
        "GPU-PART-02": {"value": "yes", "note": "spaced"},
        "GPU-PART-03": {"value": "na"},
        "GPU-LOG-02": {"value": 365.0},
    }


# --- import: the file as a whole --------------------------------------------------------------

NO_HEADER = "the first row must be a header naming at least the columns question_id and answer"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "the file is empty"),
        ("\ufeff \r\n\r\n", "the file is empty"),
        ("question_id;answer".encode("utf-16"), "the file is not UTF-8 text (byte 0)"),
        ("question_id,answer\nGPU-IAM-01,Büro\n".encode("latin-1"), "not UTF-8"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8"),
        ("GPU-PART-02,yes\nGPU-IR-01,24\n", NO_HEADER),
        ("question_id,note\nGPU-PART-02,x\n", "missing: answer"),
        ("id,answer\n", "missing: question_id"),
        ('{"answers": []}', NO_HEADER),
        ('"question_id,answer\n', NO_HEADER),
        ("\nquestion_id,answer\nGPU-IR-01,24\n", NO_HEADER),
        ("question_id,answer,Answer\n", "column(s) answer appear more than once"),
    ],
)
def test_malformed_file_is_one_error_on_row_1(data: str | bytes, message: str) -> None:
    result = parse(data)
    assert len(result.errors) == 1
    assert result.errors[0].row == 1 and result.errors[0].question_id == ""
    assert message in result.errors[0].message
    assert result.answers == {} and result.rows_read == 0


@pytest.mark.parametrize("as_bytes", [True, False])
def test_size_limit(as_bytes: bool) -> None:
    text = make_csv(["question_id", "answer"], [["GPU-IR-01", "24"]])
    size = len(text.encode())
    data: str | bytes = text.encode() if as_bytes else text
    assert parse(data, max_bytes=size).answers == {"GPU-IR-01": {"value": 24.0}}
    result = parse(data, max_bytes=size - 1)
    assert result.errors == [RowError(1, "", f"the file is larger than {size - 1} bytes")]
    assert result.answers == {}


def test_size_limit_counts_bytes_not_characters() -> None:
    text = make_csv(["question_id", "answer", "note"], [["GPU-IR-01", "24", "✓" * 100]])
    assert parse(text, max_bytes=len(text) + 10).errors[0].message.startswith("the file is larger")


def test_row_limit() -> None:
    rows = [["GPU-IR-01", "24"]] + [["GPU-IR-02", "yes"]] * MAX_ROWS
    result = parse(make_csv(["question_id", "answer"], rows))
    assert result.rows_read == MAX_ROWS
    assert result.errors[-1] == RowError(
        MAX_ROWS + 2, "", f"more than {MAX_ROWS} answer rows; this row and the rest were not read"
    )
    assert len(result.errors) == MAX_ROWS - 1  # the duplicates of GPU-IR-02, then the limit
    assert result.answers == {"GPU-IR-01": {"value": 24.0}, "GPU-IR-02": {"value": "yes"}}


@pytest.mark.parametrize("data", ["\ufeff", b"\xef\xbb\xbf"])
def test_bom_is_accepted(data: str | bytes) -> None:
    body = make_csv(["question_id", "answer"], [["GPU-IR-01", "24"]])
    text = data + (body.encode() if isinstance(data, bytes) else body)
    result = parse(text)
    assert result.errors == [] and result.answers == {"GPU-IR-01": {"value": 24.0}}


@pytest.mark.parametrize("end", ["\r\n", "\n", "\r"])
def test_line_endings(end: str) -> None:
    rows = [["GPU-IR-01", "24", "line one\r\nline two"], ["GPU-NOPE", "yes", ""]]
    result = parse(make_csv(["question_id", "answer", "note"], rows, end=end))
    assert result.answers == {"GPU-IR-01": {"value": 24.0, "note": "line one\r\nline two"}}
    # Rows are spreadsheet rows: a cell spanning lines is still one row.
    assert [(e.row, e.question_id) for e in result.errors] == [(3, "GPU-NOPE")]


def test_columns_in_any_order_unknown_ignored_names_case_insensitive() -> None:
    header = ["Evidence_URL", "Comment from sales", " NOTE ", "answer", "score", "Question_ID"]
    rows = [["https://x.example/e", "ignore me", "n", "partial", "100", "GPU-PART-03"]]
    result = parse(make_csv(header, rows))
    assert result.errors == []
    assert result.answers == {
        "GPU-PART-03": {"value": "partial", "note": "n", "evidence_url": "https://x.example/e"}
    }


def test_only_the_two_required_columns() -> None:
    result = parse("question_id,answer\nGPU-IR-01,24\n")
    assert result.answers == {"GPU-IR-01": {"value": 24.0}} and result.rows_read == 1


def test_semicolon_separated_as_excel_writes_in_some_locales() -> None:
    result = parse("question_id;answer;note\r\nGPU-IR-01;24;a, b\r\n")
    assert result.errors == []
    assert result.answers == {"GPU-IR-01": {"value": 24.0, "note": "a, b"}}


def test_blank_rows_are_skipped_but_counted_in_row_numbers() -> None:
    text = "question_id,answer\r\n\r\n,\r\nGPU-NOPE,1\r\n"
    result = parse(text)
    assert result.rows_read == 1
    assert [(e.row, e.question_id) for e in result.errors] == [(4, "GPU-NOPE")]


def test_a_long_hostile_question_id_is_cut_in_the_error() -> None:
    result = parse(make_csv(["question_id", "answer"], [["X" * 5000, "yes"]]))
    assert len(result.errors[0].question_id) == 60
    assert len(result.errors[0].message) < 200
