"""Store the fix-first actions (posture/actions.py) once per score, so the overview and
`/api/v1/actions/` read a ranked table instead of regrouping every open finding per request."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from django.db import connection, transaction
from django.db.models import F, OuterRef, QuerySet, Subquery, Sum, Value

from gpuposture.base.querysets import sees_every_row
from inventory.bulk import db_datetime, rows_insert
from inventory.models import Cluster, Node
from inventory.pools import fix_pool, taint_tuples
from posture.actions import NO_EXPOSURES, ActionFinding, actions_for
from posture.actions import Action as BuiltAction
from posture.models import Action, ActionTenant, Finding, FindingTenant
from tenants.models import Tenant
from tenants.selectors import pool_taint_rules

_CHUNK = 2000
# json.dumps's own text, from one encoder made once without the circular-reference check
# (two lists of plain values per action, 26,000 at a tenth of the worst world).
_JSON = json.JSONEncoder(check_circular=False).encode


def _pools() -> dict[tuple[str, str], str]:
    """(cluster name, node name) -> the pool its fixes roll out on, for the nodes of GPUs of
    any vendor ("" when none: a provider's pool label, else its trust-class pool on bare metal,
    inventory.pools): K8S-002 judges AMD and Gaudi nodes too."""
    rules = pool_taint_rules()
    rows = Node.objects.filter(is_accelerator_node=True).values_list(
        "cluster__name", "name", "labels", "taints"
    )
    return {
        (cluster, name): fix_pool(labels or {}, taint_tuples(taints or ()), rules)
        for cluster, name, labels, taints in rows
    }


class TenantWeights(NamedTuple):
    """For the open findings: finding id -> {tenant slug: class weight}, and finding id ->
    {tenant slug: its own exposure} for the links that have one (FindingTenant.exposure)."""

    weights: dict[int, dict[str, float]]
    exposures: dict[int, dict[str, int]]


def _tenant_weights() -> TenantWeights:
    """Each open finding's tenants with their class weights and own exposures (one query)."""
    links = FindingTenant.objects.filter(finding__status=Finding.Status.OPEN).values_list(
        "finding_id", "tenant__slug", "tenant__trust_class__risk_weight", "exposure"
    )
    weights: dict[int, dict[str, float]] = defaultdict(dict)
    exposures: dict[int, dict[str, int]] = defaultdict(dict)
    for finding_id, slug, weight, exposure in links.iterator(_CHUNK):
        weights[finding_id][slug] = weight
        if exposure is not None:
            exposures[finding_id][slug] = exposure
    return TenantWeights(weights, exposures)


def _subject_pools(
    pools: dict[tuple[str, str], str], cluster: str, kind: str, name: str, evidence: Any
) -> tuple[tuple[str, ...], bool]:
    """The pools a finding's subject is in (its node's, or those of a workload's pods' nodes),
    and whether a workload has a pod on a node in no pool (no one pool's taint reaches that
    pod). One walk of the pods for both."""
    if kind == "Node":
        pool = pools.get((cluster, name), "")
        return ((pool,) if pool else ()), False
    pods = evidence.get("pods") if isinstance(evidence, dict) else None
    found: set[str] = set()
    unpooled = False
    for pod in pods or ():
        if not isinstance(pod, dict):
            continue
        node = pod.get("node")
        pool = pools.get((cluster, str(node)), "")
        if pool:
            found.add(pool)
        elif node:
            unpooled = True
    return tuple(sorted(found)), unpooled


# The columns of an open finding the digest covers (its evidence by Finding.evidence_digest).
DIGESTED = (
    "id",
    "check_id",
    "severity",
    "cluster__name",
    "subject_kind",
    "subject_namespace",
    "subject_name",
    "title",
    "exposure",
    "evidence_digest",
)


def _open_rows(*, evidence: bool) -> Iterator[tuple[Any, ...]]:
    """The open findings' DIGESTED columns (and the evidence last), by id, in chunks."""
    columns = (*DIGESTED, "evidence") if evidence else DIGESTED
    rows = Finding.objects.filter(status=Finding.Status.OPEN).values_list(*columns)
    return rows.order_by("id").iterator(_CHUNK)


