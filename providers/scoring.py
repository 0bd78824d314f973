"""A provider's answers to a questionnaire, scored per category and overall (DESIGN §5 PROV-002).

PURE: takes a QuestionnaireSpec and AnswerValues, returns a ScoreResult; no ORM.
- A question scores 0..1: a choice its choice's score; yes_no yes 1, partial 0.5, no 0 (na is
  answered but left out of the score); a number linearly from `worst` (0) to `best` (1), clamped,
  in either direction; a text answer is never scored. A number whose unit is a duration, a
  count or a percentage is refused below 0 (a percentage also above 100): see number_range.
- Unanswered questions are left out of the score and listed in `unanswered`: a draft's score is
  the score of what was answered. A submitted assessment must answer every question; the workflow
  enforces that, not this module.
- A category scores the weighted mean (question weights) of its scored questions, 0..100, None
  when none is scored; overall is the weighted mean (category weights) of the category scores
  that are not None.
- Red flags come first in the result, in category display order, then question order.
- Evidence is missing for a question whose evidence is `required`, unless it was answered `na` or
  its id is among the ids given as having evidence (answered or not).
- `compare` sets a category's `differs` when provider scores spread by DIFFERS_SPREAD points or
  more, or when one provider has a red flag there and another has none.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace

from gpuposture.base.echo import echoed
from providers.questionnaire_spec import (
    YES_NO_VALUES,
    CategorySpec,
    QuestionnaireSpec,
    QuestionSpec,
)

YES_NO_SCORES = {"yes": 1.0, "partial": 0.5, "no": 0.0, "na": None}
MAX_TEXT_ANSWER = 20_000
DIFFERS_SPREAD = 20.0
# Units (lowercase) whose answers cannot be negative: durations and counts; percentages are 0..100.
NON_NEGATIVE_UNITS = frozenset(
    {
        *("second", "seconds", "s", "sec", "minute", "minutes", "min", "mins"),
        *("hour", "hours", "h", "hr", "hrs", "day", "days", "d", "business days"),
        *("week", "weeks", "month", "months", "year", "years"),
        *("count", "times", "hosts", "nodes", "gpus", "people", "staff", "customers"),
    }
)
PERCENT_UNITS = frozenset({"%", "percent", "per cent", "percentage"})

Value = str | float | None


class AnswerError(ValueError):
    """An answer does not fit its question (unknown choice, not a number, too long)."""


@dataclass(frozen=True)
class AnswerValue:
    question_id: str
    value: Value  # str for choice / yes_no / text, float for number, None when unanswered


@dataclass(frozen=True)
class QuestionScore:
    question_id: str
    category: str
    answered: bool
    score: float | None  # 0..1; None for text, na, unanswered or invalid answers
    red_flag: bool = False
    reason: str = ""  # why the answer is a red flag
    evidence_missing: bool = False


@dataclass(frozen=True)
class RedFlag:
    question_id: str
    category: str
    text: str  # the question
    answer: str  # the answer as shown to a reviewer
    reason: str


@dataclass(frozen=True)
class CategoryScore:
    id: str
    title: str
    weight: int
    score: float | None  # 0..100
    questions: int
    answered: int
    scored: int
    red_flags: int


@dataclass(frozen=True)
class ScoreResult:
    red_flags: tuple[RedFlag, ...]  # first: what a reviewer reads first
    overall: float | None  # 0..100
    categories: tuple[CategoryScore, ...]
    questions: tuple[QuestionScore, ...]
    unanswered: tuple[str, ...]
    evidence_missing: tuple[str, ...]
    invalid: tuple[str, ...]  # answers that do not fit their question: treated as unanswered
    questionnaire_id: str = ""
    version: int = 0

    @property
    def answered_count(self) -> int:
        return sum(1 for q in self.questions if q.answered)

    @property
    def unanswered_count(self) -> int:
        return len(self.unanswered)

    @property
    def evidence_missing_count(self) -> int:
        return len(self.evidence_missing)

    def category(self, category_id: str) -> CategoryScore | None:
        return next((c for c in self.categories if c.id == category_id), None)


@dataclass(frozen=True)
class CategoryComparison:
    id: str
    title: str
    scores: Mapping[str, float | None]  # provider -> 0..100; None when not scored
    red_flags: Mapping[str, int]  # provider -> red flags in this category
    spread: float | None  # highest minus lowest score; None with fewer than two scores
    differs: bool


@dataclass(frozen=True)
class Comparison:
    providers: tuple[str, ...]
    overall: Mapping[str, float | None]
    red_flags: Mapping[str, int]
    categories: tuple[CategoryComparison, ...]


def coerce_answer(question: QuestionSpec, raw: object) -> Value:
    """`raw` (from a form, the API or a spreadsheet) as the typed value for this question; None
    for an empty answer; AnswerError when it does not fit."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    if question.type == "number":
        return _in_range(question, _coerce_number(raw))
    if question.type == "yes_no" and isinstance(raw, bool):
        return "yes" if raw else "no"
    if not isinstance(raw, str):
        raise AnswerError(f"{question.id}: expected text, got {type(raw).__name__}")
    value = raw.strip()
    if question.type == "yes_no":
        value = "na" if value.lower() == "n/a" else value.lower()
        if value not in YES_NO_VALUES:
            raise AnswerError(f"{question.id}: answer one of {', '.join(YES_NO_VALUES)}")
    elif question.type == "choice" and question.choice(value) is None:
        choices = ", ".join(c.value for c in question.choices)
        raise AnswerError(f"{question.id}: {echoed(value)} is not one of {choices}")
    elif question.type == "text" and len(value) > MAX_TEXT_ANSWER:
        raise AnswerError(f"{question.id}: at most {MAX_TEXT_ANSWER} characters")
    return value


