"""A security lead's decisions on bulletins: confirm or reject a held revision that weakens a
fix, delete a bulletin. Each is an audit event; a confirmation and a deletion are also import
records (what changed, then the findings the re-score resolved)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from audit.services import actor_name, audit_record
from gpuposture.base.roles import DECIDE_BULLETINS, may
from inventory.bulletins.csaf.revisions import revision_changes
from inventory.bulletins.imports import bulletins_import_recorded, rescore_after_commit
from inventory.bulletins.patch_refresh import nodes_patch_refresh
from inventory.bulletins.revisions import (
    audit_state,
    bulletin_state,
    change_entry,
    revisions_supersede,
)
from inventory.models import Bulletin, BulletinImport, BulletinRevision

MAX_NOTE = 2000
LEAD_ONLY = "Only a security lead may {what}."


class RevisionDecisionError(ValueError):
    """A decision that cannot be taken; the message says why."""


@transaction.atomic
def bulletin_revision_confirm(
    *, revision: BulletinRevision, user: AbstractBaseUser, trigger: str, note: str = ""
) -> BulletinImport:
    """Apply a held revision: it replaces the bulletin (recorded as an import of action
    `confirm`), and the clusters are re-scored."""
    _require_lead(user, "confirm a revision that weakens a bulletin")
    note = _note(note, required=False)
    _claim(revision, BulletinRevision.Status.CONFIRMED, user, note)
    stored = Bulletin.objects.filter(tracking_id=revision.tracking_id).first()
    if stored is None or stored.version != revision.base_version:
        # Held revisions are superseded whenever the bulletin moves: a guard, not a path.
        raise RevisionDecisionError("the bulletin changed since this revision was held")
    record, result = bulletins_import_recorded(
        trigger=trigger,
        actor=user,
        documents=[(revision.source or f"held revision {revision.pk}", revision.document)],
        action=BulletinImport.Action.CONFIRM,
        confirm_weakening=True,
    )
    if not result.replaced:
        reason = result.refused[0][1] if result.refused else "it is no longer newer"
        raise RevisionDecisionError(f"the revision could not be applied: {reason}")
    _audit_decision(revision, user, note, record)
    return record


@transaction.atomic
def bulletin_revision_reject(
    *, revision: BulletinRevision, user: AbstractBaseUser, note: str
) -> BulletinRevision:
    """Keep the stored revision; the held one is never applied (a feed offering it again
    changes nothing)."""
    _require_lead(user, "reject a held revision")
    note = _note(note, required=True)
    _claim(revision, BulletinRevision.Status.REJECTED, user, note)
    _audit_decision(revision, user, note, None)
    return revision


@transaction.atomic
def bulletin_delete(*, bulletin: Bulletin, user: AbstractBaseUser, trigger: str) -> BulletinImport:
    """Delete a bulletin and its fixes (recorded as an import of action `delete`: every product
    and CVE dropped); node patch status is refreshed and the clusters re-scored."""
    _require_lead(user, "delete a bulletin")
    before = bulletin_state(bulletin)
    changes = revision_changes(before, None)
    now = timezone.now()
    record = BulletinImport.objects.create(
        action=BulletinImport.Action.DELETE,
        trigger=trigger[:20],
        requested_by=actor_name(user),
        sources=[bulletin.tracking_id],
        status=BulletinImport.Status.SUCCEEDED,
        counts={"deleted": 1},
        bulletins=[bulletin.tracking_id],
        changes=[change_entry(bulletin.tracking_id, "deleted", before, None, changes)],
        finished_at=now,
    )
    state = audit_state(bulletin.tracking_id, bulletin.title, before) | {"import": record.pk}
    audit_record(actor=user, action="delete", obj=bulletin, before=state)
    revisions_supersede(tracking_id=bulletin.tracking_id)
    bulletin.delete()
    nodes_patch_refresh()
    rescore_after_commit()
    return record


def _require_lead(user: AbstractBaseUser, what: str) -> None:
    if not may(user, DECIDE_BULLETINS):
        raise PermissionDenied(LEAD_ONLY.format(what=what))


def _note(note: str, *, required: bool) -> str:
    note = (note or "").strip()
    if required and len(note) < 10:
        raise RevisionDecisionError("give a reason of at least 10 characters")
    if len(note) > MAX_NOTE:
        raise RevisionDecisionError(f"keep the note under {MAX_NOTE} characters")
    return note


def _claim(revision: BulletinRevision, status: str, user: AbstractBaseUser, note: str) -> None:
    """Decide once: a conditional UPDATE that must change this one row (two leads deciding at
    the same time, or a form sent twice, decide nothing the second time)."""
    claimed = BulletinRevision.objects.filter(
        pk=revision.pk, status=BulletinRevision.Status.PENDING
    ).update(
        status=status, decided_by=actor_name(user), decided_at=timezone.now(), decision_note=note
    )
    if claimed != 1:
        revision.refresh_from_db()
        raise RevisionDecisionError(
            f"this revision is {revision.get_status_display()}: already decided"
        )
    revision.refresh_from_db()


def _audit_decision(
    revision: BulletinRevision, user: AbstractBaseUser, note: str, record: BulletinImport | None
) -> None:
    after = {
        "status": revision.status,
        "tracking_id": revision.tracking_id,
        "version": revision.version,
        "weakening": revision.changes.get("weakening", []),
        "note": note,
        "import": record.pk if record else None,
    }
    action = "confirm" if revision.status == BulletinRevision.Status.CONFIRMED else "reject"
    audit_record(actor=user, action=action, obj=revision, before={"status": "pending"}, after=after)
