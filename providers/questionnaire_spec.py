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

from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import yaml

from gpuposture.base.safe_parse import SafeParseError, load_yaml
from providers.questionnaire_reader import QuestionnaireReader
from providers.questionnaire_schema import (
    CATEGORY_KEYS,
    CHOICE_KEYS,
    CHOICE_VALUE_RE,
    EVIDENCE_LEVELS,
    LENGTHS,
    LIBRARY_DIR,
    MAPPING_RE,
    MAX_BYTES,
    MAX_CATEGORIES,
    MAX_CHOICES,
    MAX_DEPTH,
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
    QuestionnaireError,
    QuestionnaireSpec,
    QuestionSpec,
)

# The shape (limits, patterns, specs) is in questionnaire_schema.py and the validation in
# questionnaire_reader.py; callers keep importing every name from here.
__all__ = [
    "CATEGORY_KEYS",
    "CHOICE_KEYS",
    "CHOICE_VALUE_RE",
    "CategorySpec",
    "ChoiceSpec",
    "EVIDENCE_LEVELS",
    "Item",
    "LENGTHS",
    "LIBRARY_DIR",
    "MAPPING_RE",
    "MAX_BYTES",
    "MAX_CATEGORIES",
    "MAX_CHOICES",
    "MAX_DEPTH",
    "MAX_ERRORS",
    "MAX_MAPPINGS",
    "MAX_NUMBER",
    "MAX_QUESTIONS",
    "MAX_VERSION",
    "QUESTION_ID_RE",
    "QUESTION_KEYS",
    "QUESTION_TYPES",
    "QuestionSpec",
    "QuestionnaireError",
    "QuestionnaireSpec",
    "SLUG_RE",
    "TOP_KEYS",
    "TYPE_ONLY",
    "YES_NO_VALUES",
    "library_files",
    "parse_questionnaire",
    "read_questionnaire_file",
    "spec_from_dict",
    "spec_to_dict",
]


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
    reader = QuestionnaireReader()
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