def _coerce_number(raw: object) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise AnswerError("expected a number")
    try:
        number = float(raw)
    except (ValueError, OverflowError):
        raise AnswerError(f"{echoed(raw)} is not a number") from None
    if not -1e15 <= number <= 1e15:  # also refuses nan and inf
        raise AnswerError(f"{echoed(raw)} is not a finite number")
    return number


def number_range(question: QuestionSpec) -> tuple[float | None, float | None]:
    """The lowest and highest answer a number question's unit allows: a duration, a count or a
    percentage is never negative, and a percentage is at most 100. Other units are unbounded."""
    unit = question.unit.strip().lower()
    if unit in PERCENT_UNITS:
        return 0.0, 100.0
    if unit in NON_NEGATIVE_UNITS:
        return 0.0, None
    return None, None


def _in_range(question: QuestionSpec, number: float) -> float:
    low, high = number_range(question)
    unit = question.unit.strip()
    if (low is not None and number < low) or (high is not None and number > high):
        if high is not None:
            allowed = f"from {low:g} to {high:g}"
        else:
            allowed = f"{low:g} or more (a number of {unit} cannot be negative)"
        raise AnswerError(f"{question.id}: {number:g} {unit} is refused: answer {allowed}")
    return number


def number_score(question: QuestionSpec, value: float) -> float:
    """1 at or beyond `best`, 0 at or beyond `worst`, linear between; either direction."""
    assert question.best is not None and question.worst is not None
    fraction = (value - question.worst) / (question.best - question.worst)
    return min(1.0, max(0.0, fraction))


def score_question(question: QuestionSpec, raw: object) -> QuestionScore:
    """One answer's score and red flag; None or an empty string is unanswered. AnswerError when
    the answer does not fit the question."""
    value = coerce_answer(question, raw)
    base = QuestionScore(question.id, question.category, answered=value is not None, score=None)
    if value is None or question.type == "text":
        return base
    reason = ""
    if question.type == "choice":
        choice = question.choice(str(value))
        assert choice is not None  # coerce_answer refused unknown choices
        score: float | None = choice.score
        if choice.red_flag:
            reason = question.red_flag_reason or f"answer: {choice.label}"
    elif question.type == "yes_no":
        score = YES_NO_SCORES[str(value)]
        if value in question.red_flag_on:
            reason = question.red_flag_reason or f"answer: {value}"
    else:
        number = float(value)
        score = number_score(question, number)
        reason = _number_red_flag(question, number)
    return QuestionScore(
        question.id, question.category, True, score, red_flag=bool(reason), reason=reason
    )


def _number_red_flag(question: QuestionSpec, value: float) -> str:
    unit = f" {question.unit}" if question.unit else ""
    above, below = question.red_flag_above, question.red_flag_below
    if above is not None and value > above:
        return question.red_flag_reason or f"{value:g}{unit} is above the limit of {above:g}{unit}"
    if below is not None and value < below:
        return question.red_flag_reason or f"{value:g}{unit} is below the limit of {below:g}{unit}"
    return ""


