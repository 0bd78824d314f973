"""Inventory reads for pages and the API."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from django.db.models import Count, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.utils import timezone

from gpuposture.base.labels import words
from gpuposture.base.roles import EDIT_CLUSTERS, may, reads_audit_log
from inventory.components import LABELS as COMPONENT_LABELS
from inventory.dra_node import node_dra_devices
from inventory.drift_read import cluster_drift_events
from inventory.input_failures import import_failures
from inventory.models import Bulletin, Cluster, ClusterObject, Node, Pod, SyncRun
from inventory.node_components import firmware_coverage, node_components
from inventory.patching.rollout import RolloutNode, rollout_plan
from inventory.patching.status import COMPONENTS
from inventory.platform import cluster_platform_namespaces
from inventory.pod_party import unclaimed_pod_party
from inventory.presenter import NODE_BASES, hidden_scope_for, node_basis, present_all
from inventory.runtime import operator_toolkit, resolved_strategy, runtime_facts
from inventory.schedule import cluster_schedule_summary
from inventory.snapshot import GpuOperatorPolicy
from inventory.stack_managers import WHO_OPERATOR
from inventory.stack_rollout import precompiled_branch


def latest_sync_runs() -> QuerySet[SyncRun]:
    newest = SyncRun.objects.filter(cluster=OuterRef("cluster")).order_by("-started_at", "-id")
    return SyncRun.objects.filter(pk=Subquery(newest.values("pk")[:1]))


def last_full_read(cluster: Cluster) -> tuple[dict[str, int], tuple[str, ...]] | None:
    """What the cluster's last successful full sync read (a watch reads only changes): its
    objects per kind, and the kinds it certainly did not read (inventory.kinds_read); None
    before any. One query."""
    row = (
        cluster.sync_runs.filter(status=SyncRun.Status.SUCCEEDED, mode=SyncRun.Mode.FULL)
        .order_by("-started_at", "-id")
        .values_list("counts", "kinds_unread")
        .first()
    )
    return None if row is None else (dict(row[0] or {}), tuple(row[1] or ()))


def cluster_kinds_unread(cluster: Cluster) -> tuple[str, ...]:
    """The kinds the cluster's last successful full sync certainly did not read."""
    read = last_full_read(cluster)
    return read[1] if read else ()


def clusters_with_last_sync(user) -> list[Cluster]:
    """Clusters the user may see, each with `.last_run` (its newest SyncRun or None)."""
    clusters = (
        Cluster.objects.visible_to(user)
        .select_related("provider")
        .prefetch_related(Prefetch("sync_runs", queryset=latest_sync_runs(), to_attr="last_runs"))
    )
    result = list(clusters)
    for cluster in result:
        cluster.last_run = cluster.last_runs[0] if cluster.last_runs else None
    return result


POOL_LABEL = "gpuposture.io/pool"
PATCH_COMPONENTS = tuple(COMPONENTS.values())


def patch_overview(user) -> dict:
    """Per cluster and node pool: nodes current / below / unknown, and what each node should
    move to, oldest exposure first."""
    nodes = (
        Node.objects.visible_to(user)
        .filter(is_accelerator_node=True)
        .select_related("cluster")
        .order_by("cluster__name", "name")
    )
    now = timezone.now()
    rows: list[dict] = []
    pools: dict[str, dict] = {}
    # Nodes of other vendors' GPUs alone (AMD, Intel, Gaudi): counted, so the page does not
    # say "no GPU nodes", but not rowed: no bulletin judges their stack, which is not read.
    not_judged = 0
    # The bulletins the user may not read are named nowhere in the rows (the status stays).
    scope = hidden_scope_for(user)
    for node in present_all(scope, nodes):
        if not node.is_gpu_node:
            not_judged += 1
            continue
        pool = f"{node.cluster.name} / {node.labels.get(POOL_LABEL, 'no pool label')}"
        counts = pools.setdefault(pool, _pool_counts())
        counts[node.patch_status] += 1
        for component in {e["component"] for e in node.patch_exposures}:
            if component in counts["components"]:
                counts["components"][component] += 1
        rows.append(_patch_row(node, pool, now))
    rows.sort(key=lambda r: (-(r["oldest_days"] or -1), r["node"].name))
    return {"rows": rows, "pools": pools, "other_vendor_nodes": not_judged}


