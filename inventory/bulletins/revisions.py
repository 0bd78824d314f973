"""A bulletin's revisions side by side: its stored state and a new document's, the audit state
of each, and holding a revision that weakens a fix until a security lead decides on it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from audit.services import Actor, actor_name, audit_record
from inventory.bulletins.csaf.document import Advisory
from inventory.bulletins.csaf.fixes import Fix
from inventory.bulletins.csaf.revisions import (
    FixFacts,
    RevisionChanges,
    RevisionState,
    product_name,
)
from inventory.bulletins.csaf.revisions import revision_state as _state
from inventory.bulletins.models import FIX_IDENTITY
from inventory.models import Bulletin, BulletinFix, BulletinImport, BulletinRevision


@dataclass(frozen=True)
class ImportOptions:
    """How a batch of documents is imported: who asked (the actor of its audit events), the
    import record it belongs to, and whether a revision that weakens a fix is applied at once
    (a security lead confirming it, the CLI's --confirm-weakening) instead of held."""

    actor: Actor = None
    record: BulletinImport | None = None
    confirm_weakening: bool = False


def bulletin_state(bulletin: Bulletin) -> RevisionState:
    rows = BulletinFix.objects.filter(bulletin=bulletin).values_list(*FIX_IDENTITY, "cves")
    facts = [
        FixFacts(product_name(k, p, b, li, h), op, av, fv or None, tuple(cves))
        for k, p, b, li, h, op, av, fv, cves in rows
    ]
    return _state(bulletin.version, bulletin.cves, facts)


def advisory_state(advisory: Advisory, found: list[Fix]) -> RevisionState:
    facts = [
        FixFacts(
            product_name(
                f.component.kind,
                f.component.platform,
                f.component.branch,
                f.component.line,
                f.component.host,
            ),
            f.affected.op,
            f.affected.version,
            f.fixed_version,
            f.cves,
        )
        for f in found
    ]
    cves = [v.cve for v in advisory.vulnerabilities if v.cve]
    return _state(advisory.version, cves, facts)


def audit_state(tracking_id: str, title: str, state: RevisionState) -> dict[str, Any]:
    """A bulletin revision as the audit log keeps it: its CVEs and each product's fixes."""
    return {"tracking_id": tracking_id, "title": title, **state.as_dict()}


def change_entry(
    tracking_id: str,
    outcome: str,
    before: RevisionState | None,
    after: RevisionState | None,
    changes: RevisionChanges,
) -> dict[str, Any]:
    """One bulletin's line in an import record's `changes`."""
    return {
        "tracking_id": tracking_id,
        "outcome": outcome,
        "version_before": before.version if before else None,
        "version_after": after.version if after else None,
        **changes.as_dict(),
    }


def revision_hold(
    *,
    bulletin: Bulletin,
    advisory: Advisory,
    data: object,
    source: str,
    after: RevisionState,
    changes: RevisionChanges,
    options: ImportOptions,
) -> BulletinRevision:
    """Hold a weakening revision (once: the same revision offered again is the same hold, with
    no new event); a newer hold supersedes an older pending one."""
    pending = BulletinRevision.objects.filter(
        tracking_id=bulletin.tracking_id, status=BulletinRevision.Status.PENDING
    )
    same = pending.filter(version=advisory.version).first()
    if same is not None:
        return same
    revisions_supersede(tracking_id=bulletin.tracking_id)
    record = options.record
    revision = BulletinRevision.objects.create(
        tracking_id=bulletin.tracking_id,
        version=advisory.version[:40],
        base_version=bulletin.version,
        title=(advisory.title or "")[:500],
        document=data,
        source=source[:500],
        changes=changes.as_dict(),
        held_by=record,
        requested_by=record.requested_by if record else actor_name(options.actor),
    )
    audit_record(
        actor=options.actor,
        action="hold",
        obj=revision,
        before=audit_state(bulletin.tracking_id, bulletin.title, bulletin_state(bulletin)),
        after={
            **audit_state(bulletin.tracking_id, revision.title, after),
            "weakening": changes.weakening,
            "import": record.pk if record else None,
        },
    )
    return revision


def revisions_supersede(*, tracking_id: str) -> int:
    """Pending holds of this bulletin no longer compare with what is stored: superseded."""
    return BulletinRevision.objects.filter(
        tracking_id=tracking_id, status=BulletinRevision.Status.PENDING
    ).update(status=BulletinRevision.Status.SUPERSEDED)


def was_rejected(tracking_id: str, version: str) -> bool:
    """A security lead rejected this very revision: a feed offering it again changes nothing."""
    return BulletinRevision.objects.filter(
        tracking_id=tracking_id, version=version, status=BulletinRevision.Status.REJECTED
    ).exists()
