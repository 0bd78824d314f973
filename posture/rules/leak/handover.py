"""LEAK-001: a GPU passed between tenants without a recorded reset (from telemetry.facts)."""

from __future__ import annotations

from collections.abc import Iterator

from posture.inputs import PostureInputs
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import node_draft, node_named


@check(
    id="LEAK-001",
    title="GPU passed between tenants without a recorded reset",
    severity="high",
    scope="node",
    rationale="An exclusive GPU keeps memory and state from its last workload until it is "
    "reset; the next tenant can read what the previous one left (LeftoverLocals-"
    "type residue). A recorded reset between tenants is the evidence it was wiped.",
    remediation="Reset the GPU between tenants (`nvidia-smi --gpu-reset -i <uuid>` with the "
    "node drained, a reboot, or recycling the VM) and record it as a reset "
    "attestation (`POST /api/v1/reset-attestations/` or the utilisation page).",
    mappings=("SP800-53:SC-4", "NVIDIA-AI-Cloud:SEC21"),
)
def unattested_handover(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for h in inputs.telemetry.handovers:
        evidence = {
            "node": h.node,
            "gpu_uuid": h.device,
            "previous_tenant": h.previous_tenant,
            "next_tenant": h.next_tenant,
            "previous_end": h.previous_end.isoformat(),
            "next_start": h.next_start.isoformat(),
            "looked_for": "a reset attestation of this GPU or node between the two",
        }
        title = (
            f"GPU {h.device} on {h.node} went from {h.previous_tenant} to {h.next_tenant} "
            "without a recorded reset"
        )
        # One finding per GPU and pair of tenants: a re-read of the same history (or the same
        # two tenants trading the GPU again) updates it rather than opening another.
        key = f"LEAK-001:{h.device}:{h.previous_tenant}>{h.next_tenant}"
        # Both tenants are affected: one's residue, the other's exposure to it.
        # A namespace nobody claims is held as `unclassified:<namespace>`: the unclassified
        # tenant's.
        parties = {p.split(":", 1)[0] for p in (h.previous_tenant, h.next_tenant)}
        tenants = sorted(s for s in parties if s in inputs.tenants_by_slug)
        node = node_named(inputs, h.node)
        yield node_draft(
            "LEAK-001", node, tenants=tenants, evidence=evidence, key=key, title=title, exposure=1
        )