def open_action_findings(
    pools: dict[tuple[str, str], str] | None = None,
    weights: TenantWeights | None = None,
    digest: Any = None,
) -> Iterator[ActionFinding]:
    """Every open finding as posture.actions groups it (three queries, read in chunks).
    With `digest` (a _digest_start()), each row read is added to it as _digest adds it: a
    regrouping that is certain (a first score) reads the open findings once, not twice."""
    pools = _pools() if pools is None else pools
    weights = _tenant_weights() if weights is None else weights
    for row in _open_rows(evidence=True):
        pk, check, severity, cluster, kind, namespace, name, title, exposure, _, evidence = row
        if digest is not None:
            _digest_add(digest, row[: len(DIGESTED)], weights)
        in_pools, unpooled = _subject_pools(pools, cluster, kind, name, evidence)
        yield ActionFinding(
            id=pk,
            check_id=check,
            severity=severity,
            cluster=cluster,
            subject_kind=kind,
            subject_namespace=namespace,
            subject_name=name,
            title=title,
            evidence=evidence if isinstance(evidence, dict) else {},
            exposure=exposure,
            tenant_weights=weights.weights.get(pk, {}),
            tenant_exposures=weights.exposures.get(pk, NO_EXPOSURES),
            pools=in_pools,
            unpooled=unpooled,
        )


def _digest_start(
    pools: dict[tuple[str, str], str], clusters: dict[str, int], tenants: dict[str, int]
) -> Any:
    # The stored rows' shape is part of what they were built from: a new column is filled by
    # the next regrouping, not left at its default by a run that kept the old rows.
    digest = hashlib.sha256(STORED_SHAPE.encode())
    for part in (sorted(pools.items()), sorted(clusters.items()), sorted(tenants.items())):
        digest.update(repr(part).encode())
    return digest


def _digest_add(digest: Any, row: tuple[Any, ...], weights: TenantWeights) -> None:
    tenants = sorted(weights.weights.get(row[0], {}).items())
    own = weights.exposures.get(row[0])
    # The tenants' own exposures where a link has one (a change of them alone moves the
    # risk removed); the rows without any digest as they did before they were stored.
    digest.update(repr((row, tenants, sorted(own.items())) if own else (row, tenants)).encode())


def _digest(
    pools: dict[tuple[str, str], str],
    weights: TenantWeights,
    clusters: dict[str, int],
    tenants: dict[str, int],
) -> str:
    """sha256 of everything actions_for and the stored rows are made of: each open finding's
    fields (its evidence by Finding.evidence_digest, so no evidence is read), the tenants it
    affects with their class weights and own exposures, the nodes' pools, and the cluster
    and tenant ids."""
    digest = _digest_start(pools, clusters, tenants)
    for row in _open_rows(evidence=False):
        _digest_add(digest, row, weights)
    return digest.hexdigest()


@dataclass(frozen=True)
class ActionsRefresh:
    count: int  # actions stored
    digest: str  # of what they were grouped from
    rebuilt: bool  # False: nothing they depend on changed, the stored rows were kept


@transaction.atomic
def actions_refresh(
    *, now: datetime, previous: str = "", previous_count: int = -1
) -> ActionsRefresh:
    """Regroup every open finding into actions and replace the stored ones (keys are stable,
    so a link to an action's findings survives a re-score while the action exists).

    `previous` is the digest the last run stored with `previous_count` actions: when nothing
    the grouping reads has changed since (same digest, the same rows still stored), the stored
    actions are kept as they are, computed_at included (regrouping every open finding was most
    of a re-score's time on a large world)."""
    pools, weights = _pools(), _tenant_weights()
    clusters = dict(Cluster.objects.values_list("name", "pk"))
    tenants = dict(Tenant.objects.values_list("slug", "pk"))
    if previous and Action.objects.count() == previous_count:
        digest = _digest(pools, weights, clusters, tenants)
        if digest == previous:
            return ActionsRefresh(previous_count, digest, rebuilt=False)
        built = actions_for(open_action_findings(pools, weights))
    else:  # regrouped whatever the digest: it is taken from the grouping's own read
        hasher = _digest_start(pools, clusters, tenants)
        built = actions_for(open_action_findings(pools, weights, hasher))
        digest = hasher.hexdigest()
    _store(built, clusters, tenants, now)
    return ActionsRefresh(len(built), digest, rebuilt=True)


