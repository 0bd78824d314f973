"""What a platform engineer needs beside a sharing request to decide it: the GPU nodes it would
cover, the other tenants already running there (with their trust classes, and whether each
class would share by the asked mode), the open findings there, and the tenant's earlier requests.

A read (selectors): a fixed number of queries whatever the pool's size (pinned in
tests/tenants/test_request_context.py). It lives in the sharing app, above posture, because it
reads nodes, pods and findings, which `tenants` may not import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Case, IntegerField, Q, Value, When
from django.utils import timezone

from gpuposture.base.finding_status import status_q
from gpuposture.base.labels import words
from gpuposture.base.querysets import sees_every_row
from inventory.models import Node, Pod
from inventory.pools import node_pool
from posture.models import SEVERITY_ORDER, Finding, FindingTenant
from tenants.models import SharingRequest, Tenant, TrustClass
from tenants.policy import may_share

MAX_FINDINGS = 15
MAX_EARLIER = 10


@dataclass(frozen=True)
class Neighbour:
    slug: str
    name: str
    trust_class: str
    nodes: tuple[str, ...]
    verdict: str  # the policy's words for this pair of classes and the asked mode
    allowed: bool


@dataclass
class RequestContext:
    nodes: list[dict[str, Any]] = field(default_factory=list)
    neighbours: list[Neighbour] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    findings_total: int = 0
    earlier: list[SharingRequest] = field(default_factory=list)


def sharing_request_context(item: SharingRequest, user) -> dict[str, Any]:
    """Template context for the request page; empty for users who do not read all posture (a
    tenant owner sees their own request, never the other tenants on the nodes)."""
    if not sees_every_row(user, Tenant):
        return {}
    nodes = _pool_nodes(item)
    return {
        "context": RequestContext(
            nodes=nodes,
            neighbours=_neighbours(item, [n["id"] for n in nodes]),
            **_findings(item, nodes),
            earlier=_earlier(item),
        )
    }


def _pool_nodes(item: SharingRequest) -> list[dict[str, Any]]:
    """The cluster's GPU nodes the request covers: its pool's, or every one for a cluster-wide
    request. The pool comes from labels (several providers' keys), so it is matched here."""
    rows = Node.objects.filter(cluster_id=item.cluster_id, is_gpu_node=True).values(
        "id", "name", "labels", "gpu_model", "gpu_count", "sharing_strategy"
    )
    nodes = []
    for row in rows:
        pool = node_pool(row.pop("labels") or {})
        if not item.node_pool or pool == item.node_pool:
            nodes.append({**row, "pool": pool})
    return nodes


def _neighbours(item: SharingRequest, node_ids: list[int]) -> list[Neighbour]:
    rows = (
        Pod.objects.filter(node_id__in=node_ids, tenant__isnull=False)
        .exclude(tenant_id=item.tenant_id)
        .values_list(
            "tenant_id", "tenant__slug", "tenant__name", "tenant__trust_class_id", "node__name"
        )
        .order_by()  # no Meta ordering: its columns would join the DISTINCT
        .distinct()
    )
    found: dict[int, dict[str, Any]] = {}
    for tenant_id, slug, name, class_id, node_name in rows:
        entry = found.setdefault(
            tenant_id, {"slug": slug, "name": name, "class": class_id, "nodes": set()}
        )
        entry["nodes"].add(node_name)
    class_ids = {entry["class"] for entry in found.values()}
    classes = {c.pk: c for c in TrustClass.objects.filter(pk__in=class_ids)}
    own = item.tenant.trust_class
    neighbours = []
    for entry in found.values():
        theirs = classes[entry["class"]]
        # The verdict is read on the page: modes and classes in words.
        decision = may_share(own, theirs, item.mode, say=words)
        neighbours.append(
            Neighbour(
                entry["slug"],
                entry["name"],
                theirs.slug,
                tuple(sorted(entry["nodes"])),
                decision.rule,
                decision.allowed,
            )
        )
    # The neighbours whose class refuses the mode first: they are what the decision turns on.
    return sorted(neighbours, key=lambda n: (n.allowed, n.slug))


def _findings(item: SharingRequest, nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """Open findings on the covered nodes or pool, or affecting the asking tenant there."""
    names = [n["name"] for n in nodes]
    pools = {n["pool"] for n in nodes if n["pool"]}
    there = (
        Q(subject_kind="Node", subject_name__in=names)
        | Q(subject_kind="NodePool", subject_name__in=pools)
        | Q(pk__in=FindingTenant.objects.filter(tenant_id=item.tenant_id).values("finding_id"))
    )
    is_open = status_q(Finding.Status.OPEN, timezone.now())  # a lapsed acceptance: open
    rows = Finding.objects.filter(there, is_open, cluster_id=item.cluster_id)
    rank = Case(
        *(When(severity=s, then=Value(i)) for s, i in SEVERITY_ORDER.items()),
        output_field=IntegerField(),
    )
    shown = list(rows.order_by(rank, "check_id", "subject_name")[:MAX_FINDINGS])
    total = len(shown) if len(shown) < MAX_FINDINGS else rows.count()
    return {"findings": shown, "findings_total": total}


def _earlier(item: SharingRequest) -> list[SharingRequest]:
    return list(
        SharingRequest.objects.filter(tenant_id=item.tenant_id)
        .exclude(pk=item.pk)
        .select_related("cluster", "tenant__trust_class", "requested_by", "decided_by")
        .order_by("-requested_at", "-id")[:MAX_EARLIER]
    )
