"""The RuntimeClass handler of the pods a watch re-sync rewrites (inventory.sync_delta).

A full list reads every RuntimeClass with the pods, and each pod is stored with its class's
handler (a Kata VM runtime, NVIDIA's runtime: inventory/sources/nvidia_runtime.py). A watch
delta holds the pods that changed without the classes, so read alone they would lose the
handler and be judged by the class name, unlike the full list before them. A pod's
runtimeClassName cannot change, nor can a class's handler, so the handler is the one stored:
the pod's own, else that of another stored pod naming the class. A class that changed, or a
pod naming one no stored pod names while the last full list read RuntimeClasses, needs that
full list again (NeedsFullSync)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from inventory import snapshot as snap
from inventory.models import Pod
from inventory.sources.base import WatchDelta
from inventory.sources.kube_kinds import NOT_LISTED, NOT_SERVED
from inventory.sources.nvidia_runtime import is_runtime_class
from inventory.sources.raw import meta, text
from inventory.sync_delta_guards import NeedsFullSync

KIND = "RuntimeClass"


def refuse_runtime_classes(delta: WatchDelta) -> None:
    """A RuntimeClass created, changed or deleted: the pods naming it are re-read with it."""
    for obj in [*delta.changed, *delta.deleted]:
        if is_runtime_class(str(obj.get("kind") or ""), obj):
            name = text(meta(obj).get("name"), "") or ""
            raise NeedsFullSync(f"RuntimeClass {name} changed: its pods are read by its handler")


def with_stored_handlers(
    cluster: Any,
    delta: WatchDelta,
    pods: Iterable[snap.Pod],
    old_pods: dict[tuple[str, str], tuple],
) -> list[snap.Pod]:
    """The changed pods, each naming a class with the handler stored for that class."""
    pods = list(pods)
    unresolved = [p for p in pods if p.runtime_class and p.runtime_handler is None]
    if not unresolved:
        return pods
    known: dict[str, str] = {}
    for pod in unresolved:  # its own stored version first: one row already read
        old = old_pods.get((pod.namespace, pod.name))
        if old and old[4].runtime_class == pod.runtime_class and old[4].runtime_handler is not None:
            known[pod.runtime_class] = old[4].runtime_handler
    missing = {p.runtime_class for p in unresolved} - set(known)
    if missing:
        known |= _stored_handlers(cluster, missing)
    # The last full list read RuntimeClasses (not refused, served): a class none of its pods
    # named is one it has not stored a handler of, which only a full list reads.
    read = delta.resource_versions.get(KIND) not in (None, NOT_LISTED, NOT_SERVED)
    unknown = sorted({p.runtime_class or "" for p in unresolved} - set(known))
    if unknown and read:
        raise NeedsFullSync(f"a pod names RuntimeClass {unknown[0]}, whose handler is not stored")
    return [
        replace(p, runtime_handler=known[p.runtime_class])
        if p.runtime_class in known and p.runtime_handler is None
        else p
        for p in pods
    ]


def _stored_handlers(cluster: Any, classes: set[str]) -> dict[str, str]:
    stored = Pod.objects.filter(cluster=cluster, data__runtime_class__in=sorted(classes))
    rows: Iterable[tuple[Any, Any]] = stored.values_list(
        "data__runtime_class", "data__runtime_handler"
    )
    found: dict[str, str] = {}
    for name, handler in rows:
        if isinstance(name, str) and isinstance(handler, str):  # None: the class not read
            found.setdefault(name, handler)
    return found