# Changed with the grouping's rules too: a deployment's next score regroups, not only once
# its findings change.
STORED_SHAPE = "actions v7: what a Kruise SidecarSet injected, one action at the SidecarSet"
ACTION_COLUMNS = (
    "key",
    "cluster_id",
    "title",
    "severity",
    "check_ids",
    "finding_ids",
    "finding_count",
    "risk_removed",
    "share_of_risk",
    "share_of_critical",
    "computed_at",
)


def _store(
    built: list[BuiltAction], clusters: dict[str, int], tenants: dict[str, int], now: datetime
) -> None:
    """Replace the stored actions with `built`: two DELETEs and two set-based inserts
    (inventory.bulk; bulk_create's model instances were most of a regrouping's time)."""
    with connection.cursor() as cursor:  # links first: nothing points at them
        for model in (ActionTenant, Action):
            table = connection.ops.quote_name(model._meta.db_table)
            cursor.execute(f"DELETE FROM {table}")  # noqa: S608 (a model's own table name)
    stamp = db_datetime(now)
    rows = [
        (
            a.key,
            clusters[a.cluster],
            a.title[:400],
            a.severity,
            _JSON(a.check_ids),  # a tuple is written as the list json.dumps makes of it
            _JSON(a.finding_ids),
            len(a.finding_ids),
            a.risk_removed,
            a.share_of_risk,
            a.share_of_critical,
            stamp,
        )
        for a in built
    ]
    rows_insert(Action, ACTION_COLUMNS, rows, now)
    ids = dict(Action.objects.order_by().values_list("key", "pk"))  # a dict: no ORDER BY
    links = [
        (ids[a.key], tenants[slug], risk, a.tenant_critical.get(slug, 0.0))
        for a in built
        for slug, risk in a.tenant_risk.items()
        if slug in tenants
    ]
    columns = ("action_id", "tenant_id", "risk", "critical_risk")
    rows_insert(ActionTenant, columns, links, now)


def with_own_risk(queryset: QuerySet, user) -> QuerySet:
    """Actions with `own_risk`, the risk they remove for the tenants `user` may see, when
    that is not every tenant: another tenant's points would tell a tenant viewer its findings
    and class weight, and are not what their own score loses. Ranked by it, most first (then
    key), as the whole risk ranks them for a reader who sees everything. A subquery: no query
    more."""
    if sees_every_row(user, Tenant):
        return queryset
    mine = (
        ActionTenant.objects.filter(
            action=OuterRef("pk"), tenant__in=Tenant.objects.visible_to(user)
        )
        .order_by()
        .values("action")
    )
    own = mine.annotate(total=Sum("risk")).values("total")
    own_critical = mine.annotate(total=Sum("critical_risk")).values("total")
    # Their shares are of their own tenants' open risk, not of the fleet's: a share of all
    # risk beside their own points would tell how much every other tenant carries.
    visible = ActionTenant.objects.filter(tenant__in=Tenant.objects.visible_to(user)).order_by()
    totals = visible.annotate(one=Value(1)).values("one")
    ranked = queryset.annotate(
        own_risk=Subquery(own),
        own_critical=Subquery(own_critical),
        own_total=Subquery(totals.annotate(total=Sum("risk")).values("total")),
        own_critical_total=Subquery(totals.annotate(total=Sum("critical_risk")).values("total")),
    )
    return ranked.order_by(F("own_risk").desc(nulls_last=True), "key")


def own_shares(action: Action) -> tuple[float, float]:
    """(share of risk, share of critical risk) in percent: of every tenant's for a reader who
    sees them all, of the viewer's own tenants' where with_own_risk left its figures."""
    if not hasattr(action, "own_risk"):
        return action.share_of_risk, action.share_of_critical
    return (
        _percent(action.own_risk or 0.0, action.own_total or 0.0),
        _percent(action.own_critical or 0.0, action.own_critical_total or 0.0),
    )


def _percent(part: float, whole: float) -> float:
    return round(100 * part / whole, 1) if whole else 0.0


def own_risk_removed(action: Action) -> float:
    """What with_own_risk left on the action (its whole risk removed without it)."""
    if not hasattr(action, "own_risk"):
        return action.risk_removed
    return round(action.own_risk or 0.0, 2)
