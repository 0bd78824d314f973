"""What the finding page shows: the finding as the reader may see it, its evidence as tables,
its history, the tenants it affects, and where to go next (the check, the node or the
workload's nodes, the audit events). Reads only; a bounded number of queries."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.db.models import Q
from django.urls import reverse

from audit.models import AuditEvent
from audit.selectors import audit_events_for
from gpuposture.base.querysets import sees_every_row
from gpuposture.base.roles import TRIAGE_FINDINGS, may, reads_audit_log
from inventory.models import Node, Pod
from inventory.presenter import hidden_scope_for, present
from posture.claims import claim_namespace, claim_note
from posture.evidence_view import evidence_tree
from posture.finding_return import RESOLVED_LAPSE
from posture.forms import acceptance_window
from posture.models import EarlierAcceptance, Finding
from posture.rules import CHECKS
from posture.selectors import finding_not_rejudged
from tenants.redaction import HiddenScope, tenant_rows

HISTORY_EVENTS = 50  # the latest audit events listed; the audit log holds them all
WORKLOAD_NODES = 10  # nodes listed for a workload's pods
OBJECT_TYPE = Finding._meta.label_lower
OUTDATED_LINE = "reopened: a change after the acceptance"  # finding_store's `outdated` event
RESOLVED_LINE = "resolved: the check no longer fires"


@dataclass(frozen=True)
class Moment:
    """One line of a finding's history."""

    at: datetime | None
    what: str
    who: str = ""
    detail: str = ""


def finding_for(user, pk: int) -> Finding | None:
    return (
        Finding.objects.visible_to(user)
        .select_related("cluster", "accepted_by", "owner")
        .filter(pk=pk)
        .first()
    )


def affected_tenants(finding: Finding, scope: HiddenScope | None) -> list[dict[str, str]]:
    """The tenants the finding affects, by name, as `scope` lets the viewer see them."""
    return tenant_rows(scope, finding.tenants.order_by("name").values_list("slug", "name"))


def history(finding: Finding, events: list[Any]) -> list[Moment]:
    """First seen, the acceptances, withdrawals and expiries the audit log records, triage,
    each time it resolved and came back (`recur`), and its resolution, oldest first.
    `events`: the finding's audit events the reader may see."""
    moments = [Moment(finding.first_seen, "first seen")]
    for event in events:
        after = event.after if isinstance(event.after, dict) else {}
        if event.action == "accept":
            until = (after.get("accepted_until") or "")[:10]
            moments.append(
                Moment(
                    event.time,
                    f"risk accepted until {until}",
                    event.actor_name,
                    after.get("accepted_reason") or "",
                )
            )
        elif event.action == "reopen":
            moments.append(Moment(event.time, "acceptance withdrawn: open again", event.actor_name))
        elif event.action == "expire":
            moments.append(Moment(event.time, "acceptance expired: open again", event.actor_name))
        elif event.action == "outdated":
            change = after.get("change") or {}
            detail = f"{change.get('change') or ''} (detected {change.get('detected_at') or '?'})"
            # A drift change after it, or more bulletin exposure than it saw (its `reopened`).
            line = f"reopened: {after['reopened']}" if after.get("reopened") else OUTDATED_LINE
            moments.append(Moment(event.time, line, event.actor_name, detail))
        elif event.action == "recur":
            moments += _recurred(event, event.before if isinstance(event.before, dict) else {})
        elif event.action == "lapse" and after.get("lapsed") == RESOLVED_LAPSE:
            moments.append(Moment(event.time, _lapsed_on_return(after), event.actor_name))
        elif event.action in ("carry", "lapse"):
            moments.append(Moment(event.time, _widened(event.action, after), event.actor_name))
        elif event.action == "triage":
            owner = after.get("owner") or "nobody"
            ticket = after.get("ticket_url") or "no ticket"
            moments.append(Moment(event.time, f"owner {owner}, {ticket}", event.actor_name))
        else:
            moments.append(Moment(event.time, event.action, event.actor_name))
    if not events and finding.accepted_until:
        # No audit log for this reader: the finding's own fields say who accepted it.
        who = finding.accepted_by.get_username() if finding.accepted_by else "?"
        moments.append(
            Moment(
                None,
                f"risk accepted until {finding.accepted_until:%Y-%m-%d}",
                who,
                finding.accepted_reason,
            )
        )
    if finding.acceptance_expired:
        # Open again since then; the evaluation that reopens the row records it ("expire").
        moments.append(Moment(finding.accepted_until, "acceptance expired: open again"))
    if finding.resolved_at:
        moments.append(Moment(finding.resolved_at, RESOLVED_LINE))
    moments.sort(key=lambda m: (m.at is None, m.at or finding.first_seen))
    return moments


def _recurred(event: Any, before: dict[str, Any]) -> list[Moment]:
    """A `recur` event (posture.finding_return): when the finding had resolved, which the
    event keeps since the row no longer does, and when its cause came back."""
    resolved = _moment(before.get("resolved_at"))
    back = Moment(event.time, "back: the check fires again on the same subject", event.actor_name)
    if resolved is None:
        return [back]
    return [Moment(resolved, RESOLVED_LINE, event.actor_name), back]


def _lapsed_on_return(after: dict[str, Any]) -> str:
    """The `lapse` of the acceptance a finding held when it resolved, recorded when it came
    back (posture.finding_return)."""
    until = (after.get("lapsed_until") or "")[:10] or "no expiry"
    resolved = (after.get("resolved_at") or "?")[:10]
    back = (after.get("back_at") or "?")[:10]
    return (
        f"acceptance until {until} no longer applies: resolved on {resolved}, back on {back}, "
        "judged afresh"
    )


