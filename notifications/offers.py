"""Which events a role may subscribe to: only what the role may see (DESIGN §10).

Findings (new critical/high, patch-SLA breaches, acceptances about to expire) reach every
role that reads posture and tenant viewers for their own tenants (Finding.visible_to narrows
them). Sync problems and pending approvals are the platform's business: posture readers only
(a sync error can name any tenant's object). Provider assessments: posture readers and
procurement, as AssessmentQuerySet.visible_to."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from gpuposture.base.roles import PROCUREMENT, TENANT_VIEWER, has_role, reads_all_posture
from notifications.models import EventKind

FINDING_KINDS = (EventKind.FINDING_NEW, EventKind.PATCH_SLA, EventKind.ACCEPTANCE_EXPIRING)
PLATFORM_KINDS = (EventKind.SYNC_PROBLEM, EventKind.APPROVAL_PENDING)
# Kinds whose subscription carries "N days".
DAY_KINDS = frozenset(
    {EventKind.APPROVAL_PENDING, EventKind.ACCEPTANCE_EXPIRING, EventKind.ASSESSMENT_RENEWAL}
)


def offered_kinds(user: AbstractBaseUser | AnonymousUser) -> list[str]:
    """The event kinds `user` may subscribe to, in catalogue order."""
    offered: set[str] = set()
    if reads_all_posture(user):
        offered |= {*FINDING_KINDS, *PLATFORM_KINDS, EventKind.ASSESSMENT_RENEWAL}
    elif has_role(user, TENANT_VIEWER):
        offered |= set(FINDING_KINDS)
    if has_role(user, PROCUREMENT):
        offered.add(EventKind.ASSESSMENT_RENEWAL)
    return [kind for kind in EventKind.values if kind in offered]
