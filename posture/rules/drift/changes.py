"""DRIFT-001..003, DRIFT-006: what changed in the GPU configuration, and in the RBAC reaching
the GPU stack, between two good syncs.

Each recorded drift event stays a finding for the drift window (a setting), so a change is
seen and acknowledged, not lost when the next quiet sync comes round.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from posture.inputs import DriftEventInfo, PostureInputs
from posture.rules.common import tenants_on_node
from posture.rules.drift.component_nodes import component_nodes
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import node_draft, node_named, subject_draft

MAPPINGS = ("SP800-53:CM-3",)


def _drafts(inputs: PostureInputs, check_id: str, gpu_wide: bool = False) -> Iterator[FindingDraft]:
    """One finding per drift event, on the object that changed, for every tenant on the
    nodes it reaches (DRIFT-002: the GPU nodes the component runs on or manages,
    component_nodes; `gpu_wide`: a change that reaches every GPU node, so every tenant on
    one)."""
    gpu_nodes = [n.name for n in inputs.snapshot.nodes if n.is_gpu_node]
    for event in inputs.drift_events:
        change = event.change
        if change.check_id != check_id:
            continue
        basis = ""
        nodes: Sequence[str] = gpu_nodes if gpu_wide else change.nodes
        if check_id == "DRIFT-002":
            nodes, basis = component_nodes(inputs, change)
        tenants = sorted({t.slug for node in nodes for t in tenants_on_node(inputs, node)})
        facts = {
            "tenants": tenants,
            "evidence": _evidence(event, tenants, nodes, basis),
            "key": f"drift-event-{event.id}",
            "title": change.summary,
        }
        if change.subject_kind == "Node":
            yield node_draft(check_id, node_named(inputs, change.subject_name), **facts)
        else:
            yield subject_draft(
                check_id,
                kind=change.subject_kind,
                namespace=change.subject_namespace,
                name=change.subject_name,
                exposure=len(nodes),
                **facts,
            )


def _evidence(
    event: DriftEventInfo, tenants: list[str], nodes: Sequence[str], basis: str
) -> dict[str, object]:
    change = event.change
    evidence: dict[str, object] = {
        "detected_at": event.detected_at,
        "sync_run": event.sync_run,
        "change": change.summary,
        "before": change.before,
        "after": change.after,
        "nodes_affected": list(nodes),
        "tenants_on_those_nodes": tenants,
    }
    if basis:  # how the nodes are known, where the change does not name them itself
        evidence["nodes_basis"] = basis
    return evidence


@check(
    id="DRIFT-001",
    title="Time-slicing, MPS or MIG configuration changed since the last sync",
    severity="medium",
    scope="cluster",
    rationale=(
        "The sharing configuration decides which tenants land on one physical GPU and how "
        "isolated they are. A changed device-plugin config (replicas, failRequestsGreaterThan"
        "One, MPS), a changed mig-parted layout or a node switched to another config can turn "
        "exclusive GPUs into shared ones without any tenant noticing."
    ),
    remediation=(
        "Compare before and after in the evidence with the approved change. If it was not "
        "approved, restore the previous device-plugin ConfigMap key or `nvidia.com/mig.config` "
        "label and find who changed it (API server audit log for configmaps and nodes). "
        "Restrict write access to the GPU Operator namespace and node labels to the platform."
    ),
    mappings=MAPPINGS,
)
def drift_sharing(inputs: PostureInputs) -> Iterator[FindingDraft]:
    yield from _drafts(inputs, "DRIFT-001")


@check(
    id="DRIFT-002",
    title="Device plugin or GPU Operator controller changed since the last sync",
    severity="medium",
    scope="cluster",
    rationale=(
        "The device plugin, container toolkit and GPU Operator run privileged on every GPU "
        "node and decide which devices each container gets. An unplanned image or spec change "
        "there is a change to the isolation boundary itself, and a known supply-chain target."
    ),
    remediation=(
        "Check the new images against the release you approved (digest, vendor release "
        "notes, bulletin baseline). Roll back with the GPU Operator Helm values or ClusterPolicy "
        "if it was not planned; pin component images by digest."
    ),
    mappings=MAPPINGS,
)
def drift_components(inputs: PostureInputs) -> Iterator[FindingDraft]:
    yield from _drafts(inputs, "DRIFT-002")


@check(
    id="DRIFT-003",
    title="GPU node labels or taints changed since the last sync",
    severity="low",
    scope="node",
    rationale=(
        "Labels and taints steer which tenants' pods a GPU node accepts. A removed class taint "
        "or an edited pool label can move untrusted workloads onto a sensitive pool."
    ),
    remediation=(
        "Confirm the change with the platform team; restore the class taint "
        "(`kubectl taint nodes NODE gpuposture.io/trust-class=CLASS:NoSchedule`) or label if "
        "it was not intended, and make sure no tenant principal can patch nodes (K8S-003)."
    ),
    mappings=MAPPINGS,
)
def drift_nodes(inputs: PostureInputs) -> Iterator[FindingDraft]:
    yield from _drafts(inputs, "DRIFT-003")


@check(
    id="DRIFT-006",
    title="RBAC reaching the GPU stack changed since the last sync",
    severity="medium",
    scope="cluster",
    rationale=(
        "The GPU Operator's and device plugin's service accounts run privileged pods on every "
        "GPU node, and whoever may patch or update nodes can relabel them into another pool, "
        "drop a class taint or set `nvidia.com/mig.config`. A new binding that names those "
        "service accounts, or a subject that newly holds node-label rights (a new "
        "ClusterRoleBinding, or a role widened under an existing one), changes who controls "
        "every tenant's GPUs, and is how an attacker with RBAC write access persists."
    ),
    remediation=(
        "Compare before and after in the evidence with the change you approved (an operator "
        "upgrade creates its own bindings). If it was not planned, delete the binding or "
        "restore the role, and find who made it in the API server audit log "
        "(`rolebindings`, `clusterrolebindings`, `clusterroles`). Keep RBAC write access "
        "and node writes to the platform's automation (K8S-003, K8S-005)."
    ),
    mappings=MAPPINGS,
)
def drift_gpu_rbac(inputs: PostureInputs) -> Iterator[FindingDraft]:
    yield from _drafts(inputs, "DRIFT-006", gpu_wide=True)
