"""The demo's triage: one risk accepted by the security lead (reason, expiry, audited) and the
worst co-tenancy given an owner and a ticket, so the findings list and a finding's page show
accepted findings, owners and tickets. Made through the services a person uses; only once
(a re-run leaves the lead's later changes alone)."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.utils import timezone

from posture.models import Finding
from posture.services import finding_accept
from posture.triage import finding_triage_update

LEAD = "security-lead"
ACCEPT = ("STACK-006", "CDI injection comes with the GPU operator upgrade planned next month.")
OWN = ("SHARE-001", "platform-engineer", "https://tracker.example.internal/GPU-142")


def load_demo_triage() -> int:
    """Accept one risk and triage one finding; the number of findings changed (0 on a re-run)."""
    triaged = Finding.objects.exclude(owner=None).exists()
    if triaged or Finding.objects.filter(status=Finding.Status.ACCEPTED).exists():
        return 0
    users = get_user_model().objects.in_bulk([LEAD, OWN[1]], field_name="username")
    live = Finding.objects.filter(status=Finding.Status.OPEN).order_by("id")
    changed = 0
    accepted = live.filter(check_id=ACCEPT[0]).first()
    if accepted:
        until = timezone.now() + timedelta(days=45)
        finding_accept(finding=accepted, user=users[LEAD], reason=ACCEPT[1], until=until)
        changed += 1
    owned = live.filter(check_id=OWN[0], severity="critical").first()
    if owned:
        finding_triage_update(
            finding=owned, user=users[LEAD], ticket_url=OWN[2], owner=users[OWN[1]]
        )
        changed += 1
    return changed
