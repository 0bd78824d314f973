"""LEAK-001: a GPU passed between tenants without a recorded reset: from telemetry (each GPU,
sample by sample) and from sync history (the pod counts of two syncs, at sync granularity)."""

from __future__ import annotations

from collections.abc import Iterator

from inventory.holdings import GPU_PREFIX, UNCLAIMED, WHOLE, HoldingHandover
from posture.inputs import PostureInputs
from posture.rules.leak.sync_evidence import COUNTED, device_evidence, device_of, node_identity
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import node_draft, node_named
from telemetry.leak import Handover
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
    yield from _from_telemetry(inputs)
    yield from _from_sync_history(inputs)


def _from_telemetry(inputs: PostureInputs) -> Iterator[FindingDraft]:
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
            "LEAK-001",
            node,
            inputs=inputs,
            tenants=tenants,
            evidence=evidence,
            key=key,
            title=title,
            exposure=1,
        )


def _from_sync_history(inputs: PostureInputs) -> Iterator[FindingDraft]:
    """Handovers two syncs' holdings make certain (inventory.holdings), where telemetry does
    not already show the same one (same node and tenants, overlapping times, the same GPU where
    sync history names it): its samples place it on a GPU and closer in time. Of a node's whole
    GPUs or MIG instances, which passed is not known, only that some did; a DRA device is
    named. Each previous party whose devices the next one surely received is its own finding
    (several may hand over to one); a handover the counts leave only possible is never
    recorded."""
    latest: dict[str, tuple[str, str, HoldingHandover]] = {}
    for h in inputs.sync_handovers:
        previous, next_ = _holder(inputs, h.previous), _holder(inputs, h.next)
        if previous is None or next_ is None or previous == next_:
            continue  # the platform's GPUs, or one party's own reuse: no handover to judge
        if any(_same(d, h, previous, next_) for d in inputs.telemetry.handovers):
            continue
        # One finding per node, its devices and pair of tenants; the latest is its evidence.
        where = h.node if h.devices.name == WHOLE else f"{h.node}:{h.devices.name}"
        latest[f"LEAK-001:node:{where}:{previous}>{next_}"] = (previous, next_, h)
    for key, (previous_party, next_party, h) in sorted(latest.items()):
        previous, next_ = _shown(previous_party), _shown(next_party)
        evidence: dict[str, object] = {
            "node": h.node,
            "previous_tenant": previous,
            "next_tenant": next_,
            "previous_end": h.previous_end.isoformat(),
            "next_start": h.next_start.isoformat(),
            "previous_gpus": h.previous_gpus,
            "next_gpus": h.next_gpus,
            "gpu_count": h.gpu_count,
            "source": "sync_history",
            "granularity": "sync",
            "gpus_passed_at_least": h.passed,
            **device_evidence(h, previous, next_),
            "counted": COUNTED,
        }
        if h.between:
            # The platform held them after the previous tenant (a burn-in, a validation job):
            # it resets nothing, so the previous tenant's residue is the next one's still.
            evidence["platform_between"] = list(h.between)
            evidence["why"] = (
                f"{evidence['why']}; held by the platform's {', '.join(h.between)} in "
                "between: not a reset"
            )
        evidence["node_identity"] = node_identity(h)
        if previous == next_ == UNCLASSIFIED:
            evidence["previous_namespace"] = previous_party.partition(":")[2]
            evidence["next_namespace"] = next_party.partition(":")[2]
        device = device_of(h)
        title = f"{device} on {h.node} went from {previous} to {next_} without a recorded reset"
        if previous == next_:
            title = (
                f"{device} on {h.node} went between two namespaces nobody claims without a "
                "recorded reset"
            )
        tenants = sorted({s for s in (previous, next_) if s in inputs.tenants_by_slug})
        node = node_named(inputs, h.node)
        # Exposure: the devices that surely passed (a node finding counts GPUs), where
        # telemetry's finding is of one GPU or instance.
        yield node_draft(
            "LEAK-001",
            node,
            inputs=inputs,
            tenants=tenants,
            evidence=evidence,
            key=key,
            title=title,
            exposure=h.passed,
        )


def _holder(inputs: PostureInputs, stored: str) -> str | None:
    """The party a recorded holder is judged as now: a tenant's slug; for a namespace no tenant
    claimed at the sync, its tenant now, `unclassified:<namespace>`, or None (the platform's)."""
    if not stored.startswith(UNCLAIMED):
        return stored
    namespace = stored.removeprefix(UNCLAIMED)
    tenant = inputs.tenant_of_namespace(namespace)
    if tenant is None:
        return None
    return f"{UNCLASSIFIED}:{namespace}" if tenant.slug == UNCLASSIFIED else tenant.slug


def _same(d: Handover, h: HoldingHandover, previous: str, next_: str) -> bool:
    """Telemetry's handover d is sync history's h: same node and tenants, times overlapping,
    and the same GPU where sync history names one (a DRA GPU)."""
    if (d.node, d.previous_tenant, d.next_tenant) != (h.node, previous, next_):
        return False
    if h.devices.name.startswith(GPU_PREFIX) and d.device != h.devices.name:
        return False
    low, high = sorted((d.previous_end, d.next_start))
    return low <= h.next_start and h.previous_end <= high


def _shown(party: str) -> str:
    return party.partition(":")[0]
