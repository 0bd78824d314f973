"""Reads for providers: standing per provider, what a user may see, comparisons."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from providers.models import Assessment, Provider


def providers_for(user) -> QuerySet[Provider]:
    return Provider.objects.visible_to(user).prefetch_related("assessments", "clusters")


def provider_standing(provider: Provider, now: datetime) -> dict[str, Any]:
    """The provider's questionnaire standing from its (prefetched) assessments."""
    assessments = sorted(provider.assessments.all(), key=lambda a: (a.created_at, a.pk))
    accepted = [
        a
        for a in assessments
        if a.status == Assessment.Status.ACCEPTED and a.expires_at and a.expires_at > now
    ]
    if accepted:
        current = max(accepted, key=lambda a: (a.reviewed_at or a.created_at, a.pk))
        reminder = current.expires_at - timedelta(days=settings.GPUPOSTURE_ASSESSMENT_REMINDER_DAYS)
        return {
            "status": "accepted",
            "assessment": current.pk,
            "expires_at": current.expires_at,
            "renew_soon": now >= reminder,
            "score": current.score,
            "red_flags": len(current.red_flags),
        }
    latest = assessments[-1] if assessments else None
    if latest is None:
        status = "none"
    elif latest.status == Assessment.Status.ACCEPTED:
        status = "expired"  # accepted, but not among the unexpired ones
    else:
        status = latest.status
    return {
        "status": status,
        "assessment": latest.pk if latest else None,
        "expires_at": None,
        "renew_soon": False,
        "score": latest.score if latest else None,
        "red_flags": len(latest.red_flags) if latest else 0,
    }
