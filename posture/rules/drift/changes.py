"""DRIFT-001..003, DRIFT-006: what changed in the GPU configuration, and in the RBAC reaching
the GPU stack, between two good syncs.

Each recorded drift event stays in its finding for the drift window (a setting), so a change is
seen and acknowledged, not lost when the next quiet sync comes round. A finding is one cause on
one subject (DESIGN §5): the changes of one object within the window are one finding that lists
them, newest first. It resolves when the last of them leaves the window, and a later change of
the object reopens it (same finding, first seen kept).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime

from posture.inputs import DriftEventInfo, PostureInputs
from posture.rules.common import tenants_on_node
from posture.rules.drift.component_nodes import component_nodes
from posture.rules.registry import MEMBERS_SHOWN, FindingDraft, check
from posture.rules.subjects import node_draft, node_named, subject_draft

MAPPINGS = ("SP800-53:CM-3",)
# The checks whose finding lists its object's changes (`changes`, newest first).
CHANGE_CHECKS = frozenset({"DRIFT-001", "DRIFT-002", "DRIFT-003", "DRIFT-006"})
# kind, namespace, name of the object that changed, and the finding's key: the device-plugin
# config key changed in a ConfigMap (each key is the config of other nodes: its own cause).
Subject = tuple[str, str, str, str]


def _by_subject(inputs: PostureInputs, check_id: str) -> dict[Subject, list[DriftEventInfo]]:
    """The check's drift events in the window by the object they changed, newest first."""
    found: dict[Subject, list[DriftEventInfo]] = {}
    for event in reversed(inputs.drift_events):  # the read model gives them oldest first
        change = event.change
        if change.check_id == check_id:
            key = change.after.get("key") or change.before.get("key") or ""
            if change.subject_kind != "ConfigMap" or not isinstance(key, str):
                key = ""
            subject = (change.subject_kind, change.subject_namespace, change.subject_name, key)
            found.setdefault(subject, []).append(event)
    return found


def _drafts(inputs: PostureInputs, check_id: str, gpu_wide: bool = False) -> Iterator[FindingDraft]:
    """One finding per object that changed, for every tenant on the nodes its changes reach
    (DRIFT-002: the GPU nodes the component runs on or manages, component_nodes; `gpu_wide`:
    a change that reaches every GPU node, so every tenant on one)."""
    gpu_nodes = [n.name for n in inputs.snapshot.nodes if n.is_gpu_node]
    for (kind, namespace, name, key), events in sorted(_by_subject(inputs, check_id).items()):
        nodes: dict[str, None] = {}  # ordered set: every node any change reaches
        basis = ""
        for event in events:
            reached: Sequence[str] = gpu_nodes if gpu_wide else event.change.nodes
            if check_id == "DRIFT-002":
                reached, basis = component_nodes(inputs, event.change)
            nodes.update(dict.fromkeys(reached))
        tenants = sorted({t.slug for node in nodes for t in tenants_on_node(inputs, node)})
        facts = {
            "tenants": tenants,
            "evidence": _evidence(events, tenants, list(nodes), basis),
            "title": _title(events),
            "key": key,
        }
        if kind == "Node":
            yield node_draft(check_id, node_named(inputs, name), inputs=inputs, **facts)
        else:
            yield subject_draft(
                check_id, kind=kind, namespace=namespace, name=name, exposure=len(nodes), **facts
            )


def _title(events: list[DriftEventInfo]) -> str:
    latest = events[0].change.summary
    if len(events) == 1:
        return latest
    return f"{latest} ({len(events)} changes in the drift window)"


def _evidence(
    events: list[DriftEventInfo], tenants: list[str], nodes: Sequence[str], basis: str
) -> dict[str, object]:
    """The latest change at the top (as one change was shown before), and every change in the
    window newest first, each with what it was before and after and when it was seen."""
    latest = events[0]
    evidence: dict[str, object] = {
        "detected_at": latest.detected_at,
        "sync_run": latest.sync_run,
        "change": latest.change.summary,
        "before": latest.change.before,
        "after": latest.change.after,
        "changes": [_change(e) for e in events[:MEMBERS_SHOWN]],
        "change_count": len(events),
        "nodes_affected": list(nodes),
        "tenants_on_those_nodes": tenants,
    }
    if basis:  # how the nodes are known, where the change does not name them itself
        evidence["nodes_basis"] = basis
    return evidence


def change_after(check_id: str, evidence: object, since: datetime | None) -> dict | None:
    """The newest change a finding of CHANGE_CHECKS lists when it was detected after `since`
    (when its risk was accepted: what was accepted is the changes seen then, not later ones,
    DESIGN §5), else None; None too for another check, or `since` unknown (None)."""
    if since is None or check_id not in CHANGE_CHECKS or not isinstance(evidence, Mapping):
        return None
    changes = evidence.get("changes")
    if not changes or not isinstance(changes[0], Mapping):
        return None
    newest = changes[0]
    try:
        detected = datetime.fromisoformat(str(newest.get("detected_at")))
    except ValueError:
        return None
    if detected.tzinfo is None or detected <= since:
        return None
    return dict(newest)


def _change(event: DriftEventInfo) -> dict[str, object]:
    return {
        "drift_event": event.id,
        "detected_at": event.detected_at,
        "sync_run": event.sync_run,
        "change": event.change.summary,
        "before": event.change.before,
        "after": event.change.after,
    }


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
        "Confirm the change with the platform team; restore the class taint (`kubectl taint "
        "nodes NODE gpuposture.io/trust-class=CLASS:NoSchedule --overwrite`) or label if "
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
