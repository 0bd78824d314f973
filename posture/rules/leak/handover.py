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
    "type residue). A recorded reset between tenants is the evidence it was wiped.",
    remediation="Reset the GPU between tenants (`nvidia-smi --gpu-reset -i <uuid>` with the "
    "node drained, a reboot, or recycling the VM) and record it as a reset "
    "attestation (`POST /api/v1/reset-attestations/` or the utilisation page).",
    mappings=("SP800-53:SC-4", "NVIDIA-AI-Cloud:SEC21"),
)
def unattested_handover(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for h in inputs.telemetry.handovers:
        # A namespace nobody claims holds a GPU as `unclassified:<namespace>` (telemetry.facts):
        # the unclassified tenant's, shown as such. Its namespace is named only where both sides
        # are unclassified (no tenant viewer sees that finding): a tenant must not learn names.
        previous, next_ = _shown(h.previous_tenant), _shown(h.next_tenant)
        evidence = {
            "node": h.node,
            "gpu_uuid": h.device,
            "previous_tenant": previous,
            "next_tenant": next_,
            "previous_end": h.previous_end.isoformat(),
            "next_start": h.next_start.isoformat(),
            "looked_for": "a reset attestation of this GPU or node between the two",
        }
        if previous == next_ == UNCLASSIFIED:
            evidence["previous_namespace"] = h.previous_tenant.partition(":")[2]
            evidence["next_namespace"] = h.next_tenant.partition(":")[2]
        title = (
            f"GPU {h.device} on {h.node} went from {previous} to {next_} without a recorded reset"
        )
        if previous == next_:
            title = (
                f"GPU {h.device} on {h.node} went between two namespaces nobody claims "
                "without a recorded reset"
            )
        # One finding per GPU and pair of tenants: a re-read of the same history (or the same
        # two tenants trading the GPU again) updates it rather than opening another.
        key = f"LEAK-001:{h.device}:{h.previous_tenant}>{h.next_tenant}"
        # Both tenants are affected: one's residue, the other's exposure to it.
        tenants = sorted({s for s in (previous, next_) if s in inputs.tenants_by_slug})
        node = node_named(inputs, h.node)
        yield node_draft(
            "LEAK-001", node, tenants=tenants, evidence=evidence, key=key, title=title, exposure=1
        )


def _shown(party: str) -> str:
    return party.partition(":")[0]
