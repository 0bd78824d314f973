"""Apply what a watch saw change since the last sync, without re-reading the whole cluster.

A watch re-sync rewrites the pods and objects that changed, re-reads the nodes whose facts
they feed (a changed node, a GPU-stack pod on it, a DRA claim or slice naming it:
inventory.sync_delta_dra), and records drift between before and after for what it touched. A
change that moves facts of every GPU node (a sharing or MIG config, the GPU Operator's policy or
a GPU-stack controller) raises NeedsFullSync: the caller then lists everything, as a first sync
does. The run row and the failure handling are the full sync's (inventory.sync), so a failed
watch re-sync also leaves the last good inventory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from inventory import snapshot as snap
from inventory.bulk import rows_insert, rows_update
from inventory.components import stack_facts
from inventory.drift import detect_drift
from inventory.env_holds import may_set_visible_devices
from inventory.holdings_record import holdings_record, owner_slugs, stored_holders
from inventory.mig_state import carry_mig_state
from inventory.models import ClusterObject, Node, Pod, SyncRun
from inventory.platform import platform_inputs
from inventory.sources.base import WatchDelta
from inventory.sources.images import component_of
from inventory.sources.normalise import normalise
from inventory.sources.quantity_warnings import pod_quantity_warnings
from inventory.sources.snapshot_nodes import node_reader
from inventory.sync import (
    SyncError,
    namespace_owners,
    previous_state,
    record_drift,
    sync_run_fail,
    with_host_facts,
)
from inventory.sync_delta_claims import refuse_node_path_volumes, with_stored_claim_paths
from inventory.sync_delta_dra import dra_nodes
from inventory.sync_delta_guards import (
    NeedsFullSync,
    is_gpu_stack,
    refuse_env_sources,
    refuse_istio,
    refuse_node_wide,
)
from inventory.sync_delta_runtime import refuse_runtime_classes, with_stored_handlers
from inventory.sync_delta_stored import labelled_for_tenants, stored_dra, stored_node_inputs
from inventory.sync_rows import (
    OBJECT_KINDS,
    Changes,
    chunks,
    nodes_write,
    pod_rows_write,
    text_hash,
)

ReadNode = Callable[[str], dict[str, Any] | None]


def delta_apply(
    *, run: SyncRun, delta: WatchDelta, read_node: ReadNode
) -> tuple[SyncRun, list[str]]:
    """Apply the delta in one transaction; returns the run and the nodes re-derived.
    NeedsFullSync leaves the run running for the caller to finish with a full sync; any other
    failure marks it failed, as a full sync does."""
    now = timezone.now()
    try:
        with transaction.atomic(), snap.gc_paused():
            changes, drift, touched, warned = _apply(run, delta, read_node, now)
            record_drift(run, drift, now)
    except NeedsFullSync:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure must be recorded, then re-raised
        sync_run_fail(run=run, error=f"applying the watched changes failed: {exc}")
        raise SyncError(str(exc)) from exc
    run.status, run.mode = SyncRun.Status.SUCCEEDED, SyncRun.Mode.WATCH
    run.counts = run.progress = dict(delta.events)
    run.changes = {**changes, "drift_events": len(drift), "nodes_rederived": len(touched)}
    run.warnings = [*run.warnings, *delta.warnings, *warned]
    run.finished_at = timezone.now()
    fields = ["status", "mode", "counts", "progress", "changes", "warnings", "finished_at"]
    run.save(update_fields=fields)
    return run, touched


def _apply(
    run: SyncRun, delta: WatchDelta, read_node: ReadNode, now: datetime
) -> tuple[dict[str, dict[str, int]], list, list[str], list[str]]:
    cluster = run.cluster
    inputs = platform_inputs(cluster)
    refuse_istio(delta)
    refuse_runtime_classes(delta)
    refuse_node_path_volumes(delta)
    changed, deleted = _normalised(delta.changed, inputs), _normalised(delta.deleted, inputs)
    old_pods = _stored_pods(cluster, [*changed.pods, *deleted.pods])
    # Read alone, a changed pod has no RuntimeClass to take its handler from: the stored one.
    changed = replace(changed, pods=with_stored_handlers(cluster, delta, changed.pods, old_pods))
    # Nor PersistentVolumes for its claims (and its controllers' templates'): the stored ones.
    changed = with_stored_claim_paths(cluster, delta, changed, old_pods)
    refuse_env_sources(cluster, delta, changed, old_pods)
    # A count that is no whole number, as a full sync warns of it (normalise's other warnings
    # speak of a whole snapshot, not of a few watched objects); the run takes them on success.
    warned = pod_quantity_warnings(changed.pods)
    touched = _nodes_to_rederive(delta, changed.pods, deleted.pods, old_pods)
    # The nodes whose DRA sharing or plugin claims and slices that changed may move (read
    # from the stored objects before _apply_objects rewrites them: their old allocation).
    touched |= dra_nodes(cluster, delta, changed, deleted)
    before = previous_state(cluster, touched)
    if set(touched) - {n.name for n in before.nodes}:
        # A node that joined: drift compares it with its pool's earlier nodes, untouched ones
        # included (a surge upgrade adds the new node a watch before it drains the old one).
        before = previous_state(cluster)
    object_changes = _apply_objects(cluster, changed, deleted)
    owners = namespace_owners(
        snap.from_dict(snap.Namespace, d)
        for d in ClusterObject.objects.filter(cluster=cluster, kind="namespace").values_list(
            "data", flat=True
        )
    )
    new_nodes = _rederive_nodes(cluster, touched, delta, changed.pods, deleted.pods, read_node)
    new_nodes = carry_mig_state(before.nodes, new_nodes, now)
    node_changes, node_ids = _write_nodes(cluster, new_nodes, touched, now)
    pod_changes = _write_pods(cluster, changed.pods, deleted.pods, old_pods, node_ids, owners, now)
    pod_changes.updated += _retenant_pods(cluster, changed.namespaces, owners)
    # The nodes whose GPU holders may have changed: re-derived ones and those of GPU pods
    # that came, went or moved (inventory.holdings; the others' sets are seen unchanged).
    held = touched | _gpu_pod_nodes([*changed.pods, *deleted.pods], old_pods)
    platform = inputs["configured_platform"] - set(owners)
    claimed = inputs["tenant_namespaces"] | labelled_for_tenants(cluster)
    found = stored_holders(cluster, held, platform, claimed)
    holdings_record(run, found, owner_slugs(owners), now, held, platform)
    after = previous_state(cluster, touched)
    changes = {"nodes": node_changes.as_dict(), "pods": pod_changes.as_dict(), **object_changes}
    return changes, detect_drift(before, after), sorted(touched), warned


def _normalised(objects: list[dict[str, Any]], inputs: dict[str, Any]) -> snap.ClusterSnapshot:
    # The same reader as a full sync: one truth for what an object means. The delta holds no
    # operator Deployment or namespace labels, so the stored platform namespaces come along.
    # Only the changes: an owner missing from them is no owner missing from the cluster.
    return normalise((o for o in objects if o.get("kind") != "Node"), whole=False, **inputs)


# --- other objects -----------------------------------------------------------------------------


def _apply_objects(
    cluster: Any, changed: snap.ClusterSnapshot, deleted: snap.ClusterSnapshot
) -> dict[str, dict[str, int]]:
    wanted = {  # (kind, namespace, name) -> canonical JSON
        (kind, *naming(obj)): snap.to_json(obj)
        for attribute, (kind, _cls, naming) in OBJECT_KINDS.items()
        for obj in getattr(changed, attribute)
    }
    gone = {
        (kind, *naming(obj))
        for attribute, (kind, _cls, naming) in OBJECT_KINDS.items()
        for obj in getattr(deleted, attribute)
    }
    keys = set(wanted) | gone
    existing = _stored_objects(cluster, keys)
    result: dict[str, Changes] = {}
    to_create, to_update, to_delete = [], [], []
    for key, canonical in wanted.items():
        digest, before = text_hash(canonical), existing.get(key)
        if before is not None and before[1] == digest:
            continue
        refuse_node_wide(key, key[0] == "workload" and is_gpu_stack(canonical))
        counter = result.setdefault(key[0], Changes())
        if before is None:
            to_create.append((cluster.pk, *key, canonical, digest))
            counter.created += 1
        else:
            to_update.append((before[0], canonical, digest))
            counter.updated += 1
    # Controllers kept only for their pod template (a finished Job's TTL deletes it) never
    # feed a node's facts unless they run a GPU-stack image: no full sync for them.
    template_only = {
        ("workload", *OBJECT_KINDS["workloads"][2](w))
        for w in deleted.workloads
        if w.kind in ("StatefulSet", "CronJob", "Job")
        and not any(component_of(image) for image in w.images.values())
    }
    for key in gone - set(wanted):
        if key in existing:
            refuse_node_wide(key, key[0] == "workload" and key not in template_only)
            to_delete.append(existing[key][0])
            result.setdefault(key[0], Changes()).deleted += 1
    columns = ("cluster_id", "kind", "namespace", "name", "data", "data_hash")
    rows_insert(ClusterObject, columns, to_create, timezone.now())
    rows_update(ClusterObject, ("data", "data_hash"), to_update)
    ClusterObject.objects.filter(pk__in=to_delete).delete()
    return {kind: c.as_dict() for kind, c in result.items()}


def _stored_objects(cluster: Any, keys: set[tuple[str, str, str]]) -> dict:
    if not keys:
        return {}
    rows = ClusterObject.objects.filter(
        cluster=cluster,
        kind__in={k for k, _, _ in keys},
        name__in={n for _, _, n in keys},
    ).values_list("pk", "kind", "namespace", "name", "data_hash")
    return {(k, ns, n): (pk, h) for pk, k, ns, n, h in rows if (k, ns, n) in keys}


# --- pods and the nodes they feed --------------------------------------------------------------


def _stored_pods(cluster: Any, pods: Iterable[snap.Pod]) -> dict[tuple[str, str], tuple]:
    """(namespace, name) -> (pk, digest, node_id, tenant_id, old snap.Pod) for these pods."""
    keys = {(p.namespace, p.name) for p in pods}
    if not keys:
        return {}
    rows = Pod.objects.filter(
        cluster=cluster, namespace__in={ns for ns, _ in keys}, name__in={n for _, n in keys}
    ).values_list("pk", "namespace", "name", "data_hash", "node_id", "tenant_id", "data")
    return {
        (ns, name): (pk, digest, node_id, tenant_id, snap.from_dict(snap.Pod, data))
        for pk, ns, name, digest, node_id, tenant_id, data in rows
        if (ns, name) in keys
    }


def _feeds_node(pod: snap.Pod) -> bool:
    """A pod whose images are GPU-stack components: the node's versions are read from it."""
    return any(component_of(c.image) for c in pod.containers)


