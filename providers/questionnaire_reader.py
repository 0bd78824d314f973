"""Validation of a loaded questionnaire document into a QuestionnaireSpec, collecting every
problem with its path rather than stopping at the first. PURE.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from providers.questionnaire_schema import (
    CATEGORY_KEYS,
    CHOICE_KEYS,
    CHOICE_VALUE_RE,
    EVIDENCE_LEVELS,
    LENGTHS,
    MAPPING_RE,
    MAX_CATEGORIES,
    MAX_CHOICES,
    MAX_ERRORS,
    MAX_MAPPINGS,
    MAX_NUMBER,
    MAX_QUESTIONS,
    MAX_VERSION,
    QUESTION_ID_RE,
    QUESTION_KEYS,
    QUESTION_TYPES,
    SLUG_RE,
    TOP_KEYS,
    TYPE_ONLY,
    YES_NO_VALUES,
    CategorySpec,
    ChoiceSpec,
    Item,
    QuestionnaireSpec,
    QuestionSpec,
)


class QuestionnaireReader:
    """Walks the loaded data, collecting every problem; returns safe defaults after one."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def fail(self, where: str, message: str) -> None:
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(f"{where}: {message}")

    def mapping(self, item: Any, where: str, allowed: set[str]) -> bool:
        if not isinstance(item, dict):
            self.fail(where, "expected a mapping")
            return False
        unknown = sorted(str(key) for key in item if key not in allowed)
        if unknown:
            self.fail(where, f"unknown key(s) {', '.join(unknown)}")
        return True

    def string(self, item: Item, key: str, where: str, *, required: bool = True) -> str:
        value = item.get(key)
        if value is None and not required:
            return ""
        if not isinstance(value, str) or not value.strip():
            self.fail(where, f"{key} is required, a non-empty string")
            return ""
        limit = LENGTHS.get(key, 63)
        if len(value) > limit:
            self.fail(where, f"{key} is longer than {limit} characters")
        return value.strip()

    def ident(self, item: Item, key: str, where: str, pattern: re.Pattern[str], hint: str) -> str:
        value = item.get(key)
        if not isinstance(value, str) or not pattern.match(value):
            self.fail(where, f"{key} {value!r} is not valid: {hint}")
            return ""
        return value

    def integer(self, item: Item, key: str, where: str, low: int, high: int, default: int) -> int:
        value = item.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            self.fail(where, f"{key} must be an integer from {low} to {high}")
            return default
        return value

    def number(self, item: Item, key: str, where: str) -> float | None:
        value = item.get(key)
        if value is None:
            return None
        valid = isinstance(value, int | float) and not isinstance(value, bool)
        if not valid or not -MAX_NUMBER <= value <= MAX_NUMBER:  # also refuses nan and inf
            self.fail(where, f"{key} must be a number")
            return None
        return float(value)

    def one_of(self, item: Item, key: str, where: str, options: Sequence[str], default: str) -> str:
        value = item.get(key, default)
        if value not in options:
            self.fail(where, f"{key} {value!r} must be one of {', '.join(options)}")
            return default
        return value

    def questionnaire(self, data: Any) -> QuestionnaireSpec | None:
        where = "questionnaire"
        if not self.mapping(data, where, TOP_KEYS):
            return None
        slug = self.ident(data, "id", where, SLUG_RE, "use lowercase letters, digits, hyphens")
        version = self.integer(data, "version", where, 1, MAX_VERSION, 0)
        title = self.string(data, "title", where)
        description = self.string(data, "description", where, required=False)
        license_note = self.string(data, "license", where, required=False)
        categories = self.categories(data)
        questions = self.questions(data, {c.id for c in categories})
        used = {q.category for q in questions}
        for index, category in enumerate(categories):
            if category.id not in used:
                self.fail(f"categories[{index}] ({category.id})", "no question uses this category")
        return QuestionnaireSpec(
            slug, version, title, description, categories, questions, license=license_note
        )

    def items(self, data: Item, key: str, limit: int) -> list[Any]:
        items = data.get(key)
        if not isinstance(items, list) or not 1 <= len(items) <= limit:
            self.fail(key, f"required, a list of 1 to {limit} items")
            return []
        return items

    def categories(self, data: Item) -> tuple[CategorySpec, ...]:
        result: list[CategorySpec] = []
        for index, item in enumerate(self.items(data, "categories", MAX_CATEGORIES)):
            where = f"categories[{index}]"
            if not self.mapping(item, where, CATEGORY_KEYS):
                continue
            slug = self.ident(item, "id", where, SLUG_RE, "use lowercase letters, digits, hyphens")
            if slug and slug in {c.id for c in result}:
                self.fail(where, f"duplicate category id {slug!r}")
            title = self.string(item, "title", where)
            weight = self.integer(item, "weight", where, 1, 5, 1)
            result.append(CategorySpec(id=slug, title=title, weight=weight))
        return tuple(result)

    def questions(self, data: Item, category_ids: set[str]) -> tuple[QuestionSpec, ...]:
        result: list[QuestionSpec] = []
        seen: set[str] = set()
        for index, item in enumerate(self.items(data, "questions", MAX_QUESTIONS)):
            question = self.question(item, index, category_ids)
            if question is None:
                continue
            if question.id and question.id in seen:
                self.fail(f"questions[{index}] ({question.id})", "duplicate question id")
            seen.add(question.id)
            result.append(question)
        return tuple(result)

    def question(self, item: Any, index: int, category_ids: set[str]) -> QuestionSpec | None:
        where = f"questions[{index}]"
        if not isinstance(item, dict):
            self.fail(where, "expected a mapping")
            return None
        question_id = self.ident(
            item, "id", where, QUESTION_ID_RE, "use UPPER-CASE letters, digits and hyphens"
        )
        if question_id:
            where = f"{where} ({question_id})"
        self.mapping(item, where, QUESTION_KEYS)
        category = item.get("category")
        if not isinstance(category, str) or category not in category_ids:
            self.fail(where, f"category {category!r} is not one of the categories")
        kind = self.one_of(item, "type", where, QUESTION_TYPES, "text")
        for key, only in TYPE_ONLY.items():
            if key in item and kind != only:
                self.fail(where, f"{key} is only allowed on a {only} question")
        question = QuestionSpec(
            id=question_id,
            category=category if isinstance(category, str) else "",
            text=self.string(item, "text", where),
            type=kind,
            help=self.string(item, "help", where, required=False),
            choices=self.choices(item, where) if kind == "choice" else (),
            evidence=self.one_of(item, "evidence", where, EVIDENCE_LEVELS, "optional"),
            weight=self.integer(item, "weight", where, 1, 5, 1),
            mappings=self.mappings(item, where),
            red_flag_reason=self.string(item, "red_flag_reason", where, required=False),
            red_flag_on=self.red_flag_on(item, where) if kind == "yes_no" else (),
            **(self.number_fields(item, where) if kind == "number" else {}),
        )
        limits = (question.red_flag_above, question.red_flag_below)
        flags = [c.red_flag for c in question.choices] + [bool(question.red_flag_on)]
        if question.red_flag_reason and not any(flags) and limits == (None, None):
            self.fail(where, "red_flag_reason is set but no answer is a red flag")
        return question

    def choices(self, item: Item, where: str) -> tuple[ChoiceSpec, ...]:
        items = item.get("choices")
        if not isinstance(items, list) or len(items) < 2:
            self.fail(where, "a choice question needs a list of at least two choices")
            return ()
        if len(items) > MAX_CHOICES:
            self.fail(where, f"at most {MAX_CHOICES} choices")
            return ()
        result: list[ChoiceSpec] = []
        for index, choice in enumerate(items):
            at = f"{where} choices[{index}]"
            if not self.mapping(choice, at, CHOICE_KEYS):
                continue
            value = self.ident(
                choice, "value", at, CHOICE_VALUE_RE, "a lowercase slug (quote yes/no/on/off)"
            )
            if value and value in {c.value for c in result}:
                self.fail(at, f"duplicate choice value {value!r}")
            score = self.number(choice, "score", at)
            if score is None or not 0 <= score <= 1:
                self.fail(at, "score is required, a number from 0 to 1")
                score = 0.0
            red_flag = choice.get("red_flag", False)
            if not isinstance(red_flag, bool):
                self.fail(at, "red_flag must be true or false")
                red_flag = False
            label = self.string(choice, "label", at)
            result.append(ChoiceSpec(value=value, label=label, score=score, red_flag=red_flag))
        return tuple(result)

    def number_fields(self, item: Item, where: str) -> dict[str, Any]:
        keys = ("best", "worst", "red_flag_above", "red_flag_below")
        fields: dict[str, Any] = {key: self.number(item, key, where) for key in keys}
        if fields["best"] is None or fields["worst"] is None:
            self.fail(where, "best and worst are required for a number question")
        elif fields["best"] == fields["worst"]:
            self.fail(where, "best and worst must differ")
        return {**fields, "unit": self.string(item, "unit", where)}

    def red_flag_on(self, item: Item, where: str) -> tuple[str, ...]:
        values = item.get("red_flag_on", [])
        if not isinstance(values, list):
            self.fail(where, "red_flag_on must be a list")
            return ()
        result: list[str] = []
        for value in values:
            if isinstance(value, bool):  # YAML 1.1 reads an unquoted yes / no as a boolean
                value = "yes" if value else "no"
            if value not in YES_NO_VALUES:
                self.fail(where, f"red_flag_on {value!r} must be one of {', '.join(YES_NO_VALUES)}")
            elif value not in result:
                result.append(value)
        return tuple(result)

    def mappings(self, item: Item, where: str) -> tuple[str, ...]:
        values = item.get("mappings", [])
        if not isinstance(values, list) or len(values) > MAX_MAPPINGS:
            self.fail(where, f"mappings must be a list of at most {MAX_MAPPINGS} strings")
            return ()
        for value in values:
            if not isinstance(value, str) or not MAPPING_RE.match(value):
                self.fail(where, f"mapping {value!r} must look like 'FRAMEWORK:ID'")
        if len(set(map(str, values))) != len(values):
            self.fail(where, "duplicate mapping")
        return tuple(v for v in values if isinstance(v, str))
