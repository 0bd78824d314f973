"""Time the phases of a sync and a posture run by wrapping the app's functions from outside.

No timing code lives in the app: while a `Phases` is active, the module attributes below are
replaced by wrappers that add their wall time to a named phase, and put back afterwards. A
function the app no longer has (renamed in a refactor) is skipped, so the bench keeps working.
Times are inclusive: a phase's children are part of it.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# (module, attribute, phase label, depth in the printed tree). Order is the printed order.
SYNC_PHASES: tuple[tuple[str, str, str, int], ...] = (
    ("inventory.sources.files", "SnapshotFileSource.read", "read files + json", 1),
    ("inventory.services", "normalise", "normalise", 1),
    ("inventory.services", "snapshot_apply", "apply (transaction)", 1),
    ("inventory.sync", "previous_state", "previous state (drift)", 2),
    ("inventory.sync", "with_host_facts", "host facts", 2),
    ("inventory.sync", "_apply_nodes", "nodes", 2),
    ("inventory.sync", "namespace_owners", "namespace owners", 2),
    ("inventory.sync", "_apply_pods", "pods", 2),
    ("inventory.sync", "_apply_objects", "other objects", 2),
    ("inventory.sync", "detect_drift", "detect drift", 2),
    ("inventory.sync", "record_drift", "record drift", 2),
    # Within nodes, pods and other objects above: the database writes themselves.
    ("inventory.sync_rows", "rows_insert", "of which row inserts", 2),
    ("inventory.sync_rows", "rows_update", "of which row updates", 2),
    # The live path: a full list, or a re-sync by watch.
    ("inventory.sources.kube", "KubeSource.read", "list everything (API)", 1),
    ("inventory.sources.kube", "KubeSource.read_changes", "watch changes (API)", 1),
    ("inventory.services", "delta_apply", "apply the changes (transaction)", 1),
    ("inventory.sync_delta", "previous_state", "previous state (drift)", 2),
    ("inventory.sync_delta", "_apply_objects", "other objects", 2),
    ("inventory.sync_delta", "_rederive_nodes", "re-derive nodes", 2),
    ("inventory.sources.kube", "KubeSource.read_node", "read node (API)", 3),
    ("inventory.sync_delta", "_write_nodes", "nodes", 2),
    ("inventory.sync_delta", "_write_pods", "pods", 2),
    ("inventory.sync_delta", "detect_drift", "detect drift", 2),
    ("inventory.bulletins.store", "nodes_patch_refresh", "patch status", 1),
)
SCORE_PHASES: tuple[tuple[str, str, str, int], ...] = (
    ("posture.services", "tenant_infos", "tenant registry", 1),
    ("posture.services", "posture_inputs", "build inputs", 1),
    ("posture.read_model", "cluster_snapshot", "snapshot from DB", 2),
    ("posture.read_model", "drift_events", "drift events", 2),
    ("posture.services", "evaluate", "checks", 1),
    ("posture.services", "findings_refresh", "findings", 1),
    ("posture.services", "scores_compute", "scores", 1),
    ("posture.services", "actions_refresh", "actions", 1),
)


class Phases:
    """Accumulated wall time per phase label."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.clock = clock  # time.process_time: CPU seconds, for a shared machine

    def timed(self, label: str, func: Callable[..., Any], *, consume: bool = False) -> Callable:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = self.clock()
            try:
                result = func(*args, **kwargs)
                # A check is a generator: its work happens while it is consumed.
                return list(result) if consume else result
            finally:
                self.seconds[label] += self.clock() - start

        return wrapper

    @contextmanager
    def wrapping(self, phases: tuple[tuple[str, str, str, int], ...]) -> Iterator[Phases]:
        undo: list[tuple[Any, str, Any]] = []
        try:
            for module_name, attribute, label, _depth in phases:
                owner, name = _resolve(module_name, attribute)
                if owner is None or not hasattr(owner, name):
                    continue
                original = getattr(owner, name)
                setattr(owner, name, self.timed(label, original))
                undo.append((owner, name, original))
            yield self
        finally:
            for owner, name, original in reversed(undo):
                setattr(owner, name, original)

    @contextmanager
    def checks(self) -> Iterator[Phases]:
        """Time every registered check on its own, labelled by its id."""
        from posture.rules import CHECKS

        saved = dict(CHECKS)
        try:
            for check_id, check in saved.items():
                timed = self.timed(check_id, check.evaluate, consume=True)
                CHECKS[check_id] = dataclasses.replace(check, evaluate=timed)
            yield self
        finally:
            CHECKS.clear()
            CHECKS.update(saved)


def _resolve(module_name: str, attribute: str) -> tuple[Any, str]:
    owner: Any = importlib.import_module(module_name)
    *path, name = attribute.split(".")
    for part in path:
        owner = getattr(owner, part, None)
        if owner is None:
            return None, name
    return owner, name
