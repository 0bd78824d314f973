"""providers.scoring: question, category and overall scores, red flags first, compare."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from providers.questionnaire_spec import CategorySpec, ChoiceSpec, QuestionnaireSpec, QuestionSpec
from providers.scoring import (
    AnswerError,
    AnswerValue,
    CategoryScore,
    ScoreResult,
    coerce_answer,
    compare,
    score_assessment,
    score_question,
)

CHOICE = QuestionSpec(
    id="A1",
    category="a",
    text="How shared?",
    type="choice",
    choices=(
        ChoiceSpec("good", "Whole GPUs", 1.0),
        ChoiceSpec("mid", "vGPU", 0.5),
        ChoiceSpec("bad", "Time-slicing", 0.0, red_flag=True),
    ),
    weight=4,
    red_flag_reason="no isolation",
)
YES_NO = QuestionSpec(
    id="A2",
    category="a",
    text="Reset between customers?",
    type="yes_no",
    red_flag_on=("no",),
    evidence="required",
    weight=2,
    red_flag_reason="no reset",
)
LOWER_BETTER = QuestionSpec(
    id="A3",
    category="a",
    text="Patch SLA?",
    type="number",
    unit="days",
    best=7,
    worst=30,
    red_flag_above=30,
)
HIGHER_BETTER = QuestionSpec(
    id="B1",
    category="b",
    text="Log retention?",
    type="number",
    unit="days",
    best=365,
    worst=30,
    red_flag_below=30,
    evidence="required",
)
PLAIN = QuestionSpec(id="B2", category="b", text="Telemetry?", type="yes_no", weight=3)
TEXT = QuestionSpec(
    id="C1", category="c", text="Describe.", type="text", evidence="required", weight=5
)
# B1 comes first in the file, but category a comes first on display.
SPEC = QuestionnaireSpec(
    id="test",
    version=1,
    title="Test",
    description="",
    categories=(CategorySpec("a", "A", 3), CategorySpec("b", "B", 1), CategorySpec("c", "C", 2)),
    questions=(HIGHER_BETTER, CHOICE, YES_NO, LOWER_BETTER, PLAIN, TEXT),
)


QUESTION_CASES = [
    # question, answer, score, red flag
    (CHOICE, "good", 1.0, False),
    (CHOICE, "mid", 0.5, False),
    (CHOICE, "bad", 0.0, True),
    (YES_NO, "yes", 1.0, False),
    (YES_NO, "partial", 0.5, False),
    (YES_NO, "no", 0.0, True),
    (YES_NO, "na", None, False),
    (YES_NO, " N/A ", None, False),
    (YES_NO, "YES", 1.0, False),
    (YES_NO, True, 1.0, False),
    (YES_NO, False, 0.0, True),
    (PLAIN, "no", 0.0, False),
    (LOWER_BETTER, 7.0, 1.0, False),
    (LOWER_BETTER, 3.0, 1.0, False),  # clamped
    (LOWER_BETTER, 18.5, 0.5, False),
    (LOWER_BETTER, "18.5", 0.5, False),
    (LOWER_BETTER, 30, 0.0, False),  # at the limit: not above it
    (LOWER_BETTER, 31.0, 0.0, True),
    (LOWER_BETTER, 365.0, 0.0, True),  # clamped
    (HIGHER_BETTER, 365.0, 1.0, False),
    (HIGHER_BETTER, 1000.0, 1.0, False),  # clamped
    (HIGHER_BETTER, 197.5, 0.5, False),
    (HIGHER_BETTER, 30.0, 0.0, False),
    (HIGHER_BETTER, 29.0, 0.0, True),
    (HIGHER_BETTER, 0.0, 0.0, True),
    (TEXT, "We reset every GPU.", None, False),
]


@pytest.mark.parametrize(("question", "answer", "score", "red_flag"), QUESTION_CASES)
def test_score_question(question, answer, score, red_flag):
    result = score_question(question, answer)
    assert result.answered
    assert result.score == (None if score is None else pytest.approx(score))
    assert result.red_flag is red_flag
    assert bool(result.reason) is red_flag


@pytest.mark.parametrize("question", [CHOICE, YES_NO, LOWER_BETTER, TEXT])
@pytest.mark.parametrize("answer", [None, "", "   "])
def test_empty_answers_are_unanswered(question, answer):
    result = score_question(question, answer)
    assert (result.answered, result.score, result.red_flag) == (False, None, False)


@pytest.mark.parametrize(
    ("question", "answer", "message"),
    [
        (CHOICE, "other", "'other' is not one of good, mid, bad"),
        (CHOICE, 1.0, "expected text"),
        (YES_NO, "maybe", "answer one of yes, partial, no, na"),
        (LOWER_BETTER, "soon", "'soon' is not a number"),
        (LOWER_BETTER, "nan", "not a finite number"),
        (LOWER_BETTER, float("inf"), "not a finite number"),
        (LOWER_BETTER, True, "expected a number"),
        (TEXT, 5, "expected text"),
        (TEXT, "x" * 20_001, "at most 20000 characters"),
    ],
)
def test_answers_that_do_not_fit_are_refused(question, answer, message):
    with pytest.raises(AnswerError, match=message):
        coerce_answer(question, answer)


@pytest.mark.parametrize(
    ("unit", "answer", "message"),
    [
        ("days", -5, "-5 days is refused: answer 0 or more (a number of days cannot be negative)"),
        ("days", "-500", "a number of days cannot be negative"),
        ("Hours", -0.5, "a number of Hours cannot be negative"),
        ("hosts", -1, "a number of hosts cannot be negative"),
        ("%", -1, "-1 % is refused: answer from 0 to 100"),
        ("percent", 100.5, "100.5 percent is refused: answer from 0 to 100"),
    ],
)
def test_a_duration_count_or_percentage_out_of_range_is_refused(unit, answer, message):
    with pytest.raises(AnswerError, match=re.escape(message)) as refused:
        coerce_answer(replace(LOWER_BETTER, unit=unit), answer)
    assert str(refused.value).startswith("A3: ")


@pytest.mark.parametrize(
    ("unit", "answer"), [("days", 0), ("days", "0"), ("%", 100), ("%", 0), ("", -5), ("°C", -40)]
)
def test_numbers_in_range_and_numbers_of_other_units_are_kept(unit, answer):
    assert coerce_answer(replace(LOWER_BETTER, unit=unit), answer) == float(answer)


def test_a_stored_negative_patch_window_does_not_score_as_the_best():
    # -500 days had clamped to a score of 1 (like 7 days): it is now an invalid answer,
    # counted as unanswered.
    result = score_assessment(SPEC, answers(A3=-500.0))
    assert result.invalid == ("A3",)
    assert "A3" in result.unanswered
    assert result.category("a").scored == 0


@pytest.mark.parametrize(
    ("question", "answer", "reason"),
    [
        (CHOICE, "bad", "answer: Time-slicing"),
        (YES_NO, "no", "answer: no"),
        (LOWER_BETTER, 45.0, "45 days is above the limit of 30 days"),
        (HIGHER_BETTER, 7.0, "7 days is below the limit of 30 days"),
    ],
)
def test_default_red_flag_reason_without_one_in_the_spec(question, answer, reason):
    assert score_question(replace(question, red_flag_reason=""), answer).reason == reason


def answers(**values) -> dict[str, AnswerValue]:
    return {key: AnswerValue(key, value) for key, value in values.items()}


def test_category_and_overall_weighting():
    result = score_assessment(
        SPEC, answers(A1="mid", A2="yes", A3=18.5, B1=29.0, B2="partial", C1="text")
    )
    a, b, c = result.categories
    # a: (0.5 * 4 + 1 * 2 + 0.5 * 1) / 7; b: (0 * 1 + 0.5 * 3) / 4; c: text only, never scored.
    assert a.score == pytest.approx(450 / 7)
    assert b.score == pytest.approx(37.5)
    assert c.score is None and c.answered == 1 and c.scored == 0
    assert result.overall == pytest.approx((450 / 7 * 3 + 37.5 * 1) / 4)
    assert (a.questions, a.answered, a.scored, a.red_flags) == (3, 3, 3, 0)
    assert [f.question_id for f in result.red_flags] == ["B1"]


@pytest.mark.parametrize(
    ("given", "overall"),
    [
        ({"A1": "good", "B2": "no"}, 75.0),  # a 100 (weight 3), b 0 (weight 1)
        ({"A1": "bad", "B2": "yes"}, 25.0),
        ({"A1": "good"}, 100.0),  # b not scored: left out, not counted as 0
        ({"C1": "only text"}, None),
        ({}, None),
        ({"A2": "na"}, None),  # na is answered but not scored
    ],
)
def test_overall_is_the_category_weighted_mean_of_scored_categories(given, overall):
    result = score_assessment(SPEC, answers(**given))
    assert result.overall == (None if overall is None else pytest.approx(overall))


def test_na_is_left_out_of_the_category_score():
    result = score_assessment(SPEC, answers(A1="good", A2="na", A3=30.0))
    # (1 * 4 + 0 * 1) / 5: A2 (weight 2) takes no part.
    assert result.category("a").score == pytest.approx(80.0)
    assert "A2" not in result.unanswered


def test_red_flags_come_first_in_category_then_question_order():
    given = [AnswerValue("B1", 10.0), AnswerValue("A3", 90.0), AnswerValue("A1", "bad")]
    result = score_assessment(SPEC, given + [AnswerValue("A2", "no")])
    assert [f.question_id for f in result.red_flags] == ["A1", "A2", "A3", "B1"]
    first = result.red_flags[0]
    assert (first.category, first.text, first.answer, first.reason) == (
        "a",
        "How shared?",
        "Time-slicing",
        "no isolation",
    )
    assert result.red_flags[2].answer == "90 days"
    assert [f.name for f in ScoreResult.__dataclass_fields__.values()][0] == "red_flags"


def test_counts_unanswered_invalid_and_evidence_missing():
    result = score_assessment(
        SPEC,
        answers(A1="nonsense", A2="yes", B1=100.0, C1="see attachment", ZZ="ignored"),
        with_evidence={"B1"},
    )
    assert result.invalid == ("A1",)
    assert result.unanswered == ("A1", "A3", "B2")  # an invalid answer counts as unanswered
    assert (result.answered_count, result.unanswered_count) == (3, 3)
    assert result.evidence_missing == ("A2", "C1")
    assert result.evidence_missing_count == 2
    assert (result.questionnaire_id, result.version) == ("test", 1)


def test_na_needs_no_evidence_and_unanswered_required_evidence_is_missing():
    result = score_assessment(SPEC, answers(A2="na"))
    assert result.evidence_missing == ("B1", "C1")


def _result(**categories: tuple[float | None, int]) -> ScoreResult:
    rows = tuple(
        CategoryScore(key, key.upper(), 1, score, 1, 1, 1, flags)
        for key, (score, flags) in categories.items()
    )
    return ScoreResult((), None, rows, (), (), (), ())


@pytest.mark.parametrize(
    ("results", "spread", "differs"),
    [
        ({"p": _result(a=(80, 0)), "q": _result(a=(60, 0))}, 20, True),
        ({"p": _result(a=(80, 0)), "q": _result(a=(60.5, 0))}, 19.5, False),
        ({"p": _result(a=(80, 1)), "q": _result(a=(80, 0))}, 0, True),
        ({"p": _result(a=(80, 1)), "q": _result(a=(70, 2))}, 10, False),
        ({"p": _result(a=(None, 0)), "q": _result(a=(50, 0))}, None, False),
        ({"p": _result(a=(50, 1))}, None, False),
        ({"p": _result(a=(90, 0)), "q": _result(a=(80, 0)), "r": _result(a=(71, 0))}, 19, False),
        ({"p": _result(a=(90, 0)), "q": _result(a=(80, 0)), "r": _result(a=(70, 0))}, 20, True),
        # q's questionnaire has no category a: no score there, no part in the red-flag test.
        ({"p": _result(a=(90, 1)), "q": _result(b=(10, 0))}, None, False),
    ],
)
def test_compare_differs(results, spread, differs):
    row = compare(results).categories[0]
    assert row.id == "a"
    assert row.spread == (None if spread is None else pytest.approx(spread))
    assert row.differs is differs


def test_compare_end_to_end():
    good = score_assessment(SPEC, answers(A1="good", A2="yes", B1=365.0, B2="yes"))
    poor = score_assessment(SPEC, answers(A1="bad", A2="yes", B1=300.0, B2="yes"))
    comparison = compare({"good": good, "poor": poor})
    assert comparison.providers == ("good", "poor")
    assert comparison.red_flags == {"good": 0, "poor": 1}
    assert comparison.overall["good"] == pytest.approx(100.0)
    a, b, c = comparison.categories
    assert (a.id, a.title, a.differs) == ("a", "A", True)
    assert a.scores == {"good": pytest.approx(100.0), "poor": pytest.approx(100 / 3)}
    assert a.red_flags == {"good": 0, "poor": 1}
    assert b.differs is False  # 100 against ~95.1
    assert c.scores == {"good": None, "poor": None} and c.differs is False