def _moment(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _widened(action: str, after: dict[str, Any]) -> str:
    """A history line for the acceptances of the narrower findings a new finding spans."""
    covers, of = after.get("covers", "?"), after.get("of", "?")
    if action == "carry":
        until = (after.get("accepted_until") or "")[:10]
        return f"risk accepted until {until}: carried from the {covers} narrower findings it spans"
    return f"opened: earlier acceptances covered {covers} of the {of} subjects it spans"


def earlier_acceptances(
    finding: Finding, scope: HiddenScope | None
) -> tuple[list[EarlierAcceptance], list[EarlierAcceptance]]:
    """(the acceptances made on the narrower findings this one spans, earliest expiry first;
    this finding's own acceptance where it went when its subject widened), as `scope` lets
    the reader see them (posture.acceptance_carry). One query for both."""
    rows = EarlierAcceptance.objects.filter(Q(finding=finding) | Q(source=finding))
    earlier, went = [], []
    for row in rows.select_related("accepted_by"):
        (earlier if row.finding_id == finding.pk else went).append(present(scope, row))
    return earlier, went


def reaccept_initial(finding: Finding, earlier: list[EarlierAcceptance]) -> dict[str, Any]:
    """The accept form of an open finding whose earlier acceptances no longer apply, filled
    from them (their reasons, the first of their expiries while it is ahead): accepting again
    is one click. Nothing when nothing lapsed."""
    lapsed = [row for row in earlier if not row.carried]
    if finding.effective_status != Finding.Status.OPEN or not lapsed:
        return {}
    reasons = "; ".join(f"{row.subject}: {row.reason}" for row in lapsed)
    initial: dict[str, Any] = {"reason": f"Accepted before on {reasons}"[:2000]}
    first, last = acceptance_window()
    days = sorted(row.until.date() for row in lapsed if row.until)
    if days and first <= days[0] <= last:
        initial["until"] = days[0]
    return initial


def finding_events(user, finding: Finding) -> list[Any]:
    """The finding's latest audit events, oldest first, if the user reads the audit log."""
    if not sees_every_row(user, AuditEvent):
        return []
    events = audit_events_for(user).filter(object_type=OBJECT_TYPE, object_id=str(finding.pk))
    return list(events.order_by("-id")[:HISTORY_EVENTS])[::-1]


def subject_links(user, finding: Finding) -> list[tuple[str, str]]:
    """(label, url) of what the finding is about: its node, or the nodes its workload's pods
    run on, and its cluster. Read with the presented subject, so nothing hidden is looked up."""
    cluster = finding.cluster.name
    links = []
    if finding.subject_kind == "Node":
        node = Node.objects.visible_to(user).filter(
            cluster=finding.cluster, name=finding.subject_name
        )
        if node.exists():
            links.append((f"node {finding.subject_name}", _node_url(cluster, finding.subject_name)))
    elif finding.subject_namespace and finding.subject_name:
        nodes = (
            Pod.objects.visible_to(user)
            .filter(
                cluster=finding.cluster,
                namespace=finding.subject_namespace,
                name__startswith=finding.subject_name,
                node__isnull=False,
            )
            .order_by("node__name")
            .values_list("node__name", flat=True)
            .distinct()[:WORKLOAD_NODES]
        )
        links += [(f"node {name} (runs its pods)", _node_url(cluster, name)) for name in nodes]
    links.append((f"cluster {cluster}", reverse("cluster-detail", args=[cluster])))
    return links


def _node_url(cluster: str, name: str) -> str:
    return reverse("node-detail", args=[cluster, name])


def finding_detail_context(user, finding: Finding) -> dict[str, Any]:
    """Everything the finding page shows, presented for `user`."""
    scope = hidden_scope_for(user)
    tenants = affected_tenants(finding, scope)
    # Read before the presenter: a namespace nobody claims is claimed first (posture.claims).
    claim = claim_namespace(
        [t["slug"] for t in tenants],
        finding.subject_kind,
        finding.subject_namespace,
        finding.subject_name,
        finding.evidence,
    )
    present(scope, finding)
    events = finding_events(user, finding)
    # The subjects it spans are of the finding's cluster: named as they are there.
    earlier, went = earlier_acceptances(finding, scope and scope.in_cluster(finding.cluster_id))
    # Its own acceptances that lapsed when it resolved and came back (posture.finding_return)
    # are told apart from those of the narrower findings it spans.
    own = [row for row in earlier if row.source_id == finding.pk]
    audit_query = urlencode({"object_type": OBJECT_TYPE, "object_id": finding.pk})
    return {
        "finding": finding,
        "check": CHECKS.get(finding.check_id),
        "claim_note": claim_note(claim) if claim else "",
        "not_rejudged": finding_not_rejudged(finding),
        "evidence": evidence_tree(finding.evidence),
        "history": history(finding, events),
        "earlier_acceptances": [row for row in earlier if row.source_id != finding.pk],
        "acceptance_lapsed": own,
        "acceptance_went": went,
        "reaccept_initial": reaccept_initial(finding, earlier),
        "tenants": tenants,
        "subject_links": subject_links(user, finding),
        "audit_url": f"{reverse('audit-log')}?{audit_query}" if reads_audit_log(user) else "",
        "can_triage": may(user, TRIAGE_FINDINGS),
    }
