"""LEAK-001: a GPU passed between tenants without a recorded reset (from telemetry.facts)."""

from __future__ import annotations

from collections.abc import Iterator

from posture.inputs import PostureInputs
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import node_draft, node_named
from tenants.mapping import UNCLASSIFIED


@check(
    id="LEAK-001",
    title="GPU passed between tenants without a recorded reset",
    severity="high",
    scope="node",
    rationale="An exclusive GPU keeps memory and state from its last workload until it is "
    "reset; the next tenant can read what the previous one left (LeftoverLocals-"
    "type residue). A MIG GPU instance is the same in time: MIG isolates instances that run "
    "side by side, and NVIDIA's MIG user guide promises no clearing of an instance's memory "
    "between one user and the next, so each instance passed between tenants is judged as a "
    "whole GPU is. A recorded reset between tenants is the evidence it was wiped.",
    remediation="Reset the GPU between tenants (`nvidia-smi --gpu-reset -i <uuid>` with the "
    "node drained, a reboot, or recycling the VM; on a MIG GPU the reset needs every GPU "
    "instance destroyed first and clears them all) and record it as a reset attestation of "
    "the GPU's UUID (the MIG instance's parent) or of the node "
    "(`POST /api/v1/reset-attestations/` or the utilisation page).",
    mappings=("SP800-53:SC-4", "NVIDIA-AI-Cloud:SEC21"),
)
def unattested_handover(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for h in inputs.telemetry.handovers:
        # A namespace nobody claims holds a GPU as `unclassified:<namespace>` (telemetry.facts):
        # the unclassified tenant's, shown as such. Its namespace is named only where both sides
        # are unclassified (no tenant viewer sees that finding): a tenant must not learn names.
        previous, next_ = _shown(h.previous_tenant), _shown(h.next_tenant)
        evidence: dict[str, object] = {
            "node": h.node,
            "gpu_uuid": h.device,
            "previous_tenant": previous,
            "next_tenant": next_,
            "previous_end": h.previous_end.isoformat(),
            "next_start": h.next_start.isoformat(),
            "looked_for": "a reset attestation of this GPU or node between the two",
        }
        device = f"GPU {h.device}"
        if h.gpu_instance:
            # DCGM-Exporter reports a MIG instance under its parent's UUID with its GPU_I_ID.
            evidence["gpu_instance_id"] = h.gpu_instance
            evidence["looked_for"] = (
                "a reset attestation of the parent GPU or node between the two (a GPU reset "
                "needs every MIG instance destroyed and clears them all)"
            )
            device = f"MIG GPU instance {h.gpu_instance} of GPU {h.device}"
        if previous == next_ == UNCLASSIFIED:
            evidence["previous_namespace"] = h.previous_tenant.partition(":")[2]
            evidence["next_namespace"] = h.next_tenant.partition(":")[2]
        title = f"{device} on {h.node} went from {previous} to {next_} without a recorded reset"
        if previous == next_:
            title = (
                f"{device} on {h.node} went between two namespaces nobody claims "
                "without a recorded reset"
            )
        # One finding per GPU and pair of tenants: a re-read of the same history (or the same
        # two tenants trading the GPU again) updates it rather than opening another.
        # A MIG instance is its own device: one finding per instance and pair.
        where = f"{h.device}/gi{h.gpu_instance}" if h.gpu_instance else h.device
        key = f"LEAK-001:{where}:{h.previous_tenant}>{h.next_tenant}"
        # Both tenants are affected: one's residue, the other's exposure to it.
        tenants = sorted({s for s in (previous, next_) if s in inputs.tenants_by_slug})
        node = node_named(inputs, h.node)
        yield node_draft(
            "LEAK-001", node, tenants=tenants, evidence=evidence, key=key, title=title, exposure=1
        )


def _shown(party: str) -> str:
    return party.partition(":")[0]
