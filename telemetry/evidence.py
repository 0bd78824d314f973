"""What a cluster's telemetry says, for the checks: the pure type telemetry.facts fills and
posture.inputs carries. PURE."""

from __future__ import annotations

from dataclasses import dataclass, field

from telemetry.busy_count import CountedHijack
from telemetry.exporter_labels import UnknownPodLabel
from telemetry.hijack import Hijack, SilentNode, UnmappedNode
from telemetry.leak import Handover


@dataclass(frozen=True)
class TelemetryFacts:
    """`sampled` is False when the cluster never sent any telemetry: every GPU node is then
    silent (ATTR-003, one action for the cluster), nothing else is judged from samples, and
    the cluster page says its hijack detection has no telemetry."""

    sampled: bool = False
    # Busy runs judged by device: the product knows which GPU no scheduled pod holds.
    hijacks: tuple[Hijack, ...] = ()
    # Nodes whose GPUs were busy beyond what their scheduled pods can occupy, judged by count:
    # which GPUs are unheld is unknown, so one verdict per node (telemetry.busy_count).
    counted_hijacks: tuple[CountedHijack, ...] = ()
    # Busy runs on hosts the last inventory does not list: nobody known holds them (ATTR-002).
    unknown_hosts: tuple[Hijack, ...] = ()
    silent_nodes: tuple[SilentNode, ...] = ()
    handovers: tuple[Handover, ...] = ()
    # Nodes whose busy GPUs are attributed by count only (ATTR-002 says so).
    unmapped_nodes: tuple[UnmappedNode, ...] = ()
    # Busy runs no allocation holds that pods holding the GPU through NVIDIA_VISIBLE_DEVICES
    # explain (the node honours it): no ATTR-001; ATTR-002's evidence names them.
    env_explained: tuple[Hijack, ...] = ()
    # GPUs whose samples name a pod the inventory does not list: usage nobody is verified to
    # hold (ATTR-002; booked at no confidence, telemetry.attribution).
    unknown_pod_labels: tuple[UnknownPodLabel, ...] = ()
    settings: dict[str, object] = field(default_factory=dict)  # thresholds, for the evidence