def score_assessment(
    spec: QuestionnaireSpec,
    answers: Mapping[str, AnswerValue] | Iterable[AnswerValue],
    *,
    with_evidence: Collection[str] = frozenset(),
) -> ScoreResult:
    """Scores per question, per category and overall, red flags first. Answers to questions the
    spec does not have are ignored; answers that do not fit their question are listed in
    `invalid` and count as unanswered."""
    given = answers.values() if isinstance(answers, Mapping) else answers
    by_id = {a.question_id: a.value for a in given}
    scores: list[QuestionScore] = []
    invalid: list[str] = []
    values: dict[str, Value] = {}
    for question in spec.questions:
        try:
            value = coerce_answer(question, by_id.get(question.id))
        except AnswerError:
            invalid.append(question.id)
            value = None
        values[question.id] = value
        score = score_question(question, value)
        if question.evidence == "required" and value != "na" and question.id not in with_evidence:
            score = replace(score, evidence_missing=True)
        scores.append(score)
    weights = {q.id: q.weight for q in spec.questions}
    categories = tuple(_category_score(c, scores, weights) for c in spec.categories)
    return ScoreResult(
        red_flags=_red_flags(spec, scores, values),
        overall=_weighted_mean((c.score, c.weight) for c in categories),
        categories=categories,
        questions=tuple(scores),
        unanswered=tuple(s.question_id for s in scores if not s.answered),
        evidence_missing=tuple(s.question_id for s in scores if s.evidence_missing),
        invalid=tuple(invalid),
        questionnaire_id=spec.id,
        version=spec.version,
    )


def _category_score(
    category: CategorySpec, scores: list[QuestionScore], weights: Mapping[str, int]
) -> CategoryScore:
    mine = [s for s in scores if s.category == category.id]
    mean = _weighted_mean((s.score, weights[s.question_id]) for s in mine)
    return CategoryScore(
        id=category.id,
        title=category.title,
        weight=category.weight,
        score=None if mean is None else mean * 100,
        questions=len(mine),
        answered=sum(1 for s in mine if s.answered),
        scored=sum(1 for s in mine if s.score is not None),
        red_flags=sum(1 for s in mine if s.red_flag),
    )


def _weighted_mean(pairs: Iterable[tuple[float | None, int]]) -> float | None:
    present = [(value, weight) for value, weight in pairs if value is not None]
    total = sum(weight for _, weight in present)
    if not total:
        return None
    return sum(value * weight for value, weight in present) / total


def _red_flags(
    spec: QuestionnaireSpec, scores: list[QuestionScore], values: Mapping[str, Value]
) -> tuple[RedFlag, ...]:
    order = {c.id: index for index, c in enumerate(spec.categories)}
    position = {q.id: index for index, q in enumerate(spec.questions)}
    flagged = sorted(
        (s for s in scores if s.red_flag),
        key=lambda s: (order[s.category], position[s.question_id]),
    )
    result = []
    for score in flagged:
        question = spec.question(score.question_id)
        assert question is not None
        answer = _shown(question, values[score.question_id])
        result.append(RedFlag(question.id, question.category, question.text, answer, score.reason))
    return tuple(result)


def _shown(question: QuestionSpec, value: Value) -> str:
    if question.type == "choice":
        choice = question.choice(str(value))
        return choice.label if choice else str(value)
    if question.type == "number" and isinstance(value, float):
        return f"{value:g} {question.unit}".strip()
    return str(value)


def compare(results_by_provider: Mapping[str, ScoreResult]) -> Comparison:
    """Per category, each provider's score and red flags, and whether they differ enough to
    matter. Categories appear in the order first met; a provider whose questionnaire lacks a
    category has no score there and takes no part in its red-flag test."""
    providers = tuple(results_by_provider)
    titles: dict[str, str] = {}
    for result in results_by_provider.values():
        for category in result.categories:
            titles.setdefault(category.id, category.title)
    rows = tuple(
        _compare_category(category_id, title, results_by_provider)
        for category_id, title in titles.items()
    )
    return Comparison(
        providers=providers,
        overall={p: r.overall for p, r in results_by_provider.items()},
        red_flags={p: len(r.red_flags) for p, r in results_by_provider.items()},
        categories=rows,
    )


def _compare_category(
    category_id: str, title: str, results: Mapping[str, ScoreResult]
) -> CategoryComparison:
    present = {p: r.category(category_id) for p, r in results.items()}
    scores = {p: c.score if c else None for p, c in present.items()}
    flags = {p: c.red_flags if c else 0 for p, c in present.items()}
    known = [s for s in scores.values() if s is not None]
    spread = max(known) - min(known) if len(known) >= 2 else None
    flagged = {c.red_flags > 0 for c in present.values() if c is not None}
    differs = (spread is not None and spread >= DIFFERS_SPREAD) or flagged == {True, False}
    return CategoryComparison(category_id, title, scores, flags, spread, differs)
