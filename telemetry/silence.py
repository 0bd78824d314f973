"""Which GPU nodes of a cluster send no telemetry (ATTR-003), for telemetry.facts: when each
last reported, and which give their GPUs to VMs (silent by design)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Max

from inventory import snapshot as snap
from inventory.models import Cluster
from inventory.sources.node_kinds import sandbox_default, sandbox_workload
from telemetry.hijack import SilentNode, silent_nodes
from telemetry.models import GpuReading, GpuUsageHourly


def silent_gpu_nodes(
    cluster: Cluster, snapshot: snap.ClusterSnapshot, now: datetime, *, sampled: bool
) -> tuple[SilentNode, ...]:
    """The GPU nodes with no sample within GPUPOSTURE_SILENT_NODE_MINUTES; every one of them
    where the cluster was never `sampled` (nothing to look up)."""
    gpu_nodes = [n.name for n in snapshot.nodes if n.is_gpu_node]
    window = timedelta(minutes=settings.GPUPOSTURE_SILENT_NODE_MINUTES)
    seen = _last_seen(cluster, gpu_nodes, now, window) if sampled else {}
    found = silent_nodes(
        seen, gpu_nodes, now=now, window=window, vm_workloads=_vm_workloads(snapshot)
    )
    return tuple(found)


def _vm_workloads(snapshot: snap.ClusterSnapshot) -> dict[str, str]:
    """GPU node -> `vm-passthrough` / `vm-vgpu` where the GPU Operator gives its GPUs to VMs
    (its label, else the ClusterPolicy's default, as the sync reads it)."""
    default = sandbox_default(p.spec for p in snapshot.gpu_operator_policies if not p.error)
    found = {
        n.name: sandbox_workload(n.labels, default, n.gpu_capacity)
        for n in snapshot.nodes
        if n.is_gpu_node
    }
    return {name: vm for name, vm in found.items() if vm}


def _last_seen(
    cluster: Cluster, gpu_nodes: list[str], now: datetime, window: timedelta
) -> dict[str, datetime]:
    """When each GPU node last reported. Scoring runs often: the nodes seen within the window
    come from the newest samples alone (the (cluster, time) index); only the quiet ones are
    looked up further back, in the raw samples and then the hourly roll-ups."""
    readings = GpuReading.objects.filter(cluster=cluster)
    recent = set(
        readings.filter(time__gte=now - window).values_list("hostname", flat=True).distinct()
    )
    seen = dict.fromkeys(recent, now)
    quiet = [n for n in gpu_nodes if n not in recent]
    if not quiet:
        return seen
    for rows in (
        readings.filter(hostname__in=quiet).values_list("hostname").annotate(last=Max("time")),
        GpuUsageHourly.objects.filter(cluster=cluster, hostname__in=quiet)
        .values_list("hostname")
        .annotate(last=Max("hour") + timedelta(hours=1)),
    ):
        for host, last in rows.order_by():
            seen[host] = max(last, seen.get(host, last))
    return seen