def _pool_counts() -> dict:
    return {
        "current": 0,
        "below_baseline": 0,
        "unknown": 0,
        "components": dict.fromkeys(PATCH_COMPONENTS, 0),
    }


def _patch_row(node: Node, pool: str, now: datetime) -> dict:
    released = [datetime.fromisoformat(e["released"]) for e in node.patch_exposures]
    move_to = {
        f"{words(e['component'])} {e['fixed_version']}"
        for e in node.patch_exposures
        if e.get("fixed_version")
    }
    reasons = Counter(e["reason"]["text"] for e in node.patch_not_affected if e.get("reason"))
    by, exposures = node.data.get("upgrade_by") or {}, node.patch_exposures
    return {
        "node": node,
        "pool": pool,
        "oldest_days": (now - min(released)).days if released else None,
        "move_to": sorted(move_to),
        # Who upgrades each exposed component here (the sync's Node.upgrade_by).
        "upgrade_by": sorted(
            {
                f"{words(c)}: {by.get(c) or 'not resolved'}"
                for c in {e["component"] for e in exposures}
            }
        ),
        "unverified": sum(e.get("condition_status") == "unverified" for e in node.patch_exposures),
        "not_affected": [
            f"{text} (×{n})" if n > 1 else text for text, n in sorted(reasons.items())
        ],
    }


def node_detail_context(user, node: Node) -> dict:
    """A node's facts, how it injects devices, what it is exposed to (with each bound's
    condition), and the pods on it the user may see."""
    objects = ClusterObject.objects.filter(
        cluster_id=node.cluster_id, kind__in=("gpu_operator_policy", "sharing_config")
    ).values_list("kind", "name", "data")
    policies = [
        (name, data.get("spec") or {}) for kind, name, data in objects if kind != "sharing_config"
    ]
    configs = [data for kind, _name, data in objects if kind == "sharing_config"]
    read_policies = [
        GpuOperatorPolicy(name, data.get("spec") or {}, error=data.get("error") or "")
        for kind, name, data in objects
        if kind == "gpu_operator_policy"
    ]
    scope = hidden_scope_for(user)
    records = [*node.patch_exposures, *node.patch_not_affected]
    upgrade_by = node.data.get("upgrade_by") or {}  # who upgrades each component (the sync's)
    advisories = {e.get("advisory_id") for e in records}
    bulletin_ids = dict(
        Bulletin.objects.filter(tracking_id__in=advisories).values_list("tracking_id", "pk")
    )
    exposures, not_affected = (
        [e | {"bulletin_pk": bulletin_ids.get(e.get("advisory_id"))} for e in rows]
        for rows in (node.patch_exposures, node.patch_not_affected)
    )
    pods = list(
        Pod.objects.visible_to(user)
        .filter(node=node)
        .select_related("tenant")
        .order_by("namespace", "name")
    )
    # A pod's stored tenant holds claims only: one without is the platform's only in a platform
    # namespace or a KAI reservation placeholder, otherwise unclassified (DESIGN §3, fail
    # closed: inventory.pod_party). Read only when needed.
    platform = None
    if any(p.tenant_id is None for p in pods):
        platform = cluster_platform_namespaces(node.cluster)
    for p in pods:
        p.party = None if p.tenant_id else unclaimed_pod_party(p, platform or frozenset())
    return {
        "node": node,
        "runtime": runtime_facts(
            node.labels,
            policies,
            configs,
            node.data.get("gpu_operator_version"),
            resolved_strategy(node.data),
            operator_toolkit(node.data),
        ),
        "exposures": sorted(exposures, key=lambda e: (-(e.get("max_cvss") or 0), e["component"])),
        "has_conditions": any(e.get("condition") for e in exposures),
        "not_affected": sorted(not_affected, key=lambda e: (e["component"], e["advisory_id"])),
        "components": [
            entry | {"component": c, "label": COMPONENT_LABELS[c], "upgrade_by": upgrade_by.get(c)}
            for c, entry in node_components(node.data).items()
        ],
        # Why the count and the sharing mode read as they do, where the sync recorded it.
        "bases": {key: node_basis(node, key, scope) for key in NODE_BASES},
        "driver_branch": _driver_branch(node.data, read_policies),
        "pods": pods,
        "dra_devices": node_dra_devices(node, scope, platform),
    }


