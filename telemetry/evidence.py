"""What a cluster's telemetry says, for the checks: the pure type telemetry.facts fills and
posture.inputs carries. PURE."""

from __future__ import annotations

from dataclasses import dataclass, field

from telemetry.hijack import Hijack, SilentNode
from telemetry.leak import Handover
from telemetry.unmapped import UnmappedNode


@dataclass(frozen=True)
class TelemetryFacts:
    """`sampled` is False when the cluster never sent any telemetry: the telemetry checks then
    have nothing to judge (the cluster page says so)."""

    sampled: bool = False
    hijacks: tuple[Hijack, ...] = ()
    silent_nodes: tuple[SilentNode, ...] = ()
    handovers: tuple[Handover, ...] = ()
    # GPU nodes whose exporter names no pod while pods hold GPUs there (ATTR-002).
    unmapped_nodes: tuple[UnmappedNode, ...] = ()
    settings: dict[str, object] = field(default_factory=dict)  # thresholds, for the evidence
