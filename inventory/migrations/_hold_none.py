"""What the data migrations that clear stored `gpu_resources` share (0032, 0033): a pod the sync
now stores as holding nothing kept what it asked for in rows written before. The migration
loader skips this module (its name starts with `_`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

BATCH = 500


def rows_hold_none(Pod: Any, rows: Iterable[Any], holds_none: Callable[[Any], bool]) -> None:
    """Store `{}` as the `gpu_resources` of each of `rows` (historical Pod instances, read with
    `gpu_resources`) that keeps some and of which `holds_none` says it holds none."""
    changed = []
    for pod in rows:
        if not pod.gpu_resources or not holds_none(pod):
            continue
        pod.gpu_resources = {}
        changed.append(pod)
        if len(changed) >= BATCH:
            Pod.objects.bulk_update(changed, ["gpu_resources"])
            changed = []
    if changed:
        Pod.objects.bulk_update(changed, ["gpu_resources"])
