"""Triage writes beyond one acceptance: a finding's ticket link and owner, and accepting the
risk of many findings at once. Every change is an audit event, one per finding."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from audit.services import audit_change
from posture.models import WEB_URL, Finding
from posture.services import AcceptanceError, finding_accept

BULK_MAX = 200  # a page holds 50; more in one request is a mistake, not a workflow


class TriageError(ValueError):
    """A triage change that cannot be recorded; the message says why."""


def triage_state(finding: Finding) -> dict[str, Any]:
    """What the audit log keeps of a finding's triage."""
    return {
        "check": finding.check_id,
        "ticket_url": finding.ticket_url,
        "owner": finding.owner.get_username() if finding.owner_id else None,
    }


@transaction.atomic
def finding_triage_update(
    *, finding: Finding, user: AbstractBaseUser, ticket_url: str, owner: AbstractBaseUser | None
) -> Finding:
    """Set where the fix is tracked (an http or https address, or none) and who owns it (a
    user, or none). Audited as one `triage` event when something changed."""
    ticket_url = (ticket_url or "").strip()
    if ticket_url:
        try:
            WEB_URL(ticket_url)
        except ValidationError as exc:
            raise TriageError("the ticket link must be an http:// or https:// address") from exc
    if len(ticket_url) > 500:
        raise TriageError("the ticket link must be at most 500 characters")
    if owner is not None and not owner.is_active:
        raise TriageError(f"{owner.get_username()} is not an active user")
    before = triage_state(finding)
    finding.ticket_url, finding.owner = ticket_url, owner
    finding.save(update_fields=["ticket_url", "owner"])
    audit_change(
        actor=user, action="triage", obj=finding, before=before, after=triage_state(finding)
    )
    return finding


def owner_choices() -> Any:
    """The users a finding may be given to: active accounts, by username."""
    return get_user_model().objects.filter(is_active=True).order_by("username")


@dataclass
class BulkResult:
    accepted: list[Finding] = field(default_factory=list)
    refused: list[tuple[Finding, str]] = field(default_factory=list)


def findings_accept_bulk(
    *, findings: Iterable[Finding], user: AbstractBaseUser, reason: str, until: datetime
) -> BulkResult:
    """Accept the risk of each finding by the same rules as one (posture.services.
    finding_accept: a reason, an expiry within the limit, not resolved), each in its own
    transaction with its own audit event. A finding refused does not stop the others; the
    result says which were refused and why."""
    findings = list(findings)
    if len(findings) > BULK_MAX:  # refused before any is accepted: all or none of the ask
        raise TriageError(f"accept at most {BULK_MAX} findings at once")
    result = BulkResult()
    for finding in findings:
        try:
            result.accepted.append(
                finding_accept(finding=finding, user=user, reason=reason, until=until)
            )
        except AcceptanceError as exc:
            result.refused.append((finding, str(exc)))
    return result
