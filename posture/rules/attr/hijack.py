"""ATTR-001: a GPU busy with no scheduled workload on it (from telemetry.facts)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from posture.inputs import PostureInputs
from posture.rules.common import nodes_by_name, pod_ref, tenants_on_node
from posture.rules.env_holdings import env_accesses
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import node_draft, node_named
from telemetry.hijack import MAX_GAP, Hijack

GAP_MINUTES = round(MAX_GAP.total_seconds() / 60)  # samples further apart: continuity unseen


@check(
    id="ATTR-001",
    title="GPU busy with no scheduled workload on it (possible hijacking)",
    severity="critical",
    scope="node",
    rationale="Sustained GPU utilisation that no scheduled pod explains is the signature "
    "of compute hijacking (ATT&CK T1496.001): a miner or a stolen workload "
    "running outside the scheduler, on a GPU the platform believes idle.",
    remediation="Find the process on the node (`nvidia-smi --query-compute-apps=pid,"
    "process_name,used_memory --format=csv`), then its container or host "
    "service; cordon the node and preserve evidence before killing it. Close "
    "the path it came in by (an exposed notebook, a static key, a privileged "
    "pod) and rotate what it could read.",
    mappings=("ATT&CK:T1496.001", "CSF 2.0:DE.CM-09", "SP800-53:SI-4"),
    severity_rule="Critical whether the GPU was seen busy throughout (no two samples more "
    f"than {GAP_MINUTES} min apart) or every sample over the window was busy with no workload "
    "but some lie further apart: a GPU busy at every look with nothing scheduled on it is the "
    "signature either way; the evidence says whether it stayed busy between samples was "
    "observed (continuity, sample_count, largest_gap_minutes).",
)
def unexplained_gpu_use(inputs: PostureInputs) -> Iterator[FindingDraft]:
    settings = inputs.telemetry.settings
    for h in inputs.telemetry.hijacks:
        minutes = round((h.end - h.start).total_seconds() / 60)
        where = f"{h.uuid}" + (f" MIG instance {h.gi_id}" if h.gi_id else "")
        evidence = {
            "node": h.hostname,
            "gpu_uuid": h.uuid,
            "mig_instance": h.gi_id or None,
            "start": h.start.isoformat(),
            "end": h.end.isoformat(),
            "minutes": minutes,
            "mean_busy_percent": round(h.mean_busy, 1),
            "peak_busy_percent": round(h.peak_busy, 1),
            "samples": [
                {"time": t.isoformat(), "busy_percent": round(b, 1)} for t, b in h.evidence
            ],
            "threshold_percent": settings.get("threshold_percent"),
            "window_minutes": settings.get("window_minutes"),
            "held_by": h.held_note or "no scheduled pod in the last inventory holds this GPU",
        }
        evidence |= _continuity(h)
        busy = f"GPU {where} on {h.hostname} busy {minutes} min" + (
            "" if h.continuous else f" (in all {h.sample_count} samples, up to {_gap(h)} min apart)"
        )
        title = f"{busy} {_unheld(h)}"
        reach = _env_reach(inputs, h.hostname, h.uuid, h.gi_id)
        if reach:
            # A hold through NVIDIA_VISIBLE_DEVICES that telemetry matched to this GPU on a
            # node that honours it explains the run (no ATTR-001: POD-011 is that finding).
            # What is left cannot be verified: the node may not honour the variable, or the
            # pod names MIG or index devices the samples cannot be matched to. Still the
            # hijack signature (T1496.001), with the suspect named.
            evidence["reached_through_visible_devices"] = reach
            if all(r.get("which_instance") == "unknown" for r in reach):
                # Pods naming MIG UUIDs, which the samples never carry: maybe this instance.
                # (Judged by count, the title keeps saying so.)
                title = (
                    f"{title if h.judged_by_count else busy + ' with no allocation'}; "
                    f"{len(reach)} pod(s) naming MIG devices may reach it through "
                    "NVIDIA_VISIBLE_DEVICES"
                )
            else:
                title = f"{title}; {len(reach)} pod(s) may reach it through NVIDIA_VISIBLE_DEVICES"
        key = f"ATTR-001:{h.uuid}:{h.gi_id}"
        # One GPU: every tenant on its node is suspect, and exposed to what runs there.
        yield node_draft(
            "ATTR-001",
            node_named(inputs, h.hostname),
            tenants=tenants_on_node(inputs, h.hostname),
            evidence=evidence,
            key=key,
            title=title,
            exposure=1,
        )


def _continuity(h: Hijack) -> dict[str, Any]:
    """Whether the GPU was seen busy throughout, and on how many samples how far apart."""
    if h.continuous:
        said = f"observed: no two samples of the run more than {GAP_MINUTES} min apart"
    else:
        said = (
            f"not observed: all {h.sample_count} samples from {h.start.isoformat()} to "
            f"{h.end.isoformat()} were busy with no scheduled workload, but some lie up to "
            f"{_gap(h)} min apart (over {GAP_MINUTES} min), so that the GPU stayed busy "
            "between them was not seen; ingest or scrape more often to tell"
        )
    return {
        "continuity": said,
        "sample_count": h.sample_count,
        "largest_gap_minutes": _gap(h),
    }


def _gap(h: Hijack) -> float:
    return round(h.largest_gap.total_seconds() / 60, 1)


def _unheld(h: Hijack) -> str:
    """What the title can say of the GPU's holders. Where telemetry judged the node's busy
    GPUs by count (its exporter names no pod, its GPUs are time-sliced or MPS-shared, or HAMi
    shares whose devices no annotation names), more GPUs were busy than its scheduled pods can
    occupy, but not which one is unheld: the title does not claim this one has no workload
    (held_by says how it was judged)."""
    if h.judged_by_count:
        return "while more of the node's GPUs were busy than its scheduled pods can occupy"
    return "with no scheduled workload"


def _env_reach(
    inputs: PostureInputs, hostname: str, uuid: str, gi_id: str = ""
) -> list[dict[str, Any]]:
    """Tenant containers whose NVIDIA_VISIBLE_DEVICES reaches the busy GPU, where the node
    honours it or may (posture.rules.env_holdings): `all`, its UUID, or an index we cannot
    tell from it. A telemetry GPU named by index only is matched by any index. A busy MIG
    instance (`gi_id`) may be any MIG UUID the variable names: DCGM reports instances by their
    parent's UUID and GPU_I_ID only, so those are `which_instance: unknown`."""
    node = nodes_by_name(inputs).get(hostname)
    if node is None:
        return []
    found = []
    for access in env_accesses(inputs, node):
        if access.honoured is False or access.devices == ():
            continue
        mig = bool(gi_id) and any(d.startswith("MIG-") for d in access.devices or ())
        certain = access.every_device or access.devices is None or _may_be(uuid, access.devices)
        if not (certain or mig):
            continue
        found.append(
            {
                "pod": pod_ref(access.pod),
                "tenant": access.tenant.slug,
                "container": access.container.name,
                "value": access.found.get("value"),
                "field": access.found["field"],
                "node_honours_it": "yes" if access.honoured else "unverified",
                **({} if certain else {"which_instance": "unknown"}),
            }
        )
    return found


def _may_be(uuid: str, devices: tuple[str, ...]) -> bool:
    """Whether a device list may name the GPU: its UUID, or an index whose UUID is unknown."""
    return uuid in devices or any(d.startswith("gpu-index:") for d in devices)
