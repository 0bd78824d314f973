"""The shape of a provider questionnaire (providers/questionnaire_spec.py reads one): its limits,
key sets and id patterns, the error that lists every problem, and the frozen specs. PURE.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 32  # a questionnaire nests about six levels
MAX_QUESTIONS = 500
MAX_CATEGORIES = 50
MAX_CHOICES = 30
MAX_MAPPINGS = 20
MAX_VERSION = 100_000
MAX_NUMBER = 1e15
MAX_ERRORS = 50  # reported at most; a broken file would otherwise give thousands
LENGTHS = {
    "title": 200,
    "description": 4000,
    "license": 500,
    "text": 1000,
    "help": 2000,
    "label": 200,
    "red_flag_reason": 500,
    "unit": 20,
}
QUESTION_TYPES = ("choice", "yes_no", "number", "text")
EVIDENCE_LEVELS = ("required", "optional", "none")
YES_NO_VALUES = ("yes", "partial", "no", "na")
Item = dict[str, Any]
LIBRARY_DIR = Path(__file__).resolve().parent / "library"

SLUG_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
QUESTION_ID_RE = re.compile(r"^[A-Z0-9]{1,20}(-[A-Z0-9]{1,20}){0,4}$")
CHOICE_VALUE_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
MAPPING_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}:[A-Za-z0-9][A-Za-z0-9._()-]{0,39}$")

TOP_KEYS = {"id", "version", "title", "description", "license", "categories", "questions"}
CATEGORY_KEYS = {"id", "title", "weight"}
CHOICE_KEYS = {"value", "label", "score", "red_flag"}
# Keys that belong to one question type only.
TYPE_ONLY = {
    "choices": "choice",
    "unit": "number",
    "best": "number",
    "worst": "number",
    "red_flag_above": "number",
    "red_flag_below": "number",
    "red_flag_on": "yes_no",
}
QUESTION_KEYS = {
    "id",
    "category",
    "text",
    "help",
    "type",
    "evidence",
    "weight",
    "mappings",
    "red_flag_reason",
} | set(TYPE_ONLY)


class QuestionnaireError(ValueError):
    """The questionnaire document is not valid; `errors` lists each problem with its path."""

    def __init__(self, errors: Iterable[str]) -> None:
        self.errors = tuple(errors)
        if len(self.errors) == 1:
            message = self.errors[0]
        else:
            message = f"{len(self.errors)} problems: " + "; ".join(self.errors)
        super().__init__(message)


@dataclass(frozen=True)
class CategorySpec:
    id: str
    title: str
    weight: int = 1  # 1..5: weight of the category in the overall score


@dataclass(frozen=True)
class ChoiceSpec:
    value: str
    label: str
    score: float  # 0..1
    red_flag: bool = False


@dataclass(frozen=True)
class QuestionSpec:
    id: str
    category: str
    text: str
    type: str  # one of QUESTION_TYPES
    help: str = ""
    choices: tuple[ChoiceSpec, ...] = ()  # choice only
    evidence: str = "optional"  # one of EVIDENCE_LEVELS
    weight: int = 1  # 1..5 within the category; ignored for text
    mappings: tuple[str, ...] = ()  # e.g. "NVIDIA-AI-Cloud:SEC11", "SP800-53:SC-4"
    red_flag_reason: str = ""
    unit: str = ""  # number only
    best: float | None = None  # number only: score 1 at or beyond best
    worst: float | None = None  # number only: score 0 at or beyond worst
    red_flag_above: float | None = None  # number only
    red_flag_below: float | None = None  # number only
    red_flag_on: tuple[str, ...] = ()  # yes_no only

    @property
    def scored(self) -> bool:
        return self.type != "text"

    def choice(self, value: str) -> ChoiceSpec | None:
        return next((c for c in self.choices if c.value == value), None)


@dataclass(frozen=True)
class QuestionnaireSpec:
    id: str
    version: int
    title: str
    description: str
    categories: tuple[CategorySpec, ...]
    questions: tuple[QuestionSpec, ...]
    license: str = ""

    def question(self, question_id: str) -> QuestionSpec | None:
        return next((q for q in self.questions if q.id == question_id), None)

    def category(self, category_id: str) -> CategorySpec | None:
        return next((c for c in self.categories if c.id == category_id), None)
