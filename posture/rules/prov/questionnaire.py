"""PROV-001, PROV-002: the provider hosting a cluster, judged by its reviewed questionnaire.

Both reach every tenant present in the cluster (a namespace or a running pod there): a tenant
on a provider's GPUs inherits how that provider partitions, wipes and patches them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from posture.inputs import PostureInputs, ProviderFacts
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import provider_draft

MAPPINGS = ("SP800-53:SA-9", "SP800-53:SR-6")


def _standing(provider: ProviderFacts) -> dict[str, Any]:
    return {
        "provider": provider.slug,
        "provider_name": provider.name,
        "accepted_assessment": provider.assessment_id,
        "latest_assessment": provider.latest_id,
        "latest_status": provider.latest_status or "none started",
        "last_acceptance_expired_at": provider.expired_at or None,
    }


@check(
    id="PROV-001",
    title="Cluster hosted by a provider with no accepted, unexpired questionnaire",
    severity="high",
    scope="provider",
    rationale=(
        "On rented GPUs the provider decides how GPUs are partitioned between its customers, "
        "whether memory is wiped and GPUs reset between them, how fast the driver and firmware "
        "are patched after a bulletin, and which logs you get. Without its answers in writing, "
        "reviewed by security and current, none of that is known: the tenants on the cluster "
        "rely on controls nobody has checked."
    ),
    remediation=(
        "Start an assessment for the provider (Providers page, or `POST /api/v1/assessments/`), "
        "have procurement collect the provider's written answers and evidence, submit it, and "
        "have a security lead review and accept it. Accepted assessments expire after a year: "
        "renew before the date in the evidence."
    ),
    mappings=MAPPINGS,
)
def provider_without_assessment(inputs: PostureInputs) -> Iterator[FindingDraft]:
    provider = inputs.provider
    if provider is None or provider.assessment_id is not None:
        return
    evidence = {**_standing(provider), "cluster": inputs.cluster}
    title = f"{provider.name} hosts {inputs.cluster} with no accepted questionnaire"
    yield provider_draft("PROV-001", inputs, provider.slug, evidence=evidence, title=title)


@check(
    id="PROV-002",
    title="The provider's accepted questionnaire has a red-flag answer",
    severity="high",
    scope="provider",
    rationale=(
        "Some answers mean the isolation between the provider's customers is weaker than a "
        "tenant's trust class assumes: time-slicing or MPS between customers, no memory wipe "
        "or GPU reset between them, a patch SLA over 30 days after a vendor bulletin, no logs "
        "for customers, static keys only. Accepting the questionnaire records the answers; it "
        "does not make them safe."
    ),
    remediation=(
        "Ask the provider for a contractual fix (e.g. dedicated or MIG-partitioned GPUs, a "
        "reset between customers with a record, a shorter patch SLA), or move sensitive and "
        "external tenants off this provider. Where the risk is knowingly kept, accept the "
        "finding with a reason and an expiry."
    ),
    mappings=("SP800-53:SA-9",),
)
def provider_red_flags(inputs: PostureInputs) -> Iterator[FindingDraft]:
    provider = inputs.provider
    if provider is None or provider.assessment_id is None:
        return
    for flag in provider.red_flags:
        evidence = {
            **_standing(provider),
            "expires_at": provider.expires_at,
            "question": flag.get("question"),
            "category": flag.get("category"),
            "question_text": flag.get("text"),
            "answer": flag.get("answer"),
            "why_it_is_a_red_flag": flag.get("reason"),
        }
        yield provider_draft(
            "PROV-002",
            inputs,
            provider.slug,
            evidence=evidence,
            key=str(flag.get("question", "")),
            title=f"{provider.name}: {flag.get('text', '')} — answered {flag.get('answer')!r}",
        )
