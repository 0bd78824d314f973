"""providers.questionnaire_spec: parsing and validating questionnaire documents (issue 8)."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from providers.questionnaire_spec import (
    MAX_BYTES,
    MAX_QUESTIONS,
    QuestionnaireError,
    parse_questionnaire,
    spec_from_dict,
    spec_to_dict,
)


def minimal() -> dict:
    return {
        "id": "mini",
        "version": 2,
        "title": "Mini",
        "description": "Two questions.",
        "categories": [{"id": "patching", "title": "Patching", "weight": 3}],
        "questions": [
            {
                "id": "Q-SHARE-01",
                "category": "patching",
                "text": "How are GPUs shared?",
                "type": "choice",
                "choices": [
                    {"value": "whole_gpu", "label": "Whole", "score": 1},
                    {"value": "time_slicing", "label": "Sliced", "score": 0, "red_flag": True},
                ],
                "evidence": "required",
                "weight": 5,
                "mappings": ["SP800-53:SC-4"],
                "red_flag_reason": "No isolation.",
            },
            {
                "id": "Q-PATCH-01",
                "category": "patching",
                "text": "Patch window?",
                "type": "number",
                "unit": "days",
                "best": 7,
                "worst": 30,
                "red_flag_above": 30,
            },
        ],
    }


class _NoAliasDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: object) -> bool:
        return True  # the parser refuses aliases; write shared test data out in full


def dump(data: object) -> str:
    return yaml.dump(data, Dumper=_NoAliasDumper, sort_keys=False)


def parse(data: object):
    return parse_questionnaire(dump(data))


def errors_of(data: object) -> tuple[str, ...]:
    with pytest.raises(QuestionnaireError) as caught:
        parse(data)
    return caught.value.errors


def test_minimal_document_parses_with_defaults():
    spec = parse(minimal())
    assert (spec.id, spec.version, spec.title, spec.license) == ("mini", 2, "Mini", "")
    choice, number = spec.questions
    assert choice.choices[1].red_flag and not choice.choices[0].red_flag
    assert (number.best, number.worst, number.red_flag_above, number.unit) == (
        7.0,
        30.0,
        30.0,
        "days",
    )
    assert (number.evidence, number.weight, number.help, number.mappings) == ("optional", 1, "", ())
    assert spec.question("Q-PATCH-01") is number
    assert spec.category("patching").weight == 3


def test_bytes_input_and_unquoted_yes_no_in_red_flag_on():
    data = minimal()
    data["questions"].append(
        {"id": "Q-LOG-01", "category": "patching", "text": "Logs?", "type": "yes_no"}
    )
    text = dump(data) + "  red_flag_on: [no, partial]\n"
    spec = parse_questionnaire(text.encode())
    assert spec.questions[2].red_flag_on == ("no", "partial")


def test_round_trip_yaml_and_json():
    spec = parse(minimal())
    assert parse(spec_to_dict(spec)) == spec
    assert spec_from_dict(json.loads(json.dumps(spec_to_dict(spec)))) == spec


def _set(path: str, value: object):
    """A change to minimal(): set `value` at a dotted path (list indexes as numbers)."""

    def change(data: dict) -> None:
        *parents, last = path.split(".")
        target: object = data
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return change


def _drop(path: str):
    def change(data: dict) -> None:
        *parents, last = path.split(".")
        target: object = data
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        del target[last]

    return change


def _add_question(**fields):
    def change(data: dict) -> None:
        base = {"id": "Q-NEW-01", "category": "patching", "text": "New?", "type": "yes_no"}
        data["questions"].append({**base, **fields})

    return change


INVALID = [
    ("unknown top-level key", _set("owner", "x"), "questionnaire: unknown key(s) owner"),
    (
        "unknown question key names the question",
        _set("questions.1.colour", "red"),
        "questions[1] (Q-PATCH-01): unknown key(s) colour",
    ),
    (
        "unknown choice key",
        _set("questions.0.choices.0.note", "x"),
        "questions[0] (Q-SHARE-01) choices[0]: unknown key(s) note",
    ),
    (
        "unknown category key",
        _set("categories.0.colour", "x"),
        "categories[0]: unknown key(s) colour",
    ),
    (
        "duplicate question id",
        _set("questions.1.id", "Q-SHARE-01"),
        "questions[1] (Q-SHARE-01): duplicate question id",
    ),
    (
        "duplicate category id",
        lambda d: d["categories"].append({"id": "patching", "title": "Again"}),
        "categories[1]: duplicate category id 'patching'",
    ),
    ("bad questionnaire id", _set("id", "Mini Q"), "questionnaire: id 'Mini Q' is not valid"),
    (
        "bad question id",
        _set("questions.1.id", "q-patch"),
        "questions[1]: id 'q-patch' is not valid",
    ),
    ("version zero", _set("version", 0), "questionnaire: version must be an integer from 1"),
    ("version as text", _set("version", "1"), "questionnaire: version must be an integer"),
    ("version as boolean", _set("version", True), "questionnaire: version must be an integer"),
    ("missing version", _drop("version"), "questionnaire: version must be an integer"),
    ("missing title", _drop("title"), "questionnaire: title is required"),
    (
        "bad type",
        _set("questions.1.type", "slider"),
        "questions[1] (Q-PATCH-01): type 'slider' must be one of choice, yes_no, number, text",
    ),
    (
        "text too long",
        _set("questions.1.text", "x" * 1001),
        "questions[1] (Q-PATCH-01): text is longer than 1000 characters",
    ),
    (
        "help too long",
        _set("questions.1.help", "x" * 2001),
        "questions[1] (Q-PATCH-01): help is longer than 2000 characters",
    ),
    (
        "unknown category reference",
        _set("questions.1.category", "nope"),
        "questions[1] (Q-PATCH-01): category 'nope' is not one of the categories",
    ),
    (
        "unused category",
        lambda d: d["categories"].append({"id": "spare", "title": "Spare"}),
        "categories[1] (spare): no question uses this category",
    ),
    (
        "choice question without choices",
        _drop("questions.0.choices"),
        "questions[0] (Q-SHARE-01): a choice question needs a list of at least two choices",
    ),
    (
        "one choice only",
        lambda d: d["questions"][0]["choices"].pop(),
        "questions[0] (Q-SHARE-01): a choice question needs a list of at least two choices",
    ),
    (
        "choices on a yes_no question",
        _add_question(choices=[{"value": "a", "label": "A", "score": 1}] * 2),
        "questions[2] (Q-NEW-01): choices is only allowed on a choice question",
    ),
    (
        "score above one",
        _set("questions.0.choices.0.score", 1.5),
        "questions[0] (Q-SHARE-01) choices[0]: score is required, a number from 0 to 1",
    ),
    (
        "negative score",
        _set("questions.0.choices.0.score", -0.1),
        "choices[0]: score is required, a number from 0 to 1",
    ),
    (
        "duplicate choice value",
        _set("questions.0.choices.1.value", "whole_gpu"),
        "choices[1]: duplicate choice value 'whole_gpu'",
    ),
    (
        "unquoted no as a choice value",
        _set("questions.0.choices.1.value", False),
        "choices[1]: value False is not valid: a lowercase slug (quote yes/no/on/off)",
    ),
    (
        "red_flag not boolean",
        _set("questions.0.choices.1.red_flag", "yes"),
        "choices[1]: red_flag must be true or false",
    ),
    (
        "question weight above five",
        _set("questions.0.weight", 6),
        "questions[0] (Q-SHARE-01): weight must be an integer from 1 to 5",
    ),
    (
        "category weight zero",
        _set("categories.0.weight", 0),
        "categories[0]: weight must be an integer from 1 to 5",
    ),
    (
        "number without unit",
        _drop("questions.1.unit"),
        "questions[1] (Q-PATCH-01): unit is required",
    ),
    (
        "number without best",
        _drop("questions.1.best"),
        "questions[1] (Q-PATCH-01): best and worst are required for a number question",
    ),
    (
        "best equals worst",
        _set("questions.1.best", 30),
        "questions[1] (Q-PATCH-01): best and worst must differ",
    ),
    ("best not a number", _set("questions.1.best", "7"), "best must be a number"),
    ("best infinite", _set("questions.1.best", float("inf")), "best must be a number"),
    (
        "unit on a yes_no question",
        _add_question(unit="days"),
        "questions[2] (Q-NEW-01): unit is only allowed on a number question",
    ),
    (
        "red_flag_on on a number question",
        _set("questions.1.red_flag_on", ["no"]),
        "questions[1] (Q-PATCH-01): red_flag_on is only allowed on a yes_no question",
    ),
    (
        "red_flag_on with a value that is not yes/partial/no/na",
        _add_question(red_flag_on=["maybe"]),
        "red_flag_on 'maybe' must be one of yes, partial, no, na",
    ),
    (
        "red_flag_reason without a red flag",
        _add_question(red_flag_reason="Why?"),
        "questions[2] (Q-NEW-01): red_flag_reason is set but no answer is a red flag",
    ),
    (
        "red_flag_reason on a text question",
        _add_question(type="text", red_flag_reason="Why?"),
        "red_flag_reason is set but no answer is a red flag",
    ),
    (
        "bad evidence value",
        _set("questions.0.evidence", "maybe"),
        "evidence 'maybe' must be one of required, optional, none",
    ),
    (
        "bad mapping",
        _set("questions.0.mappings", ["SC-4"]),
        "mapping 'SC-4' must look like 'FRAMEWORK:ID'",
    ),
    (
        "mappings not a list",
        _set("questions.0.mappings", "SP800-53:SC-4"),
        "mappings must be a list",
    ),
    (
        "question not a mapping",
        _set("questions.1", "Q-PATCH-01"),
        "questions[1]: expected a mapping",
    ),
    ("no questions", _set("questions", []), "questions: required, a list of 1 to 500 items"),
    (
        "too many questions",
        lambda d: d.update(questions=d["questions"] * (MAX_QUESTIONS // 2 + 1)),
        "questions: required, a list of 1 to 500 items",
    ),
]


@pytest.mark.parametrize(("case", "change", "message"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_documents_are_refused_with_their_path(case, change, message):
    data = copy.deepcopy(minimal())
    change(data)
    errors = errors_of(data)
    assert any(message in error for error in errors), errors


def test_all_problems_are_listed_in_one_error():
    data = minimal()
    data["version"] = 0
    data["questions"][1]["unit"] = ""
    with pytest.raises(QuestionnaireError) as caught:
        parse(data)
    assert len(caught.value.errors) == 2
    assert str(caught.value).startswith("2 problems: questionnaire: version")


LAUGHS = """\
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: [*c, *c, *c, *c, *c, *c, *c, *c, *c]
"""

RAW_INVALID = [
    ("top level is a list", "- id: x\n", "questionnaire: expected a mapping"),
    ("top level is a scalar", "hello\n", "questionnaire: expected a mapping"),
    ("empty document", "", "questionnaire: expected a mapping"),
    ("billion laughs", LAUGHS, "line 2: YAML aliases (*name) are not allowed"),
    ("merge key alias", "base: &b {id: x}\nother:\n  <<: *b\n", "aliases (*name) are not allowed"),
    ("too large", "#" * (MAX_BYTES + 1), f"document is larger than {MAX_BYTES} bytes"),
    ("too large in UTF-8", "é" * (MAX_BYTES // 2 + 1), "document is larger than"),
    ("nested too deeply", "[" * 100_000, "document: nested deeper than 32 levels"),
    ("duplicate key", "id: a\nid: b\n", "line 2: duplicate key 'id'"),
    ("not YAML", "id: [unclosed\n", "not valid YAML"),
    ("python tag", "id: !!python/object/apply:os.system ['true']\n", "not valid YAML"),
    ("not UTF-8", b"id: \xff\xfe\n", "document is not UTF-8"),
]


@pytest.mark.parametrize(("case", "text", "message"), RAW_INVALID, ids=[c[0] for c in RAW_INVALID])
def test_unsafe_or_malformed_text_is_refused(case, text, message):
    with pytest.raises(QuestionnaireError) as caught:
        parse_questionnaire(text)
    assert message in str(caught.value)


def test_spec_from_dict_refuses_what_parse_refuses():
    data = minimal()
    data["questions"][0]["type"] = "slider"
    with pytest.raises(QuestionnaireError, match="type 'slider'"):
        spec_from_dict(data)
