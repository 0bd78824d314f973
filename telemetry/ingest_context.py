"""What the cluster's last inventory says of samples being ingested: who owns each namespace,
which nodes share their GPUs, which labels are the exporter's own (telemetry.exporter_labels)."""

from __future__ import annotations

from django.db.models import Q

from inventory import snapshot as snap
from inventory.fractions import RESERVATION_NAMESPACES, bound_to, is_reservation_pod
from inventory.models import Cluster, ClusterObject, Node, Pod
from inventory.platform import platform_inputs
from inventory.sources.images import component_of
from inventory.sync import namespace_owners
from telemetry.attribution import FractionPod, LabelKey
from telemetry.exporter_labels import (
    exporter_labels_strip,
    hosts_placed,
    hosts_resolve,
    node_aliases,
    unique_names,
)
from telemetry.models import GpuReading
from telemetry.samples import GpuSample
from tenants.models import Tenant, TenantNamespace

SHARED_STRATEGIES = ("time_slicing", "mps")


def attribution_context(cluster: Cluster) -> tuple[dict[str, str], set[str], frozenset[str]]:
    """namespace -> tenant slug (the registry and `gpuposture.io/tenant` labels, as pods are
    attributed), the nodes whose GPUs are time-sliced or MPS-shared, and the platform
    namespaces (as the sync finds them: the defaults, the GPU Operator's, the labelled and the
    configured ones). Any other namespace is the unclassified party's, never the platform's."""
    namespaces = [
        snap.from_dict(snap.Namespace, data)
        for data in ClusterObject.objects.filter(cluster=cluster, kind="namespace").values_list(
            "data", flat=True
        )
    ]
    known = {ns.name for ns in namespaces}
    # Namespaces the registry names but the last sync did not see still belong to their tenant.
    namespaces += [
        snap.Namespace(name=name)
        for name in TenantNamespace.objects.values_list("name", flat=True)
        if name not in known
    ]
    slugs = dict(Tenant.objects.values_list("pk", "slug"))
    owners = {ns: slugs[pk] for ns, pk in namespace_owners(namespaces).items()}
    shared = set(
        Node.objects.filter(cluster=cluster, sharing_strategy__in=SHARED_STRATEGIES).values_list(
            "name", flat=True
        )
    )
    return owners, shared, platform_inputs(cluster)["configured_platform"]


def kai_reservations(
    cluster: Cluster,
    samples: list[GpuSample],
    owners: dict[str, str],
    platform: frozenset[str],
) -> dict[tuple[str, str], tuple[FractionPod, ...]]:
    """(namespace, pod) of each KAI reservation pod the samples name -> the fraction pods on
    its node bound to the GPU it holds (telemetry.attribution: theirs is the usage). A pod in
    KAI's reservation namespace the last sync did not see is one whose fractions are unknown."""
    named = {
        (s.namespace, s.pod)
        for s in samples
        if s.pod
        and s.namespace not in owners
        and (s.namespace in RESERVATION_NAMESPACES or s.namespace in platform)
    }
    if not named:
        return {}
    near = Q()
    for ns, name in named:
        near |= Q(namespace=ns, name=name)
    seen: set[tuple[str, str]] = set()
    holders: list[tuple[str, snap.Pod]] = []
    for ns, name, node, data in Pod.objects.filter(near, cluster=cluster).values_list(
        "namespace", "name", "node__name", "data"
    ):
        seen.add((ns, name))
        pod = snap.from_dict(snap.Pod, data)
        if is_reservation_pod(pod, owned=False, platform=platform):
            holders.append((node or "", pod))
    found: dict[tuple[str, str], tuple[FractionPod, ...]] = {
        key: () for key in named - seen if key[0] in RESERVATION_NAMESPACES
    }
    if not holders:
        return found
    fractions: dict[str, list[snap.Pod]] = {}
    on_nodes = Pod.objects.filter(cluster=cluster, node__name__in={n for n, _ in holders})
    for node, data in on_nodes.values_list("node__name", "data"):
        pod = snap.from_dict(snap.Pod, data)
        if pod.gpu_fraction and not pod.gpu_resources and pod.is_active:
            fractions.setdefault(node, []).append(pod)
    for node, holder in holders:
        found[(holder.namespace, holder.name)] = tuple(
            FractionPod(f.namespace, f.name, _container_name(f))
            for f in fractions.get(node, ())
            if bound_to(f, holder)
        )
    return found


def _container_name(pod: snap.Pod) -> str:
    container = pod.fraction_container
    return container.name if container else ""


