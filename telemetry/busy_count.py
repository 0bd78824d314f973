"""ATTR-001 judged by count: one verdict per node, not one per GPU. PURE.

Where the exporter names no pod on a node (its Kubernetes mapping off, a scrape that drops the
labels), where the node's GPUs are time-sliced or MPS-shared, or where HAMi shares on it name
no device, a busy GPU is told from a hijack only by counting: more GPUs busy at once than the
node's scheduled pods can occupy, and some run outside the scheduler. Which ones is unknown.
So the product knows one fact of the node ("N of its GPUs are busy beyond what its pods can
occupy"), not one per GPU: that is one finding (one cause, one action: find the process on the
node), its exposure the excess, and the busy GPUs are its candidates. A GPU judged by device
(the exporter names the pods per GPU, or no pod can occupy any) stays a finding of its own:
there the product knows which GPU is unheld (telemetry.hijack.Hijack)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from telemetry.hijack import Hijack

# (node, time) -> (GPUs busy then, GPUs the node's scheduled pods can occupy then)
Moments = Mapping[tuple[str, datetime], tuple[int, int]]


@dataclass(frozen=True)
class CountedHijack:
    """A node whose GPUs were busy beyond what its scheduled pods can occupy, for longer than
    the window: `runs` are the candidates (each busy GPU's run, judged_by_count), any of which
    may be a pod's; at `at`, the moment of the largest excess while they ran, `busy` GPUs were
    busy and its pods could occupy `held`."""

    node: str
    runs: tuple[Hijack, ...]  # sorted by device
    busy: int
    held: int
    at: datetime

    @property
    def excess(self) -> int:
        """At least this many of the busy GPUs ran outside the scheduler then."""
        return self.busy - self.held

    @property
    def start(self) -> datetime:
        return min(r.start for r in self.runs)

    @property
    def end(self) -> datetime:
        return max(r.end for r in self.runs)


def counted_by_node(
    hijacks: Iterable[Hijack], moments: Moments
) -> tuple[list[Hijack], list[CountedHijack]]:
    """The runs judged by device as they are, and those judged by count joined per node."""
    by_device: list[Hijack] = []
    by_node: dict[str, list[Hijack]] = defaultdict(list)
    for h in hijacks:
        if h.judged_by_count:
            by_node[h.hostname].append(h)
        else:
            by_device.append(h)
    counted = [
        CountedHijack(node, tuple(sorted(runs, key=_order)), *_peak(node, runs, moments))
        for node, runs in sorted(by_node.items())
    ]
    return by_device, counted


def _order(h: Hijack) -> tuple:
    return (h.device, h.start)


def _peak(node: str, runs: list[Hijack], moments: Moments) -> tuple[int, int, datetime]:
    """(busy, held, at) at the moment of the largest excess while one of the runs went on
    (the earliest such moment on a tie). Every point of a run judged by count is such a
    moment, with more busy than held: the count is what made it unexplained."""
    spans = [(r.start, r.end) for r in runs]
    best: tuple[int, int, datetime] | None = None
    for (host, at), (busy, held) in moments.items():
        if host != node or busy <= held or not any(a <= at <= b for a, b in spans):
            continue
        if best is None or (busy - held, best[2]) > (best[0] - best[1], at):
            best = (busy, held, at)
    if best is None:
        # Not reached (see above); were it, the least a count judgement means: one beyond.
        return len(runs), len(runs) - 1, min(a for a, _ in spans)
    return best