def _gpu_pod_nodes(pods: Iterable[snap.Pod], old_pods: dict[tuple[str, str], tuple]) -> set[str]:
    """The nodes of the pods (as they were and are) that may hold GPUs: by a resource, a DRA
    claim, or NVIDIA_VISIBLE_DEVICES (inventory.holding_sets)."""
    names = set()
    for pod in pods:
        old = old_pods.get((pod.namespace, pod.name))
        for version in (pod, old[4] if old else None):
            if version is not None and version.node_name and _may_hold_gpus(version):
                names.add(version.node_name)
    return names


def _may_hold_gpus(pod: snap.Pod) -> bool:
    return bool(pod.gpu_resources or pod.resource_claims) or may_set_visible_devices(pod)


def _nodes_to_rederive(
    delta: WatchDelta,
    changed: Iterable[snap.Pod],
    deleted: Iterable[snap.Pod],
    old_pods: dict[tuple[str, str], tuple],
) -> set[str]:
    names = {
        str((o.get("metadata") or {}).get("name"))
        for o in [*delta.changed, *delta.deleted]
        if o.get("kind") == "Node"
    }
    for pod in [*changed, *deleted]:
        old = old_pods.get((pod.namespace, pod.name))
        for version in (pod, old[4] if old else None):
            if version is not None and version.node_name and _feeds_node(version):
                names.add(version.node_name)
    return names


