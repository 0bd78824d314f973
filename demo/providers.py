"""The demo's GPU providers and their questionnaires: Nimbus (hosts neo-west) accepted eleven
months ago with two red flags, so PROV-002 reaches neo-west's tenants and the renewal reminder
shows; Stratus answered and waits for review; Helio is a draft procurement is still filling.

Everything goes through the services a person uses (roles, validation, audit events). Invented
companies and people; answers written for the demo.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management import call_command

from providers.assessments import (
    answers_save,
    assessment_attest,
    assessment_review,
    assessment_start,
    assessment_submit,
    evidence_attach,
)
from providers.models import Assessment, Provider, ProviderContact
from providers.questionnaire_spec import QuestionSpec
from providers.questionnaires import spec_of
from providers.services import provider_ensure

PROVIDERS = {
    "nimbus-gpu": {
        "name": "Nimbus GPU Cloud",
        "website": "https://nimbus-gpu.example",
        "contacts": [
            ("Rosa Lind", "security@nimbus-gpu.example", "security"),
            ("NOC", "noc@nimbus-gpu.example", "incident"),
        ],
        "responder": ("Rosa Lind", "rosa.lind@nimbus-gpu.example"),
        # Patch SLA of 45 days and log retention of 14: both red flags (PROV-002).
        "answers": {"GPU-PART-01": "mig_gi", "GPU-PATCH-01": 45, "GPU-LOG-02": 14},
        "notes": {"GPU-PATCH-01": "Driver updates follow the quarterly maintenance window."},
        "stage": "accepted",
        "age_days": 335,
    },
    "stratus-compute": {
        "name": "Stratus Compute",
        "website": "https://stratus-compute.example",
        "contacts": [("Idris Okoye", "trust@stratus-compute.example", "security")],
        "responder": ("Idris Okoye", "idris@stratus-compute.example"),
        "answers": {"GPU-PART-01": "whole_gpu", "GPU-PATCH-01": 7},
        "notes": {"GPU-WIPE-01": "Full GPU reset and memory scrub, logged per allocation."},
        "stage": "submitted",
    },
    "helio-gpu": {
        "name": "Helio GPU",
        "website": "https://helio-gpu.example",
        "contacts": [("Marta Quist", "sales@helio-gpu.example", "commercial")],
        "responder": None,
        "answers": {"GPU-PART-01": "time_slicing"},
        "notes": {},
        "stage": "draft",
        "partial": 12,  # only the first questions answered so far
        # A file procurement attached to the draft (removable while it is a draft).
        "files": {
            "GPU-WIPE-01": (
                "helio-memory-scrub-procedure.txt",
                (
                    "Helio GPU: GPU memory sanitisation between customers\n"
                    "1. Node drained and cordoned when a customer's lease ends.\n"
                    "2. nvidia-smi --gpu-reset on every GPU; memory scrubbed by the driver"
                    " on reset.\n"
                    "3. Reset logged per GPU UUID to the customer-handover record.\n"
                ),
            )
        },
    },
}


def best_answer(question: QuestionSpec) -> Any:
    if question.type == "choice":
        return max(question.choices, key=lambda c: c.score).value
    if question.type == "yes_no":
        return "yes"
    if question.type == "number":
        return question.best
    return "See the attached description of the procedure."


def load_demo_providers() -> int:
    """Once: a second `demo` run keeps what is there (and its audit trail)."""
    if Assessment.objects.exists():
        return 0
    call_command("load_questionnaires", verbosity=0)
    users = {u.username: u for u in get_user_model().objects.all()}
    for slug, plan in PROVIDERS.items():
        provider = provider_ensure(
            slug=slug, name=plan["name"], website=plan["website"], actor="manage.py demo"
        )
        if not provider.contacts.exists():
            ProviderContact.objects.bulk_create(
                ProviderContact(provider=provider, name=n, email=e, role=r)
                for n, e, r in plan["contacts"]
            )
        _assess(provider, plan, users["procurement"], users["security-lead"])
    return len(PROVIDERS)


def _assess(provider: Provider, plan: dict, procurement, reviewer) -> None:
    assessment = assessment_start(provider=provider, user=procurement)
    questions = spec_of(assessment.questionnaire).questions[: plan.get("partial")]
    answers = {}
    for q in questions:
        answer = {
            "value": plan["answers"].get(q.id, best_answer(q)),
            "note": plan["notes"].get(q.id, ""),
        }
        if q.evidence == "required":
            answer["evidence_url"] = f"{plan['website']}/trust/{q.id.lower()}.pdf"
        answers[q.id] = answer
    answers_save(assessment=assessment, user=procurement, answers=answers)
    for question_id, (name, text) in plan.get("files", {}).items():
        evidence_attach(
            assessment=assessment,
            question_id=question_id,
            user=procurement,
            name=name,
            content_type="text/plain",
            data=text.encode(),
        )
    if plan["responder"]:
        name, email = plan["responder"]
        assessment_attest(
            assessment=assessment,
            user=procurement,
            responder_name=name,
            responder_email=email,
            responded_on=date.today() - timedelta(days=3),
        )
    if plan["stage"] in ("submitted", "accepted"):
        assessment_submit(assessment=assessment, user=procurement)
    if plan["stage"] == "accepted":
        assessment_review(
            assessment=assessment,
            user=reviewer,
            accept=True,
            comment="Red flags noted: patch SLA and log retention are in the renewal negotiation.",
        )
        _date_back(assessment, timedelta(days=plan["age_days"]))


def _date_back(assessment: Assessment, age: timedelta) -> None:
    assessment.refresh_from_db()
    shift = {
        name: getattr(assessment, name) - age
        for name in ("responded_on", "submitted_at", "reviewed_at", "expires_at")
        if getattr(assessment, name)
    }
    Assessment.objects.filter(pk=assessment.pk).update(**shift)
