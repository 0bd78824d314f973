"""What the assessment and comparison pages show, assembled from the spec and the answers."""

from __future__ import annotations

from typing import Any

from gpuposture.base.labels import words
from providers.assessments import assessment_score
from providers.models import Assessment
from providers.questionnaires import spec_of
from providers.scoring import Comparison, ScoreResult, compare
from providers.selectors import providers_for


def assessment_sections(
    assessment: Assessment, result: ScoreResult | None, flat: bool = False
) -> list[dict[str, Any]]:
    """Categories in order, each with its questions and their answers; or, `flat`, only the
    questions."""
    spec = spec_of(assessment.questionnaire)
    answers = {a.question_id: a for a in assessment.answers.all().prefetch_related("files")}
    scores = {q.question_id: q for q in result.questions} if result else {}
    categories = {c.id: c for c in result.categories} if result else {}
    sections: dict[str, dict[str, Any]] = {
        c.id: {
            "id": c.id,
            "title": c.title,
            "weight": c.weight,
            "score": categories.get(c.id),
            "questions": [],
        }
        for c in spec.categories
    }
    flat_list = []
    for q in spec.questions:
        answer = answers.get(q.id)
        scored = scores.get(q.id)
        item = {
            "id": q.id,
            "text": q.text,
            "help": q.help,
            "type": q.type,
            "unit": q.unit,
            "choices": q.choices,
            "evidence": q.evidence,
            "weight": q.weight,
            "mappings": q.mappings,
            "answer": answer,
            "value": "" if answer is None or answer.value is None else answer.value,
            # What a person reads: a choice's label, yes/no in words (the value stays the code).
            "shown": _shown(q, None if answer is None else answer.value),
            "score": None if scored is None or scored.score is None else round(scored.score * 100),
            "red_flag": bool(scored and scored.red_flag),
            "red_flag_reason": scored.reason if scored else "",
            "evidence_missing": bool(scored and scored.evidence_missing),
        }
        sections[q.category]["questions"].append(item)
        flat_list.append(item)
    return flat_list if flat else list(sections.values())


def _shown(question: Any, value: Any) -> str:
    if value is None:
        return ""
    if question.type == "choice":
        choice = question.choice(str(value))
        return choice.label if choice else str(value)
    if question.type == "yes_no":
        return words(value)
    return str(value)


def comparison_for(user, slugs: list[str]) -> tuple[Comparison | None, list[str]]:
    """Each chosen provider's newest accepted (else newest submitted) assessment, compared.
    Providers with neither are returned as missing."""
    results: dict[str, ScoreResult] = {}
    missing = []
    providers = {p.slug: p for p in providers_for(user).filter(slug__in=slugs)}
    for slug in slugs:
        provider = providers.get(slug)
        assessment = (
            Assessment.objects.filter(provider=provider, status__in=["accepted", "submitted"])
            .select_related("questionnaire")
            .order_by("status", "-reviewed_at", "-submitted_at")  # accepted before submitted
            .first()
            if provider
            else None
        )
        if assessment is None:
            missing.append(slug)
            continue
        results[provider.name] = assessment_score(assessment)
    return (compare(results) if len(results) >= 2 else None), missing


def comparison_rows(comparison: Comparison) -> list[dict[str, Any]]:
    """The comparison as table rows: overall first, then each category, one cell per provider."""
    rows = [
        {
            "title": "Overall",
            "cells": [
                {
                    "score": comparison.overall.get(name),
                    "red_flags": comparison.red_flags.get(name, 0),
                }
                for name in comparison.providers
            ],
            "differs": False,
            "spread": None,
        }
    ]
    for category in comparison.categories:
        rows.append(
            {
                "title": category.title,
                "cells": [
                    {
                        "score": category.scores.get(name),
                        "red_flags": category.red_flags.get(name, 0),
                    }
                    for name in comparison.providers
                ],
                "differs": category.differs,
                "spread": category.spread,
            }
        )
    return rows
