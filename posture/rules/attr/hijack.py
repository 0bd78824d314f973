"""ATTR-001: a GPU busy with no scheduled workload on it (from telemetry.facts): one finding
per GPU where the product knows which GPU no pod holds, one per node where it judged by count
(posture.rules.attr.hijack_count)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from posture.inputs import PostureInputs
from posture.rules.attr.hijack_count import counted_draft
from posture.rules.attr.hijack_reach import env_reach
from posture.rules.common import tenants_on_node
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
    "running outside the scheduler, on a GPU the platform believes idle. Where the "
    "exporter names no pod per GPU (its Kubernetes mapping off, time-sliced or MPS GPUs, "
    "HAMi shares on unnamed GPUs), busy GPUs are counted against what the node's scheduled "
    "pods can occupy: the finding is then the node's (key `by-count`), its exposure the GPUs "
    "beyond, the busy GPUs its candidates, which of them are unheld unknown.",
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
        if h.labelled_elsewhere:
            # The labels that made the GPU look held, and where those pods really run.
            evidence["labels_named"] = [{"pod": p, "runs_on": n} for p, n in h.labelled_elsewhere]
        busy = f"GPU {where} on {h.hostname} busy {minutes} min" + (
            "" if h.continuous else f" (in all {h.sample_count} samples, up to {_gap(h)} min apart)"
        )
        title = f"{busy} with no scheduled workload"
        reach = env_reach(inputs, h.hostname, h.uuid, h.gi_id)
        if reach:
            # A hold through NVIDIA_VISIBLE_DEVICES that telemetry matched to this GPU on a
            # node that honours it explains the run (no ATTR-001: POD-011 is that finding).
            # What is left cannot be verified: the node may not honour the variable, or the
            # pod names MIG or index devices the samples cannot be matched to. Still the
            # hijack signature (T1496.001), with the suspect named.
            evidence["reached_through_visible_devices"] = reach
            if all(r.get("which_instance") == "unknown" for r in reach):
                # Pods naming MIG UUIDs, which the samples never carry: maybe this instance.
                title = (
                    f"{busy} with no allocation; {len(reach)} pod(s) naming MIG devices may "
                    "reach it through NVIDIA_VISIBLE_DEVICES"
                )
            else:
                title = f"{title}; {len(reach)} pod(s) may reach it through NVIDIA_VISIBLE_DEVICES"
        key = f"ATTR-001:{h.uuid}:{h.gi_id}"
        # One GPU: every tenant on its node is suspect, and exposed to what runs there.
        yield node_draft(
            "ATTR-001",
            node_named(inputs, h.hostname),
            inputs=inputs,
            tenants=tenants_on_node(inputs, h.hostname),
            evidence=evidence,
            key=key,
            title=title,
            exposure=1,
        )
    # Judged by count (which busy GPU is unheld unknown): one finding per node.
    for counted in inputs.telemetry.counted_hijacks:
        yield counted_draft(inputs, counted)


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