def _rederive_nodes(
    cluster: Any,
    names: set[str],
    delta: WatchDelta,
    changed: tuple[snap.Pod, ...],
    deleted: tuple[snap.Pod, ...],
    read_node: ReadNode,
) -> list[snap.Node]:
    """The touched nodes as a full sync would read them now (None-free; gone ones left out)."""
    if not names:
        return []
    raw = {str(o["metadata"]["name"]): o for o in delta.changed if o.get("kind") == "Node"}
    gone = {str(o["metadata"]["name"]) for o in delta.deleted if o.get("kind") == "Node"}
    pods_on = _pods_on_nodes(cluster, names, changed, deleted)
    workloads, configs, unreadable, policies, mig_parted = stored_node_inputs(cluster)
    # A live cluster: its pods and DaemonSets were listed (and are stored), so absence means
    # absence.
    stack = stack_facts(workloads, [p.name for p in policies], (), pods_read=True)
    configs.sort(key=lambda c: (c.namespace, c.configmap, c.key))
    # The platform's namespaces as the stored inventory shows them (read after this delta's
    # objects are stored), and those tenants claim: their pods never give a node its stack.
    inputs = platform_inputs(cluster)
    platform = inputs["configured_platform"] - inputs["tenant_namespaces"]
    claimed = inputs["tenant_namespaces"] | labelled_for_tenants(cluster)
    # As a full sync, with the stored DRA objects: how DRA shares the node's GPUs.
    dra = stored_dra(cluster, platform)
    reader = node_reader(
        workloads,
        policies,
        stack,
        configs,
        unreadable,
        dra,
        tenant_claimed=claimed,
        mig_parted=mig_parted,
    )
    nodes = []
    for name in sorted(names - gone):
        obj = raw.get(name) or read_node(name)
        if obj is None:
            continue  # deleted between the watch and now: the next sync sees the event
        nodes.append(reader.read(obj, pods_on.get(name, [])).node)
    return with_host_facts(cluster, nodes)


