"""ATTR-001 (a busy GPU no scheduled workload explains), ATTR-003 (a GPU node without
telemetry) and LEAK-001 (a GPU passed between tenants without a recorded reset), from the
facts telemetry.facts works out of DCGM-Exporter samples, the inventory and attestations."""

from __future__ import annotations

from collections.abc import Iterator

from posture.inputs import PostureInputs
from posture.rules.common import per_tenant, tenants_on_node
from posture.rules.registry import FindingDraft, check


def _node_draft(check_id: str, node: str, key: str, evidence: dict, title: str):  # type: ignore[no-untyped-def]
    def make(slug: str | None) -> FindingDraft:
        return FindingDraft(
            check_id=check_id, tenant=slug, subject_kind="Node", subject_namespace="",
            subject_name=node, evidence=evidence, key=key, title=title,
        )  # fmt: skip

    return make


@check(id="ATTR-001", title="GPU busy with no scheduled workload on it (possible hijacking)",
       severity="critical", scope="node",
       rationale="Sustained GPU utilisation that no scheduled pod explains is the signature "
                 "of compute hijacking (ATT&CK T1496.001): a miner or a stolen workload "
                 "running outside the scheduler, on a GPU the platform believes idle.",
       remediation="Find the process on the node (`nvidia-smi --query-compute-apps=pid,"
                   "process_name,used_memory --format=csv`), then its container or host "
                   "service; cordon the node and preserve evidence before killing it. Close "
                   "the path it came in by (an exposed notebook, a static key, a privileged "
                   "pod) and rotate what it could read.",
       mappings=("ATT&CK:T1496.001", "CSF:DE.CM-09", "SP800-53:SI-4"))  # fmt: skip
def unexplained_gpu_use(inputs: PostureInputs) -> Iterator[FindingDraft]:
    settings = inputs.telemetry.settings
    for h in inputs.telemetry.hijacks:
        minutes = round((h.end - h.start).total_seconds() / 60)
        where = f"{h.uuid}" + (f" MIG instance {h.gi_id}" if h.gi_id else "")
        evidence = {
            "node": h.hostname, "gpu_uuid": h.uuid, "mig_instance": h.gi_id or None,
            "start": h.start.isoformat(), "end": h.end.isoformat(), "minutes": minutes,
            "mean_busy_percent": round(h.mean_busy, 1), "peak_busy_percent": round(h.peak_busy, 1),
            "samples": [
                {"time": t.isoformat(), "busy_percent": round(b, 1)} for t, b in h.evidence
            ],
            "threshold_percent": settings.get("threshold_percent"),
            "window_minutes": settings.get("window_minutes"),
            "held_by": "no scheduled pod in the last inventory holds this GPU",
        }  # fmt: skip
        title = f"GPU {where} on {h.hostname} busy {minutes} min with no scheduled workload"
        key = f"ATTR-001:{h.uuid}:{h.gi_id}"
        make = _node_draft("ATTR-001", h.hostname, key, evidence, title)
        yield from per_tenant(tenants_on_node(inputs, h.hostname), make)


@check(id="ATTR-003", title="GPU node sends no telemetry",
       severity="medium", scope="node",
       rationale="Without DCGM-Exporter samples from a GPU node, hijacking and idle allocation "
                 "there go unseen, and its usage cannot be charged to anyone.",
       remediation="Check the dcgm-exporter pod on the node (GPU Operator: `dcgmExporter."
                   "enabled`), its ServiceMonitor or scrape config, and that the node is not "
                   "tainted against it.",
       mappings=("CSF:DE.CM-09", "SP800-53:AU-12"))  # fmt: skip
def silent_gpu_node(inputs: PostureInputs) -> Iterator[FindingDraft]:
    minutes = inputs.telemetry.settings.get("silent_minutes")
    for silent in inputs.telemetry.silent_nodes:
        last = silent.last_sample.isoformat() if silent.last_sample else None
        evidence = {"node": silent.node, "last_sample": last, "silent_after_minutes": minutes}
        title = f"GPU node {silent.node} has sent no telemetry " + (
            f"since {last[:16]}" if last else "at all"
        )
        make = _node_draft("ATTR-003", silent.node, "ATTR-003", evidence, title)
        yield from per_tenant(tenants_on_node(inputs, silent.node), make)


@check(id="LEAK-001", title="GPU passed between tenants without a recorded reset",
       severity="high", scope="node",
       rationale="An exclusive GPU keeps memory and state from its last workload until it is "
                 "reset; the next tenant can read what the previous one left (LeftoverLocals-"
                 "type residue). A recorded reset between tenants is the evidence it was wiped.",
       remediation="Reset the GPU between tenants (`nvidia-smi --gpu-reset -i <uuid>` with the "
                   "node drained, a reboot, or recycling the VM) and record it as a reset "
                   "attestation (`POST /api/v1/reset-attestations/` or the utilisation page).",
       mappings=("SP800-53:SC-4", "NVIDIA-AI-Cloud:SEC21"))  # fmt: skip
def unattested_handover(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for h in inputs.telemetry.handovers:
        evidence = {
            "node": h.node, "gpu_uuid": h.device, "previous_tenant": h.previous_tenant,
            "next_tenant": h.next_tenant, "previous_end": h.previous_end.isoformat(),
            "next_start": h.next_start.isoformat(),
            "looked_for": "a reset attestation of this GPU or node between the two",
        }  # fmt: skip
        title = (
            f"GPU {h.device} on {h.node} went from {h.previous_tenant} to {h.next_tenant} "
            "without a recorded reset"
        )
        # One finding per GPU and pair of tenants: a re-read of the same history (or the same
        # two tenants trading the GPU again) updates it rather than opening another.
        key = f"LEAK-001:{h.device}:{h.previous_tenant}>{h.next_tenant}"
        # Both tenants are concerned: one's residue, the other's exposure to it.
        for slug in sorted({h.previous_tenant, h.next_tenant}):
            if slug in inputs.tenants_by_slug:
                yield _node_draft("LEAK-001", h.node, key, evidence, title)(slug)
