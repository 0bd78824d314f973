"""ATTR-002: GPU usage that cannot be attributed per workload: on time-sliced or MPS GPUs, and
on nodes whose DCGM-Exporter names no pod (telemetry.facts: judged by count only)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from gpuposture.base.enums import SharingMode
from inventory.snapshot import Node
from posture.inputs import PostureInputs
from posture.rules.attr.unknown_pods import unknown_pod_drafts
from posture.rules.common import (
    GpuHolding,
    gpu_holdings,
    holding_evidence,
    pod_ref,
    sorted_nodes,
    tenants_on_node,
)
from posture.rules.env_holdings import reaches
from posture.rules.registry import DRA_KINDS, MEMBERS_SHOWN, FindingDraft, check
from posture.rules.subjects import node_draft, node_named
from telemetry.hijack import Hijack, UnmappedNode

UNATTRIBUTABLE_MODES = (SharingMode.TIME_SLICING.value, SharingMode.MPS.value)


@check(
    id="ATTR-002",
    needs=DRA_KINDS,
    title="GPU utilisation cannot be attributed per workload (shared GPUs, no pod labels)",
    severity="low",
    scope="node",
    rationale=(
        "DCGM-Exporter reads utilisation per physical GPU (or per MIG instance). When a GPU "
        "is time-sliced or shared through MPS its `pod`/`namespace` labels name only one of "
        "the pods holding a replica, or none, so the usage of a tenant's workload cannot be "
        "told apart from its neighbours': chargeback, anomaly detection and compute-hijacking "
        "detection for that tenant carry a low confidence, never a per-pod figure. The same "
        "holds on any node whose exporter labels no pod at all (its Kubernetes mapping off or "
        "unable to read the kubelet's pod resources): busy GPUs there are told from a hijack "
        "only by counting them against the GPUs scheduled pods hold. Busy GPUs on a host the "
        "last inventory does not list (a node that joined since the sync) are nobody's until "
        "a sync shows what runs there. A GPU whose samples name a pod the last inventory "
        "does not list (created since the sync, or a wrong label) is booked as the label says, "
        "at confidence `none` (never `exact`), and this finding says nothing confirmed it "
        "until a sync shows the pod."
    ),
    remediation=(
        "Where per-tenant attribution is required, give the tenant whole GPUs or MIG GPU "
        "instances (DCGM reports per `GPU_I_ID`), i.e. a node pool whose "
        "`nvidia.com/device-plugin.config` has no `sharing` section. Otherwise record that "
        "the tenant's GPU usage is attributed per node only, and keep DCGM-Exporter's "
        "Kubernetes mapping on (`DCGM_EXPORTER_KUBERNETES=true`, the kubelet's "
        "`/var/lib/kubelet/pod-resources` mounted) for the nodes that allow it."
    ),
    mappings=("SP800-53:AU-10",),
)
def unattributable_utilisation(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for node in sorted_nodes(inputs):
        shared: dict[str, list[GpuHolding]] = {}
        platform_pods = 0
        holdings = gpu_holdings(inputs, node)
        env = [h for h in holdings if h.through_env]
        for holding in holdings:
            # A GPU an env access reaches is time-shared with it, whatever mode its holder
            # got it by: DCGM-Exporter charges its usage to the holder alone.
            beside = any(reaches(e, holding) for e in env)
            if holding.mode not in UNATTRIBUTABLE_MODES and not beside:
                continue
            if holding.tenant is None:
                platform_pods += 1
            else:
                shared.setdefault(holding.tenant.slug, []).append(holding)
        if shared:
            explained = _explained_by_env(inputs.telemetry.env_explained, node.name)
            yield _attr_draft(inputs, node, dict(sorted(shared.items())), platform_pods, explained)
    for unmapped in inputs.telemetry.unmapped_nodes:
        yield _unmapped_draft(inputs, unmapped)
    yield from _unknown_host_drafts(inputs, inputs.telemetry.unknown_hosts)
    yield from unknown_pod_drafts(inputs)


def _explained_by_env(runs: Iterable[Hijack], node: str) -> list[dict[str, Any]]:
    """The busy runs on the node that only pods holding the GPU through NVIDIA_VISIBLE_DEVICES
    explain (telemetry.facts): no ATTR-001 is raised for them (POD-011 reports the access), so
    the node's attribution finding says who was using the GPU and when."""
    here = [h for h in runs if h.hostname == node]
    return [
        {
            "gpu_uuid": h.uuid,
            "mig_instance": h.gi_id or None,
            "start": h.start.isoformat(),
            "end": h.end.isoformat(),
            "peak_busy_percent": round(h.peak_busy, 1),
            "held_by": h.held_note,
        }
        for h in here[:MEMBERS_SHOWN]
    ]


