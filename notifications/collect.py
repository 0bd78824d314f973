"""The events a user's subscriptions find now, each already narrowed to what the user may see.

Every query starts from the model's `visible_to(user)` (the one access rule); a tenant
viewer's copy of a title or subject has every other tenant's names replaced
(tenants.redaction through inventory.presenter.hidden_scope_for), and a finding's tenant list
keeps only the tenants the user may see. A few queries per subscription, whatever the world's
size; at most MAX_EVENTS per subscription (a digest says how many more there were)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.db.models import QuerySet

from gpuposture.base.enums import Severity
from inventory.models import SyncRun
from inventory.presenter import hidden_scope_for
from notifications.models import EventKind, Subscription
from posture.currency import clusters_currency
from posture.models import Finding
from providers.models import Assessment
from tenants.models import SharingRequest
from tenants.redaction import HiddenScope, hide_text, visible_tenants

MAX_EVENTS = 100
# A subscription's minimum severity -> the severities at or above it.
SEVERITIES = {s: Severity.values()[: Severity.rank(s) + 1] for s in Subscription.MinSeverity.values}


@dataclass(frozen=True)
class Event:
    kind: str
    key: str  # stable: the same event is never sent twice to one user (SentEvent)
    title: str
    at: str  # ISO time the event happened (or will: an expiry)
    severity: str = ""
    cluster: str = ""
    tenants: tuple[str, ...] = ()
    path: str = ""  # the page that shows it

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "title": self.title,
            "at": self.at,
            "severity": self.severity,
            "cluster": self.cluster,
            "tenants": list(self.tenants),
            "path": self.path,
        }


@dataclass
class Viewer:
    """Who the events are for: the user and what must be hidden from them."""

    user: Any
    scope: HiddenScope | None = field(default=None)

    @classmethod
    def of(cls, user: Any) -> Viewer:
        return cls(user, hidden_scope_for(user))

    def text(self, value: str, cluster: object = None) -> str:
        """`value` as the user may read it; of one cluster (its id or name), by what the
        names are there (tenants.redaction.HiddenScope.in_cluster)."""
        scope = self.scope.in_cluster(cluster) if self.scope and cluster is not None else self.scope
        return hide_text(scope, value)

    def tenants(self, slugs: list[str]) -> tuple[str, ...]:
        return tuple(visible_tenants(self.scope, slugs))


def events_collect(sub: Subscription, viewer: Viewer, *, now: datetime) -> list[Event]:
    collector = _COLLECTORS[sub.kind]
    return collector(sub, viewer, now)


def _findings(sub: Subscription, viewer: Viewer) -> QuerySet[Finding]:
    findings = Finding.objects.visible_to(viewer.user)
    if sub.tenant_id is not None:
        findings = findings.affecting(tenant_id=sub.tenant_id)
    if sub.cluster_id is not None:
        findings = findings.filter(cluster_id=sub.cluster_id)
    return findings.select_related("cluster").prefetch_related("tenants")


def _finding_event(kind: str, key: str, finding: Finding, viewer: Viewer, at: datetime) -> Event:
    subject = "/".join(p for p in (finding.subject_namespace, finding.subject_name) if p)
    query = urlencode({"check": finding.check_id, "cluster": finding.cluster.name})
    return Event(
        kind=kind,
        key=key,
        # The subject, unless the title names it already ("GPU node pe-a100-01 ...").
        title=viewer.text(
            f"{finding.check_id} {finding.title}"
            + (f" ({subject})" if subject and finding.subject_name not in finding.title else ""),
            finding.cluster_id,
        ),
        at=at.isoformat(),
        severity=finding.severity,
        cluster=finding.cluster.name,
        tenants=viewer.tenants([t.slug for t in finding.tenants.all()]),
        path=f"/findings/?{query}",
    )


def _new_findings(sub: Subscription, viewer: Viewer, now: datetime) -> list[Event]:
    found = _findings(sub, viewer).filter(
        status=Finding.Status.OPEN,
        first_seen__gte=sub.created_at,
        severity__in=SEVERITIES[sub.min_severity],
    )
    rows = found.order_by("-first_seen", "-pk")[:MAX_EVENTS]
    return [_finding_event(sub.kind, f"finding:{f.pk}", f, viewer, f.first_seen) for f in rows]


def _patch_sla(sub: Subscription, viewer: Viewer, now: datetime) -> list[Event]:
    found = _findings(sub, viewer).filter(
        status=Finding.Status.OPEN, check_id="STACK-005", first_seen__gte=sub.created_at
    )
    rows = found.order_by("-first_seen", "-pk")[:MAX_EVENTS]
    return [_finding_event(sub.kind, f"finding:{f.pk}", f, viewer, f.first_seen) for f in rows]


def _expiring_acceptances(sub: Subscription, viewer: Viewer, now: datetime) -> list[Event]:
    found = _findings(sub, viewer).filter(
        status=Finding.Status.ACCEPTED,
        accepted_until__gt=now,
        accepted_until__lte=now + timedelta(days=sub.days),
    )
    rows = found.order_by("accepted_until", "pk")[:MAX_EVENTS]
    events = []
    for f in rows:
        # Keyed by the expiry too: an acceptance renewed to a later date is news again.
        key = f"acceptance:{f.pk}:{f.accepted_until.date().isoformat()}"
        event = _finding_event(sub.kind, key, f, viewer, f.accepted_until)
        title = f"acceptance expires {f.accepted_until:%Y-%m-%d}: {event.title}"
        events.append(Event(**{**event.__dict__, "title": title}))
    return events


def _sync_problems(sub: Subscription, viewer: Viewer, now: datetime) -> list[Event]:
    failed = SyncRun.objects.visible_to(viewer.user).filter(
        status=SyncRun.Status.FAILED, finished_at__gte=sub.created_at
    )
    if sub.cluster_id is not None:
        failed = failed.filter(cluster_id=sub.cluster_id)
    events = [
        Event(
            kind=sub.kind,
            key=f"sync_failed:{run.pk}",
            title=viewer.text(
                f"sync of {run.cluster.name} failed: {_first_line(run.error)}", run.cluster_id
            ),
            at=(run.finished_at or now).isoformat(),
            cluster=run.cluster.name,
            path=f"/clusters/{run.cluster.name}/",
        )
        for run in failed.select_related("cluster").order_by("-finished_at")[:MAX_EVENTS]
    ]
    reported = {e.cluster for e in events}
    currency = clusters_currency(viewer.user, cluster=sub.cluster)
    for cluster in currency.stale:
        if cluster.name in reported:
            continue  # its failed runs are reported above, run by run
        # One reminder per cluster and reason a day, not one per beat.
        digest = hashlib.sha256(cluster.freshness.reason.encode()).hexdigest()[:12]
        events.append(
            Event(
                kind=sub.kind,
                key=f"sync_stale:{cluster.name}:{digest}:{now.date().isoformat()}",
                title=viewer.text(
                    f"{cluster.name} is stale: {cluster.freshness.reason}", cluster.name
                ),
                at=now.isoformat(),
                cluster=cluster.name,
                path=f"/clusters/{cluster.name}/",
            )
        )
    return events


def _pending_approvals(sub: Subscription, viewer: Viewer, now: datetime) -> list[Event]:
    pending = SharingRequest.objects.visible_to(viewer.user).pending()
    pending = pending.filter(requested_at__lte=now - timedelta(days=sub.days))
    if sub.tenant_id is not None:
        pending = pending.filter(tenant_id=sub.tenant_id)
    rows = pending.select_related("tenant").order_by("requested_at", "pk")[:MAX_EVENTS]
    return [
        Event(
            kind=sub.kind,
            key=f"approval:{r.pk}",
            title=viewer.text(
                f"sharing request #{r.pk} of {r.tenant.slug} for {r.mode} pending since "
                f"{r.requested_at:%Y-%m-%d}"
            ),
            at=r.requested_at.isoformat(),
            tenants=viewer.tenants([r.tenant.slug]),
            path=f"/sharing-requests/{r.pk}/",
        )
        for r in rows
    ]


def _renewals(sub: Subscription, viewer: Viewer, now: datetime) -> list[Event]:
    due = Assessment.objects.visible_to(viewer.user).filter(
        status=Assessment.Status.ACCEPTED, expires_at__lte=now + timedelta(days=sub.days)
    )
    rows = due.select_related("provider").order_by("expires_at", "pk")[:MAX_EVENTS]
    return [
        Event(
            kind=sub.kind,
            key=f"renewal:{a.pk}:{a.expires_at.date().isoformat()}",
            title=(
                f"assessment of {a.provider.name} "
                f"{'expired' if a.expires_at <= now else 'expires'} {a.expires_at:%Y-%m-%d}"
            ),
            at=a.expires_at.isoformat(),
            path=f"/assessments/{a.pk}/",
        )
        for a in rows
    ]


def _first_line(text: str) -> str:
    return (text or "no reason recorded").strip().splitlines()[0][:200]


_COLLECTORS = {
    EventKind.FINDING_NEW: _new_findings,
    EventKind.PATCH_SLA: _patch_sla,
    EventKind.ACCEPTANCE_EXPIRING: _expiring_acceptances,
    EventKind.SYNC_PROBLEM: _sync_problems,
    EventKind.APPROVAL_PENDING: _pending_approvals,
    EventKind.ASSESSMENT_RENEWAL: _renewals,
}