def _pods_on_nodes(
    cluster: Any, names: set[str], changed: tuple[snap.Pod, ...], deleted: tuple[snap.Pod, ...]
) -> dict[str, list[snap.Pod]]:
    """The pods on these nodes after the delta: stored ones, minus deleted and moved, plus new."""
    current: dict[tuple[str, str], snap.Pod] = {}
    stored = Pod.objects.filter(cluster=cluster, node__name__in=list(names)).values_list("data")
    for (data,) in stored.iterator(chunk_size=2000):
        pod = snap.from_dict(snap.Pod, data)
        current[(pod.namespace, pod.name)] = pod
    for pod in deleted:
        current.pop((pod.namespace, pod.name), None)
    for pod in changed:
        current[(pod.namespace, pod.name)] = pod
    by_node: dict[str, list[snap.Pod]] = {}
    for key in sorted(current):
        pod = current[key]
        if pod.node_name in names:
            by_node.setdefault(pod.node_name, []).append(pod)
    return by_node


def _write_nodes(
    cluster: Any, nodes: list[snap.Node], touched: set[str], now: datetime
) -> tuple[Changes, dict[str, int]]:
    existing = dict(
        (name, (pk, digest))
        for name, pk, digest in Node.objects.filter(
            cluster=cluster, name__in=list(touched)
        ).values_list("name", "pk", "data_hash")
    )
    return nodes_write(cluster, nodes, existing, now), _node_ids(cluster)


def _node_ids(cluster: Any) -> dict[str, int]:
    return dict(Node.objects.filter(cluster=cluster).values_list("name", "pk"))


def _write_pods(
    cluster: Any,
    changed: tuple[snap.Pod, ...],
    deleted: tuple[snap.Pod, ...],
    existing: dict[tuple[str, str], tuple],
    node_ids: dict[str, int],
    owners: dict[str, int],
    now: datetime,
) -> Changes:
    created, updated = pod_rows_write(cluster, changed, existing, node_ids, owners, now)
    gone = [
        existing[(p.namespace, p.name)][0] for p in deleted if (p.namespace, p.name) in existing
    ]
    for batch in chunks(gone):
        Pod.objects.filter(pk__in=batch).delete()
    return Changes(created, updated, len(gone))


def _retenant_pods(
    cluster: Any, namespaces: Iterable[snap.Namespace], owners: dict[str, int]
) -> int:
    """A namespace whose labels changed may have changed hands: its pods follow."""
    moved = 0
    for name in {ns.name for ns in namespaces}:
        moved += (
            Pod.objects.filter(cluster=cluster, namespace=name)
            .exclude(tenant_id=owners.get(name))
            .update(tenant_id=owners.get(name))
        )
    return moved
