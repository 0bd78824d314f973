"""Who held each exclusive GPU over the retention, for LEAK-001 (telemetry.leak): the tenants
the exporter names, and the pods that held the GPU through NVIDIA_VISIBLE_DEVICES (which it
never names: the kubelet allocated them nothing)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q

from inventory import snapshot as snap
from inventory.dra_devices import dra_gpu_nodes
from inventory.models import Cluster, Pod
from telemetry.attribution import Attributed
from telemetry.hijack import EVERY_GPU, EnvHold
from telemetry.ingest_context import attribution_context
from telemetry.leak import Attestation, Handover, tenancies_from, unattested_handovers
from telemetry.models import GpuReading, ResetAttestation
from telemetry.samples import GpuSample
from tenants.mapping import UNCLASSIFIED

FINISHED = ("Succeeded", "Failed")  # pod phases: it ran to an end
# Samples naming a tenant's pod: verified ("exact"), or a pod the last sync does not list
# ("none", telemetry.attribution: a job created and gone between two syncs held the GPU all
# the same, and its handover is the one a reset must cover). A label the sync contradicts is
# booked to nobody, so it names no holder here.
NAMED = Q(attribution="tenant", confidence__in=("exact", "none")) & ~Q(pod="")


def handovers(
    cluster: Cluster,
    snapshot: snap.ClusterSnapshot,
    now: datetime,
    env_held: Mapping[str, tuple[EnvHold, ...]],
) -> list[Handover]:
    """Whole GPUs and MIG GPU instances of exclusive nodes and of MIG nodes whose devices are
    not replicated: who held each, sample by sample, over the raw retention (an hourly roll-up
    is too coarse to place a reset between two tenants), and the resets recorded in that
    time."""
    dra_nodes = dra_gpu_nodes(snapshot)
    exclusive = [
        n.name
        for n in snapshot.nodes
        if (n.is_gpu_node or n.name in dra_nodes) and n.sharing_strategy == "none"
    ]
    # A MIG node with a time-sliced or MPS MIG resource shares some instances at once (their
    # samples are copied per pod): only MIG nodes with none hand their instances over whole.
    # An exclusive node's MIG samples are instances too (a DRA-only node: its MIG devices come
    # from claims, with no GFD label to make the node's strategy "mig").
    mig = [n.name for n in snapshot.nodes if n.sharing_strategy == "mig" and not n.resource_sharing]
    since = now - timedelta(days=settings.GPUPOSTURE_TELEMETRY_RETENTION_DAYS)
    held = (
        GpuReading.objects.filter(
            NAMED,
            hostname__in=[*exclusive, *mig],
            cluster=cluster,
            time__gte=since,
        )
        .exclude(uuid="")
        .values_list("uuid", "gi_id", "hostname", "tenant__slug", "namespace", "time")
        .order_by("uuid", "gi_id", "time")
    )
    named = (
        Attributed(
            GpuSample(time=t, hostname=host, gpu="", uuid=uuid, gi_id=gi_id),
            _party(slug, namespace),
            "tenant",
            "exact",  # a holder of the whole device for tenancies_from (NAMED says who is)
        )
        for uuid, gi_id, host, slug, namespace, t in held.iterator(chunk_size=10000)
        if slug
    )
    envs = _env_tenancies(cluster, {*exclusive, *mig}, env_held, since, now)
    tenancies = tenancies_from([*named, *envs])
    attestations = [
        Attestation(node=node, uuid=uuid, time=time)
        for node, uuid, time in ResetAttestation.objects.filter(
            cluster=cluster, reset_at__gte=since
        ).values_list("node", "gpu_uuid", "reset_at")
    ]
    return unattested_handovers(tenancies, attestations)


def _env_tenancies(
    cluster: Cluster,
    nodes: set[str],
    env_held: Mapping[str, tuple[EnvHold, ...]],
    since: datetime,
    now: datetime,
) -> Iterator[Attributed]:
    """The samples of the GPUs a pod held through NVIDIA_VISIBLE_DEVICES while it ran (from
    when a sync first saw it to when one saw it finished, or now), as its tenant's: the
    exporter names no pod for them. Only samples no tenant is named on: where a scheduled pod
    held the GPU at that time, the sample is its (co-tenancy is another check's)."""
    holds = [(node, h) for node, hs in env_held.items() if node in nodes for h in hs]
    if not holds:
        return
    owners = attribution_context(cluster)[0]
    rows = {
        (ns, name): (first, changed if phase in FINISHED else now)
        for ns, name, first, changed, phase in Pod.objects.filter(
            cluster=cluster, node__name__in=[node for node, _ in holds]
        ).values_list("namespace", "name", "first_seen", "changed_at", "phase")
    }
    for node, hold in holds:
        namespace, _, name = hold.pod.partition("/")
        window = rows.get((namespace, name))
        if window is None:
            continue
        start, end = max(window[0], since), window[1]
        readings = (
            GpuReading.objects.filter(
                cluster=cluster, hostname=node, time__gte=start, time__lte=end
            )
            .exclude(uuid="")
            .exclude(NAMED)
        )
        if EVERY_GPU not in hold.devices:
            # By UUID, or by index where the node's inventory names no UUID. A MIG UUID names
            # an instance the samples carry under their parent's UUID: not matched here.
            indexes = [d.partition(":")[2] for d in hold.devices if d.startswith("gpu-index:")]
            uuids = [d for d in hold.devices if d.startswith("GPU-")]
            readings = readings.filter(Q(uuid__in=uuids) | Q(gpu__in=indexes))
        party = _party(owners.get(namespace) or UNCLASSIFIED, namespace)
        for uuid, gi_id, t in readings.values_list("uuid", "gi_id", "time").iterator():
            yield Attributed(
                GpuSample(time=t, hostname=node, gpu="", uuid=uuid, gi_id=gi_id),
                party,
                "tenant",
                "exact",
            )


def _party(slug: str, namespace: str) -> str:
    """Who held a GPU, for handovers: the tenant, or for the unclassified tenant its namespace
    (`unclassified:<namespace>`): two namespaces nobody claims are not known to be one party,
    so a GPU passing between them needs a reset like any other handover."""
    return f"{UNCLASSIFIED}:{namespace}" if slug == UNCLASSIFIED else slug
