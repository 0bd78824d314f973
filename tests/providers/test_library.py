"""The shipped questionnaire library/gpu-provider-v1.yaml (issue 8, DESIGN §5 PROV-002)."""

from __future__ import annotations

import json
import re

import pytest

from providers.questionnaire_spec import (
    library_files,
    read_questionnaire_file,
    spec_from_dict,
    spec_to_dict,
)
from providers.scoring import score_question

SPEC = read_questionnaire_file(next(p for p in library_files() if p.name == "gpu-provider-v1.yaml"))
QUESTIONS = {q.id: q for q in SPEC.questions}

# Each topic the issue asks for, and the questions that cover it.
TOPICS = {
    "partitioning model between customers": ["GPU-PART-01", "GPU-PART-02", "GPU-PART-03"],
    "memory wipe / GPU reset and how it is evidenced": [
        "GPU-WIPE-01",
        "GPU-WIPE-02",
        "GPU-WIPE-03",
    ],
    "driver, toolkit and firmware patch SLA": ["GPU-PATCH-01", "GPU-PATCH-02", "GPU-PATCH-03"],
    "bulletin notification to customers": ["GPU-BULL-01", "GPU-BULL-02"],
    "logs and GPU telemetry, retention": ["GPU-LOG-01", "GPU-LOG-02", "GPU-LOG-03"],
    "confidential computing / attestation": ["GPU-CC-01", "GPU-CC-02", "GPU-CC-03"],
    "workload identity federation vs static keys": ["GPU-IAM-01"],
    "network isolation between tenants": ["GPU-NET-01", "GPU-NET-02"],
    "management plane authentication": ["GPU-IAM-02"],
    "incident notification window": ["GPU-IR-01", "GPU-IR-02"],
    "sub-processors": ["GPU-SUB-01", "GPU-SUB-02"],
    "data deletion at exit": ["GPU-DATA-01", "GPU-DATA-02", "GPU-DATA-03"],
    "physical and hypervisor isolation": ["GPU-HOST-01", "GPU-HOST-02", "GPU-HOST-04"],
    "LeftoverLocals-type GPU memory leaks": ["GPU-LEAK-01", "GPU-LEAK-02"],
}

# One red-flag answer per topic the issue and PROV-002 name.
RED_FLAG_ANSWERS = [
    ("GPU-PART-01", "time_slicing"),
    ("GPU-PART-01", "mps"),
    ("GPU-WIPE-01", "nothing"),
    ("GPU-WIPE-02", "no"),
    ("GPU-PATCH-01", 31.0),
    ("GPU-PATCH-02", 45.0),
    ("GPU-PATCH-03", 60.0),
    ("GPU-LOG-01", "none"),
    ("GPU-IAM-01", "static_only"),
    ("GPU-IR-02", "no"),
    ("GPU-IR-01", 96.0),
    ("GPU-LEAK-02", "shared_unmitigated"),
]


def test_shipped_questionnaire_identity_and_size():
    assert (SPEC.id, SPEC.version) == ("gpu-provider", 1)
    assert SPEC.title == "GPU cloud provider security questionnaire"
    assert "CC0" in SPEC.license and "Apache-2.0" in SPEC.license
    assert 30 <= len(SPEC.questions) <= 60
    assert len(QUESTIONS) == len(SPEC.questions)


def test_every_library_file_is_named_after_its_id_and_version():
    for path in library_files():
        spec = read_questionnaire_file(path)
        assert path.name == f"{spec.id}-v{spec.version}.yaml"


def test_every_category_is_used_and_every_type_appears():
    used = {q.category for q in SPEC.questions}
    assert used == {c.id for c in SPEC.categories}
    assert {q.type for q in SPEC.questions} == {"choice", "yes_no", "number", "text"}


@pytest.mark.parametrize(("topic", "question_ids"), TOPICS.items())
def test_topic_is_covered(topic, question_ids):
    for question_id in question_ids:
        assert question_id in QUESTIONS, (topic, question_id)


def test_topic_details():
    partitioning = {c.value for c in QUESTIONS["GPU-PART-01"].choices}
    assert {"whole_gpu", "mig_gi", "vgpu_fixed", "mps", "time_slicing"} <= partitioning
    assert "VU#446598" in QUESTIONS["GPU-LEAK-02"].text
    assert QUESTIONS["GPU-LOG-02"].unit == "days"
    assert QUESTIONS["GPU-LOG-02"].red_flag_below == 30
    assert QUESTIONS["GPU-IR-01"].unit == "hours"
    assert QUESTIONS["GPU-IR-01"].red_flag_above == 72
    for question_id in ("GPU-PATCH-01", "GPU-PATCH-02", "GPU-PATCH-03"):
        assert QUESTIONS[question_id].red_flag_above == 30, question_id
    assert {c.value for c in QUESTIONS["GPU-IAM-01"].choices} >= {"federation_only", "static_only"}


def test_nvidia_mappings_are_exactly_the_five_published_ids():
    nvidia = {
        m.split(":", 1)[1]
        for q in SPEC.questions
        for m in q.mappings
        if m.startswith("NVIDIA-AI-Cloud:")
    }
    assert nvidia == {"SEC11", "SEC21", "SEC22", "BFX01", "BFX03"}
    assert "NVIDIA-AI-Cloud:SEC21" in QUESTIONS["GPU-WIPE-01"].mappings
    assert "NVIDIA-AI-Cloud:BFX01" in QUESTIONS["GPU-WIPE-02"].mappings
    assert "NVIDIA-AI-Cloud:SEC22" in QUESTIONS["GPU-CC-03"].mappings


def test_mappings_name_only_known_frameworks():
    nist = re.compile(r"^SP800-53:[A-Z]{2}-\d{1,2}(\(\d{1,2}\))?$")
    for question in SPEC.questions:
        for mapping in question.mappings:
            assert mapping.startswith("NVIDIA-AI-Cloud:") or nist.match(mapping), mapping


@pytest.mark.parametrize(("question_id", "answer"), RED_FLAG_ANSWERS)
def test_red_flag_answers(question_id, answer):
    result = score_question(QUESTIONS[question_id], answer)
    assert result.red_flag, (question_id, answer)
    assert result.reason == QUESTIONS[question_id].red_flag_reason


def test_every_question_with_a_red_flag_explains_it():
    for question in SPEC.questions:
        flagged = (
            any(c.red_flag for c in question.choices)
            or question.red_flag_on
            or question.red_flag_above is not None
            or question.red_flag_below is not None
        )
        assert bool(question.red_flag_reason) == bool(flagged), question.id


def test_evidence_is_asked_for_where_it_matters():
    required = {q.id for q in SPEC.questions if q.evidence == "required"}
    assert {"GPU-PART-01", "GPU-WIPE-01", "GPU-WIPE-03", "GPU-PATCH-01", "GPU-CC-02"} <= required
    assert len(required) >= 15


def test_round_trip_through_json():
    assert spec_from_dict(json.loads(json.dumps(spec_to_dict(SPEC)))) == SPEC
