"""ATTR-001 judged by count: one finding per node (telemetry.busy_count.CountedHijack).

Where the exporter names no pod per GPU (its Kubernetes mapping off, a scrape without pod
labels, a time-sliced or MPS node, HAMi shares on unnamed GPUs), the product knows that N of
the node's GPUs were busy beyond what its scheduled pods can occupy, never which: one cause
(something runs on the node outside the scheduler), closed by one action (find the process
there). Its exposure is that excess (DESIGN §6: risk scales with what the cause spans), not
every busy GPU; the busy GPUs are named as candidates. It affects the tenants with pods on
the node, as the per-GPU finding does. It covers the per-GPU findings earlier versions filed
for each candidate (key `ATTR-001:<uuid>:<gi>`), so their acceptance is carried when all of
them were accepted, or kept as no longer applying (posture.acceptance_carry)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from posture.inputs import PostureInputs
from posture.rules.attr.hijack_reach import env_reach
from posture.rules.common import tenants_on_node
from posture.rules.registry import MEMBERS_SHOWN, FindingDraft
from posture.rules.subjects import node_draft, node_named
from telemetry.busy_count import CountedHijack
from telemetry.hijack import Hijack

KEY = "by-count"  # beside the per-GPU findings' ATTR-001:<uuid>:<gi> on the same node


def counted_draft(inputs: PostureInputs, counted: CountedHijack) -> FindingDraft:
    settings = inputs.telemetry.settings
    node, runs = counted.node, counted.runs
    excess = counted.excess
    evidence: dict[str, Any] = {
        "node": node,
        "judged": "by count",
        "busy_gpus": counted.busy,
        "held_gpus": counted.held,
        "excess": excess,
        "at": counted.at.isoformat(),
        "which_gpus_unheld": (
            f"unknown: at least {excess} of the {counted.busy} GPUs busy then ran outside the "
            "scheduler, but the samples do not say which (any candidate may be a pod's)"
        ),
        "candidate_gpus": [_device(r) for r in runs],
        "candidates": [_candidate(r) for r in runs[:MEMBERS_SHOWN]],
        "candidate_count": len(runs),
        "start": counted.start.isoformat(),
        "end": counted.end.isoformat(),
        "minutes": _minutes(counted.start, counted.end),
        "threshold_percent": settings.get("threshold_percent"),
        "window_minutes": settings.get("window_minutes"),
        # Each run says why its node was judged by count; HAMi or MIG notes may add to it.
        "held_by": "; ".join(dict.fromkeys(r.held_note for r in runs if r.held_note)),
    }
    beyond = "runs" if excess == 1 else "run"
    title = (
        f"{counted.busy} GPUs busy on {node} while its scheduled pods can occupy "
        f"{counted.held}: at least {excess} {beyond} outside the scheduler (which is unknown)"
    )
    reach = _reach(inputs, runs)
    if reach:
        # Suspects, not holders: a hold that explains a GPU's use leaves it out of the count
        # (telemetry.facts); these cannot be verified (posture.rules.attr.hijack says how).
        evidence["reached_through_visible_devices"] = reach
        title += f"; {len(reach)} pod(s) may reach them through NVIDIA_VISIBLE_DEVICES"
    return node_draft(
        "ATTR-001",
        node_named(inputs, node),
        inputs=inputs,
        # Something runs on the node outside the scheduler: every tenant on it is suspect,
        # and exposed to it.
        tenants=tenants_on_node(inputs, node),
        evidence=evidence,
        key=KEY,
        title=title,
        exposure=excess,
        covers=tuple((("Node", "", node, f"ATTR-001:{r.uuid}:{r.gi_id}"),) for r in runs),
    )


def _device(r: Hijack) -> str:
    return r.uuid + (f" MIG instance {r.gi_id}" if r.gi_id else "")


def _candidate(r: Hijack) -> dict[str, Any]:
    """One busy GPU's run: when, how busy, and whether it was seen busy throughout."""
    return {
        "gpu_uuid": r.uuid,
        "mig_instance": r.gi_id or None,
        "start": r.start.isoformat(),
        "end": r.end.isoformat(),
        "minutes": _minutes(r.start, r.end),
        "mean_busy_percent": round(r.mean_busy, 1),
        "peak_busy_percent": round(r.peak_busy, 1),
        "continuity": "observed" if r.continuous else "not observed",
        "sample_count": r.sample_count,
        "largest_gap_minutes": round(r.largest_gap.total_seconds() / 60, 1),
    }


def _minutes(start: datetime, end: datetime) -> int:
    return round((end - start).total_seconds() / 60)


def _reach(inputs: PostureInputs, runs: tuple[Hijack, ...]) -> list[dict[str, Any]]:
    """The containers that may reach any candidate, each once."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for r in runs:
        for access in env_reach(inputs, r.hostname, r.uuid, r.gi_id):
            found.setdefault((access["pod"], access["container"]), access)
    return list(found.values())
