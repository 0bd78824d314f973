"""Provider questionnaires as versioned YAML data (STYLE rule 13), validated into specs. PURE.

A questionnaire file (see providers/library/gpu-provider-v1.yaml) has stable ids: a questionnaire
id plus a version, category slugs and question ids. A changed questionnaire is a new file with a
higher version, so answers given to an older version keep their meaning. A licensed catalogue
(CAIQ, SIG) is never bundled; a user may import their own copy written in the same shape, and it
goes through the same validation.

Only stdlib and yaml: no Django, no network. Every problem found is reported with its path, e.g.
"questions[3] (GPU-PATCH-01): best and worst are required for a number question".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import yaml

from gpuposture.base.safe_parse import SafeParseError, load_yaml

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


class _StrictLoader(yaml.SafeLoader):
    """safe_load's constructors, minus aliases (billion laughs) and duplicate keys."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise QuestionnaireError(
                [f"line {mark.line + 1}: YAML aliases (*name) are not allowed"]
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[str] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                if key_node.value in seen:
                    line = key_node.start_mark.line + 1
                    raise QuestionnaireError([f"line {line}: duplicate key {key_node.value!r}"])
                seen.add(key_node.value)
        return super().construct_mapping(node, deep=deep)


def parse_questionnaire(text: str | bytes) -> QuestionnaireSpec:
    """The spec in a YAML document; QuestionnaireError if it is too large or not valid."""
    if len(text) > MAX_BYTES:
        raise QuestionnaireError([f"document is larger than {MAX_BYTES} bytes"])
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise QuestionnaireError([f"document is not UTF-8 (byte {exc.start})"]) from None
    elif len(text.encode("utf-8")) > MAX_BYTES:
        raise QuestionnaireError([f"document is larger than {MAX_BYTES} bytes"])
    try:
        # Size, depth and aliases are checked before the document is built; the strict loader
        # then refuses duplicate keys (and aliases, should the check let one through).
        data = load_yaml(text, max_bytes=MAX_BYTES, max_depth=MAX_DEPTH, loader=_StrictLoader)
    except SafeParseError as exc:
        cause = exc.__cause__
        if isinstance(cause, QuestionnaireError):
            raise cause from None
        mark = getattr(cause, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(cause, "problem", None)
        message = f"{where}not valid YAML: {problem}" if problem else f"document: {exc}"
        raise QuestionnaireError([message]) from None
    return spec_from_dict(data)


def read_questionnaire_file(path: str | Path) -> QuestionnaireSpec:
    """The spec in a file, read no further than the size limit."""
    with open(path, "rb") as handle:
        return parse_questionnaire(handle.read(MAX_BYTES + 1))


def library_files() -> list[Path]:
    """The questionnaire files shipped in providers/library/, in name order."""
    return sorted(LIBRARY_DIR.glob("*.yaml"))


def spec_from_dict(data: Any) -> QuestionnaireSpec:
    """The spec in already-loaded data (YAML or stored JSON); QuestionnaireError if not valid."""
    reader = _Reader()
    spec = reader.questionnaire(data)
    if reader.errors or spec is None:
        raise QuestionnaireError(reader.errors or ["document: not valid"])
    return spec


def spec_to_dict(spec: QuestionnaireSpec) -> dict[str, Any]:
    """The spec in the file's shape (JSON- and YAML-safe); spec_from_dict reverses it."""
    return _compact(spec)


def _compact(obj: Any) -> dict[str, Any]:
    # Empty optional fields are left out: the parser's defaults for them are the same.
    data: dict[str, Any] = {}
    for field in fields(obj):
        value = getattr(obj, field.name)
        if value is None or value == "" or value == ():
            continue
        if isinstance(value, tuple):
            value = [_compact(v) if is_dataclass(v) else v for v in value]
        data[field.name] = value
    return data


class _Reader:
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
