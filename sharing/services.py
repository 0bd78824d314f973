"""Writes for sharing requests: ask, approve, deny, revoke (DESIGN §3, §10).

Four eyes: whoever asked never decides, enforced here (and by a database constraint), so the
API and the pages cannot forget it. Every decision is an audit event.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from audit.services import audit_record, model_to_audit_dict
from gpuposture.base.rescore import rescore_request
from gpuposture.base.roles import (
    DECIDE_SHARING,
    REQUEST_SHARING_FOR_ANY_TENANT,
    REVOKE_SHARING,
    may,
)
from tenants.models import SharingRequest, Tenant
from tenants.policy import request_scope

AUDIT_FIELDS = (
    "tenant",
    "cluster",
    "node_pool",
    "mode",
    "justification",
    "status",
    "requested_by",
    "decided_by",
    "decided_at",
    "decision_reason",
    "expires_at",
    "revoked_by",
    "revoked_at",
    "revoke_reason",
)


class SharingRequestError(ValueError):
    """The request or decision is refused; the message says why in words a person can act on."""


class FourEyesError(SharingRequestError):
    """The requester tried to decide their own request."""


class NotAllowed(SharingRequestError):
    """The user's role or tenant scope does not allow this."""


def _snapshot(request: SharingRequest) -> dict:
    # The scope as judged at the time: the tenant's class may change later, and the audit
    # event keeps what the decider was shown.
    return {**model_to_audit_dict(request, fields=AUDIT_FIELDS), "scope": request.scope()}


def requestable_tenants(user) -> QuerySet[Tenant]:
    """The tenants `user` may ask a sharing mode for, the one rule for the form's choices and
    for the write: every tenant for platform engineers, their own (those they view) for a
    tenant's owners. Not the tenants they may see: a security lead sees every tenant and asks
    for none."""
    if may(user, REQUEST_SHARING_FOR_ANY_TENANT):
        return Tenant.objects.all()
    return Tenant.objects.filter(viewers=user)


def may_request(user, tenant: Tenant) -> bool:
    return requestable_tenants(user).filter(pk=tenant.pk).exists()


def may_decide(user, request: SharingRequest) -> bool:
    return may(user, DECIDE_SHARING) and user.pk != request.requested_by_id


@transaction.atomic
def sharing_request_create(
    *, tenant: Tenant, cluster, mode: str, justification: str, user, node_pool: str = ""
) -> SharingRequest:
    if not may_request(user, tenant):
        raise NotAllowed(
            f"Only a platform engineer or an owner of tenant {tenant.slug} may ask for it."
        )
    # Any known mode: one the class forbids between tenants is for the tenant's own pods.
    decision = request_scope(tenant.trust_class, mode)
    if not decision.allowed:
        raise SharingRequestError(f"Refused: {decision.rule}.")
    if not justification.strip():
        raise SharingRequestError("Say why the tenant needs this mode (justification).")
    duplicate = SharingRequest.objects.filter(
        tenant=tenant, cluster=cluster, node_pool=node_pool, mode=mode, status="pending"
    ).first()
    if duplicate:
        raise SharingRequestError(f"Request #{duplicate.pk} for the same mode is already pending.")
    request = SharingRequest.objects.create(
        tenant=tenant,
        cluster=cluster,
        node_pool=node_pool,
        mode=mode,
        justification=justification.strip(),
        requested_by=user,
    )
    audit_record(actor=user, action="create", obj=request, after=_snapshot(request))
    return request


def _check_decider(user, request: SharingRequest) -> None:
    if user.pk == request.requested_by_id:
        raise FourEyesError(
            f"You asked for request #{request.pk}; another platform engineer must decide it."
        )
    if not may(user, DECIDE_SHARING):
        raise NotAllowed("Only a platform engineer may approve or deny sharing requests.")


def _expiry(request: SharingRequest, now: datetime, days: int | None) -> datetime | None:
    """The class's expiry is a ceiling: an approver may choose a shorter one, never longer."""
    limit = request.tenant.trust_class.approval_expiry_days
    if days is not None and limit is not None and days > limit:
        raise SharingRequestError(
            f"Trust class {request.tenant.trust_class.slug} approvals last at most {limit} days."
        )
    chosen = days if days is not None else limit
    return now + timedelta(days=chosen) if chosen else None


def _decide(
    *, request: SharingRequest, user, status: str, reason: str, expires_at=None, now=None
) -> SharingRequest:
    _check_decider(user, request)
    # A denial says why; an approval may go without a note (the request has its justification).
    if not reason.strip() and status == SharingRequest.Status.DENIED:
        raise SharingRequestError("Give a reason for the denial.")
    before = _snapshot(request)
    # Conditional UPDATE: two deciders clicking at once, or a resubmitted form, change it once.
    changed = (
        SharingRequest.objects.filter(pk=request.pk, status=SharingRequest.Status.PENDING)
        .exclude(requested_by=user)
        .update(
            status=status,
            decided_by=user,
            decided_at=now,
            decision_reason=reason.strip(),
            expires_at=expires_at,
        )
    )
    if changed != 1:
        current = SharingRequest.objects.get(pk=request.pk)
        raise SharingRequestError(f"Request #{request.pk} is already {current.status}.")
    request.refresh_from_db()
    action = "approve" if status == SharingRequest.Status.APPROVED else "deny"
    audit_record(actor=user, action=action, obj=request, before=before, after=_snapshot(request))
    rescore_request(clusters=[request.cluster_id], reason="sharing request")
    return request


@transaction.atomic
def sharing_request_approve(
    *, request: SharingRequest, user, reason: str, expires_in_days: int | None = None
) -> SharingRequest:
    _check_decider(user, request)
    # The class may have changed since the request was made: its scope is judged now (the
    # page and the API show it beside the decision); only a mode nobody knows is refused.
    decision = request.policy()
    if not decision.allowed:
        raise SharingRequestError(f"Cannot approve: {decision.rule}.")
    now = timezone.now()
    return _decide(
        request=request,
        user=user,
        status=SharingRequest.Status.APPROVED,
        reason=reason,
        expires_at=_expiry(request, now, expires_in_days),
        now=now,
    )


@transaction.atomic
def sharing_request_deny(*, request: SharingRequest, user, reason: str) -> SharingRequest:
    return _decide(
        request=request,
        user=user,
        status=SharingRequest.Status.DENIED,
        reason=reason,
        now=timezone.now(),
    )


@transaction.atomic
def sharing_request_revoke(*, request: SharingRequest, user, reason: str) -> SharingRequest:
    """Withdraw an approval; the mode's use becomes SHARE-004 at the next evaluation."""
    if not may(user, REVOKE_SHARING):
        raise NotAllowed("Only a platform engineer or a security lead may revoke an approval.")
    if not reason.strip():
        raise SharingRequestError("Give a reason for revoking the approval.")
    before = _snapshot(request)
    changed = SharingRequest.objects.filter(
        pk=request.pk, status=SharingRequest.Status.APPROVED
    ).update(
        status=SharingRequest.Status.REVOKED,
        revoked_by=user,
        revoked_at=timezone.now(),
        revoke_reason=reason.strip(),
    )
    if changed != 1:
        current = SharingRequest.objects.get(pk=request.pk)
        raise SharingRequestError(f"Request #{request.pk} is {current.status}, not approved.")
    request.refresh_from_db()
    audit_record(actor=user, action="revoke", obj=request, before=before, after=_snapshot(request))
    rescore_request(clusters=[request.cluster_id], reason="sharing request")
    return request
