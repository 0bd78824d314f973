"""ATTR-002: GPU usage that cannot be attributed per workload: on time-sliced or MPS GPUs, and
on nodes whose DCGM-Exporter names no pod (telemetry.unmapped)."""

from __future__ import annotations

from collections.abc import Iterator

from gpuposture.base.enums import SharingMode
from inventory.snapshot import Node
from posture.inputs import PostureInputs
from posture.rules.common import GpuHolding, gpu_holdings, holding_evidence, sorted_nodes
from posture.rules.registry import MEMBERS_SHOWN, FindingDraft, check
from posture.rules.subjects import node_draft
from telemetry.unmapped import UnmappedNode

UNATTRIBUTABLE_MODES = (SharingMode.TIME_SLICING.value, SharingMode.MPS.value)


@check(
    id="ATTR-002",
    title="GPU utilisation on time-sliced or MPS GPUs cannot be attributed per workload",
    severity="low",
    scope="node",
    rationale=(
        "DCGM-Exporter reads utilisation per physical GPU (or per MIG instance). When a GPU "
        "is time-sliced or shared through MPS its `pod`/`namespace` labels name only one of "
        "the pods holding a replica, or none, so the usage of a tenant's workload cannot be "
        "told apart from its neighbours': chargeback, anomaly detection and compute-hijacking "
        "detection for that tenant carry a low confidence, never a per-pod figure. The same "
        "holds for whole GPUs on a node whose exporter labels no sample with a pod: a busy "
        "GPU there is judged only by counting busy GPUs against the GPUs pods hold."
    ),
    remediation=(
        "Where per-tenant attribution is required, give the tenant whole GPUs or MIG GPU "
        "instances (DCGM reports per `GPU_I_ID`), i.e. a node pool whose "
        "`nvidia.com/device-plugin.config` has no `sharing` section. Otherwise record that "
        "the tenant's GPU usage is attributed per node only, and keep DCGM-Exporter's "
        "Kubernetes mapping on (`DCGM_EXPORTER_KUBERNETES=true`) for the nodes that allow it."
    ),
    mappings=("SP800-53:AU-10",),
)
def unattributable_utilisation(inputs: PostureInputs) -> Iterator[FindingDraft]:
    unmapped = {u.node: u for u in inputs.telemetry.unmapped_nodes}
    for node in sorted_nodes(inputs):
        blind = unmapped.get(node.name)
        shared: dict[str, list[GpuHolding]] = {}
        platform_pods = 0
        for holding in gpu_holdings(inputs, node):
            if holding.mode not in UNATTRIBUTABLE_MODES and blind is None:
                continue
            if holding.tenant is None:
                platform_pods += 1
            else:
                shared.setdefault(holding.tenant.slug, []).append(holding)
        if shared:
            yield _attr_draft(node, dict(sorted(shared.items())), platform_pods, blind)


def _attr_draft(
    node: Node,
    shared: dict[str, list[GpuHolding]],
    platform_pods: int,
    blind: UnmappedNode | None,
) -> FindingDraft:
    """One finding per node, for every tenant holding its shared GPUs (every GPU, where the
    exporter names no pod)."""
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
        "exporter_names_pods": blind is None,
    }
    why = ", ".join(m for m in modes if m in UNATTRIBUTABLE_MODES)
    if blind is not None:
        evidence["attribution"] = "none: " + blind.note()
        why = ", ".join(filter(None, (why, "its exporter names no pod")))
    title = (
        f"GPU usage on node {node.name} ({why}) cannot be attributed per "
        f"workload: tenants {', '.join(shared)}"
    )
    return node_draft("ATTR-002", node, tenants=shared, evidence=evidence, title=title)
