"""Loading questionnaire versions into the database. A version, once loaded, never changes:
answers given to it keep their meaning. A changed questionnaire needs a new version."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache

from django.db import transaction

from audit.services import CREATE, Actor, audit_record
from gpuposture.base.safe_parse import load_json
from providers.models import Questionnaire
from providers.questionnaire_spec import (
    MAX_BYTES,
    MAX_DEPTH,
    QuestionnaireSpec,
    spec_from_dict,
    spec_to_dict,
)


class QuestionnaireConflict(ValueError):
    """The same id and version is loaded with other content."""


@dataclass(frozen=True)
class LoadResult:
    questionnaire: Questionnaire
    created: bool


def spec_hash(spec: QuestionnaireSpec) -> str:
    canonical = json.dumps(spec_to_dict(spec), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@transaction.atomic
def questionnaire_load(
    *, spec: QuestionnaireSpec, source: str = Questionnaire.Source.LIBRARY, actor: Actor = None
) -> LoadResult:
    digest = spec_hash(spec)
    existing = Questionnaire.objects.filter(slug=spec.id, version=spec.version).first()
    if existing is not None:
        if existing.spec_hash != digest:
            raise QuestionnaireConflict(
                f"{spec.id} version {spec.version} is already loaded with different questions; "
                f"a changed questionnaire needs a new version (version {spec.version + 1})"
            )
        return LoadResult(existing, False)
    questionnaire = Questionnaire.objects.create(
        slug=spec.id,
        version=spec.version,
        title=spec.title,
        description=spec.description,
        license=spec.license,
        spec=spec_to_dict(spec),
        spec_hash=digest,
        source=source,
        question_count=len(spec.questions),
    )
    audit_record(
        actor=actor,
        action=CREATE,
        obj=questionnaire,
        after={"slug": spec.id, "version": spec.version, "spec_hash": digest, "source": source},
    )
    return LoadResult(questionnaire, True)


def spec_of(questionnaire: Questionnaire) -> QuestionnaireSpec:
    """The stored spec (parsed once per version: versions never change)."""
    return _spec(questionnaire.pk, questionnaire.spec_hash, json.dumps(questionnaire.spec))


@lru_cache(maxsize=32)
def _spec(pk: int, digest: str, text: str) -> QuestionnaireSpec:
    # Stored after validation, but read with the same limits as any document (JSON of a
    # questionnaire is a few times its YAML at most).
    return spec_from_dict(load_json(text, max_bytes=8 * MAX_BYTES, max_depth=MAX_DEPTH + 2))


def latest_questionnaire(slug: str | None = None) -> Questionnaire | None:
    rows = Questionnaire.objects.order_by("-version")
    if slug:
        rows = rows.filter(slug=slug)
    return rows.first()