def _driver_branch(data: dict, policies: list[GpuOperatorPolicy]) -> str | None:
    """The precompiled driver branch the ClusterPolicy gives the Operator, for a node whose
    running driver version is unknown and whose driver the Operator deploys (the sync's
    upgrade_by): what the page can say instead of "unknown" alone. Shown only, never a
    version: the node's driver_version stays unset and its patch status unknown."""
    if data.get("driver_version") or (data.get("upgrade_by") or {}).get("driver") != WHO_OPERATOR:
        return None
    return precompiled_branch(policies)


def patch_rollout(user) -> list:
    """The suggested rollout per cluster (inventory.patching.rollout) for the nodes the user may
    see; a pool's sensitivity is the highest trust-class rank among the tenants running on it."""
    nodes = list(
        Node.objects.visible_to(user)
        .filter(is_gpu_node=True)
        .select_related("cluster")
        .only("cluster__name", "name", "labels", "patch_status", "patch_exposures", "data")
    )
    pool_of = {n.pk: (n.cluster.name, n.labels.get(POOL_LABEL, "no pool label")) for n in nodes}
    sensitivity: dict[tuple[str, str], int] = {}
    ranks = (
        Pod.objects.filter(node_id__in=pool_of, tenant__isnull=False)
        .values_list("node_id", "tenant__trust_class__rank")
        .distinct()
    )
    for node_id, rank in ranks.iterator(chunk_size=5000):
        pool = pool_of[node_id]
        sensitivity[pool] = max(sensitivity.get(pool, 0), rank or 0)
    rollout_nodes = [
        RolloutNode(
            cluster=n.cluster.name,
            pool=pool_of[n.pk][1],
            name=n.name,
            patch_status=n.patch_status,
            exposures=tuple(n.patch_exposures),
            versions={kind: n.data[f] for f, kind in COMPONENTS.items() if n.data.get(f)},
            upgrade_by=n.data.get("upgrade_by") or {},
        )
        for n in nodes
    ]
    return rollout_plan(rollout_nodes, pool_sensitivity=sensitivity)


def cluster_detail_context(request: HttpRequest, name: str) -> dict:
    """What the cluster page shows from the inventory (posture adds its checklist)."""
    cluster = get_object_or_404(Cluster.objects.visible_to(request.user), name=name)
    nodes = Node.objects.visible_to(request.user).filter(cluster=cluster)
    scope = hidden_scope_for(request.user)
    # One query: NVIDIA's GPU nodes, those with a known firmware, and the nodes of other
    # vendors' GPUs alone (AMD, Intel, Gaudi), which are GPU nodes whose stack is not read.
    gpu = nodes.aggregate(
        n=Count("pk", filter=Q(is_gpu_node=True)),
        known=Count("pk", filter=Q(is_gpu_node=True) & ~Q(firmware_version="")),
        other=Count("pk", filter=Q(is_accelerator_node=True, is_gpu_node=False)),
    )
    return {
        "cluster": cluster,
        "runs": present_all(scope, cluster.sync_runs.order_by("-started_at", "-id")[:25]),
        "drift_events": cluster_drift_events(request.user, cluster, scope),
        "operator_policies": cluster.kube_objects.filter(kind="gpu_operator_policy"),
        "node_count": nodes.count(),
        "gpu_node_count": gpu["n"],
        "other_accelerator_node_count": gpu["other"],
        "accelerator_node_count": gpu["n"] + gpu["other"],
        "firmware_coverage": firmware_coverage(gpu["n"], gpu["known"]),
        # What beat runs, not the interval alone: a cluster with no stored source has none.
        "schedule": cluster_schedule_summary(cluster=cluster),
        "can_edit": may(request.user, EDIT_CLUSTERS),
        # Who runs the imports or reads the audit log, where the events live.
        "import_failures": import_failures(cluster)
        if may(request.user, EDIT_CLUSTERS) or reads_audit_log(request.user)
        else [],
    }