def _unknown_host_drafts(inputs: PostureInputs, runs: Iterable[Hijack]) -> Iterator[FindingDraft]:
    """Busy GPUs on a host the last inventory does not list: usage nobody can be said to hold,
    neither a tenant nor a hijacker, until a sync shows what runs there."""
    by_host: dict[str, list[Hijack]] = {}
    for run in runs:
        by_host.setdefault(run.hostname, []).append(run)
    for host, busy in sorted(by_host.items()):
        evidence = {
            "node": host,
            "in_inventory": False,
            "busy_gpus": [
                {
                    "gpu_uuid": h.uuid,
                    "mig_instance": h.gi_id or None,
                    "start": h.start.isoformat(),
                    "end": h.end.isoformat(),
                    "peak_busy_percent": round(h.peak_busy, 1),
                }
                for h in busy[:MEMBERS_SHOWN]
            ],
            "attribution": "none: the exporter's Hostname names no node of the last inventory, "
            "so which pods run there is unknown",
            "hijack_detection": "not judged: sync the cluster again. A node that joined since "
            "the sync is then judged (ATTR-001 if no pod holds its busy GPUs); a host that is "
            "still no node reports from outside the cluster (another cluster's exporter, or a "
            "machine scraped into this cluster's metrics)",
        }
        title = (
            f"{len(busy)} busy GPU(s) on {host}, which the last inventory does not list: "
            "usage nobody is known to hold"
        )
        yield node_draft(
            "ATTR-002",
            Node(host),
            inputs=inputs,
            tenants=(),
            evidence=evidence,
            key="unknown-host",
            title=title,
        )


def _unmapped_draft(inputs: PostureInputs, unmapped: UnmappedNode) -> FindingDraft:
    """A node whose exporter labels no pod: its usage is attributed to nobody, and a busy GPU
    is told from a hijack (ATTR-001) only by counting busy GPUs against those pods hold."""
    node = node_named(inputs, unmapped.node)
    evidence = {
        "node": node.name,
        "gpu_model": node.gpu_model,
        "gpus_held_by_scheduled_pods": unmapped.held_devices,
        "attribution": "none: no DCGM-Exporter sample from this node names a pod, though "
        "scheduled pods hold its GPUs",
        "hijack_detection": "by count only: ATTR-001 fires when more GPUs are busy than the "
        "node's pods hold, and cannot tell a process on a held but idle GPU",
    }
    title = (
        f"GPU usage on node {node.name} cannot be attributed per workload: DCGM-Exporter "
        "names no pod"
    )
    tenants = tenants_on_node(inputs, node.name)
    return node_draft(
        "ATTR-002",
        node,
        inputs=inputs,
        tenants=tenants,
        evidence=evidence,
        key="unmapped",
        title=title,
    )


def _attr_draft(
    inputs: PostureInputs,
    node: Node,
    shared: dict[str, list[GpuHolding]],
    platform_pods: int,
    explained: list[dict[str, Any]],
) -> FindingDraft:
    """One finding per node, for every tenant holding its shared GPUs."""
    modes = sorted({h.mode for own in shared.values() for h in own})
    evidence = {
        "node": node.name,
        "gpu_model": node.gpu_model,
        "node_sharing_strategy": node.sharing_strategy,
        "sharing_modes": modes,
        "time_slicing_replicas": node.time_slicing_replicas,
        # A list, not a dict by slug: redaction hides values, never keys.
        "tenant_pods": [
            {"tenant": slug, "pods": holding_evidence(own)[:MEMBERS_SHOWN]}
            for slug, own in shared.items()
        ],
        "platform_gpu_holdings": platform_pods,
        "attribution": "none: DCGM-Exporter cannot attribute a shared GPU's usage per pod",
    }
    env = sorted({pod_ref(h.pod) for own in shared.values() for h in own if h.through_env})
    if env:
        evidence["env_access_pods"] = env[:MEMBERS_SHOWN]
        evidence["attribution"] += (
            "; pods taking GPUs through NVIDIA_VISIBLE_DEVICES are never named: the exporter "
            "maps usage through the kubelet's allocations, which do not list them"
        )
    if explained:
        evidence["busy_gpus_explained_by_visible_devices"] = explained
    title = (
        f"GPU usage on node {node.name} ({', '.join(modes)}) cannot be attributed per "
        f"workload: tenants {', '.join(shared)}"
    )
    return node_draft(
        "ATTR-002", node, inputs=inputs, tenants=shared, evidence=evidence, title=title
    )
