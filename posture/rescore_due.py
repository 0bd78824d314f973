"""Which clusters time alone has moved: something expired since their last score.

Nobody edits anything when a risk acceptance, a sharing approval or a provider's accepted
questionnaire reaches its expiry, yet the score changes then. The periodic sweep
(posture.rescore.rescore_sweep) asks this module which clusters such an expiry touched since
they were last scored. A few small queries."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import F, Q

from gpuposture.base.finding_status import lapsed_q
from inventory.models import Cluster
from posture.models import Finding
from providers.models import Assessment
from tenants.models import SharingRequest, TrustClass


def clusters_due(*, now: datetime) -> set[int]:
    """Clusters with an expiry at or before `now` that their last score did not see."""
    # An accepted finding past its date reads open (gpuposture.base.finding_status), but its
    # row stays "accepted", and the score counts it so, until an evaluation reopens it.
    accepted = Finding.objects.filter(lapsed_q(now)).values_list("cluster_id", flat=True)
    unseen = Q(cluster__score_state__isnull=True) | Q(
        cluster__score_state__last_scored_at__isnull=True
    )
    approvals = (
        SharingRequest.objects.filter(status=SharingRequest.Status.APPROVED, expires_at__lte=now)
        .filter(unseen | Q(expires_at__gt=F("cluster__score_state__last_scored_at")))
        .values_list("cluster_id", flat=True)
    )
    return {*accepted, *approvals, *_class_ceilings(now, unseen), *_questionnaires(now)}


def _class_ceilings(now: datetime, unseen: Q) -> set[int]:
    """Approvals past their trust class's ceiling (decided_at + approval_expiry_days, which
    may come before their own expiry: the tenant moved into a stricter class)."""
    due: set[int] = set()
    periods = (
        TrustClass.objects.exclude(approval_expiry_days=None)
        .values_list("approval_expiry_days", flat=True)
        .distinct()
    )
    for days in periods:
        period = timedelta(days=days)
        due.update(
            SharingRequest.objects.filter(
                status=SharingRequest.Status.APPROVED,
                tenant__trust_class__approval_expiry_days=days,
                decided_at__lte=now - period,
            )
            .filter(unseen | Q(decided_at__gt=F("cluster__score_state__last_scored_at") - period))
            .values_list("cluster_id", flat=True)
        )
    return due


def _questionnaires(now: datetime) -> set[int]:
    # One filter() call: the assessment conditions hold for the same assessment row.
    questionnaires = Cluster.objects.filter(
        Q(score_state__isnull=True)
        | Q(score_state__last_scored_at__isnull=True)
        | Q(provider__assessments__expires_at__gt=F("score_state__last_scored_at")),
        provider__assessments__status=Assessment.Status.ACCEPTED,
        provider__assessments__expires_at__lte=now,
    ).values_list("pk", flat=True)
    return set(questionnaires)