def samples_as_read(cluster: Cluster, samples: list[GpuSample]) -> list[GpuSample]:
    """The samples without what the exporter says of itself (telemetry.exporter_labels): its
    pod's name or its host's name as `Hostname` read as that node, its pod stamped by a
    scrape dropped;
    from the cluster's last inventory."""
    node_rows = list(Node.objects.filter(cluster=cluster).values_list("name", "labels"))
    nodes = {name for name, _ in node_rows}
    named = {s.hostname for s in samples} - nodes
    named |= {s.pod for s in samples if s.pod}
    pods = Pod.objects.filter(cluster=cluster, name__in=named)
    rows = list(pods.values_list("namespace", "name", "node__name", "data"))
    pod_nodes = unique_names((name, node) for _, name, node, _ in rows if node)
    aliases = {**pod_nodes, **unique_names(node_aliases(node_rows))}
    exporters = {(ns, name) for ns, name, _, data in rows if _is_exporter(data)}
    exporters |= _new_exporter_pods(cluster, samples, {(ns, name) for ns, name, _, _ in rows})
    resolved = hosts_resolve(samples, nodes, aliases)
    # An exporter pod newer than the sync names its node by what its samples name (the
    # scrape's stamp of that very pod included, so placed before it is dropped).
    unplaced = {s.uuid for s in resolved if s.hostname not in nodes and s.uuid}
    placed = hosts_placed(
        resolved,
        nodes,
        {(ns, name): node for ns, name, node, _ in rows if node},
        _gpus_placed(cluster, unplaced, nodes) if unplaced else {},
    )
    return exporter_labels_strip(hosts_resolve(resolved, nodes, placed), exporters)


def _new_exporter_pods(
    cluster: Cluster, samples: list[GpuSample], known: set[tuple[str, str]]
) -> set[tuple[str, str]]:
    """(namespace, pod) the samples name that the last sync did not see but that are named
    after a DCGM-Exporter DaemonSet whose other pods it did (`<daemonset>-<suffix>`): the
    exporter restarted since, and a scrape stamped its new pod on GPUs it left bare."""
    unknown = {(s.namespace, s.pod) for s in samples if s.pod} - known
    prefixes = {(ns, name.rsplit("-", 1)[0]) for ns, name in unknown if "-" in name}
    if not prefixes:
        return set()
    near = Q()
    for ns, prefix in prefixes:
        near |= Q(namespace=ns, name__startswith=f"{prefix}-")
    sets = set()
    for ns, data in Pod.objects.filter(near, cluster=cluster).values_list("namespace", "data"):
        pod = snap.from_dict(snap.Pod, data)
        if pod.owner_kind == "DaemonSet" and pod.owner_name and _is_exporter(data):
            sets.add((ns, pod.owner_name))
    return {(ns, name) for ns, name in unknown if (ns, name.rsplit("-", 1)[0]) in sets}


def _gpus_placed(cluster: Cluster, uuids: set[str], nodes: set[str]) -> dict[str, str]:
    """UUID -> node for these GPUs, from the samples stored under a node's name (a GPU does
    not move between hosts)."""
    rows = (
        GpuReading.objects.filter(cluster=cluster, uuid__in=uuids, hostname__in=nodes)
        .values_list("uuid", "hostname")
        .distinct()
    )
    return unique_names(rows.order_by())


def _is_exporter(data: dict) -> bool:
    """Whether a stored pod row runs DCGM-Exporter, read as inventory.components reads a
    snapshot pod's containers."""
    pod = snap.from_dict(snap.Pod, data)
    return any(component_of(c.image) == "dcgm_exporter" for c in pod.containers)


def label_checks(cluster: Cluster, samples: list[GpuSample]) -> tuple[set[LabelKey], set[LabelKey]]:
    """(hostname, namespace, pod) of the samples from a node of the last inventory whose pod
    label names a pod that inventory binds to ANOTHER node, and of those whose label names a
    pod it does not list at all, or lists unscheduled (telemetry.attribution books the former
    to nobody, the latter as the label says at confidence none). DCGM-Exporter names only pods
    of its own node, so the former label is stale, mislabelled or forged (ATTR-001,
    `labels_named`); the latter was created or placed since the sync, or is wrongly named
    (ATTR-002, attribution unverified). The samples are read as samples_as_read leaves them:
    an exporter's own pod is no label."""
    named = {(s.hostname, s.namespace, s.pod) for s in samples if s.pod}
    if not named:
        return set(), set()
    nodes = set(Node.objects.filter(cluster=cluster).values_list("name", flat=True))
    # A host the inventory does not list is not judged: it may be a node under another name.
    named = {n for n in named if n[0] in nodes}
    if not named:
        return set(), set()
    rows = Pod.objects.filter(cluster=cluster, name__in={pod for _, _, pod in named})
    bound = {
        (ns, name): node or ""
        for ns, name, node in rows.values_list("namespace", "name", "node__name")
    }
    elsewhere = {n for n in named if bound.get(n[1:], "") not in ("", n[0])}
    # A pod the sync saw unscheduled may have been placed here since: unverified as well.
    unlisted = {n for n in named if not bound.get(n[1:])}
    return elsewhere, unlisted
