"""A node's GPU facts when the sync certainly read no ResourceSlice. PURE.

A node under a DRA driver has no GPU capacity: only its ResourceSlices say it holds GPUs
(inventory.sources.dra_sharing.dra_gpu_count, dra_stack, gpu_signs). An export that left the
slices out (inventory.kinds_read: its claims are allocated, and it holds no slice) would make
such a node a node with no GPU, and its findings resolve on what was not read. Instead a node
whose stored record (the last sync's) has facts from its slices keeps them; any other node the
sync would call GPU-free is "may hold GPUs" (a gpu_sign), never "no GPU": its patch status is
unknown, with why (inventory.patching.no_gpu).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from inventory.snapshot import Node

SLICE_SOURCE = "dra-resourceslice"  # Node.driver_version_source of a version its slices publish
NOT_READ_SIGN = (
    "the sync read no ResourceSlice, so GPUs a DRA driver publishes for it are not known"
)


def from_slices(node: Node) -> bool:
    """Whether what makes `node` an accelerator node came from its ResourceSlices."""
    return (
        node.gpu_count_basis.startswith("ResourceSlice")
        or node.driver_version_source == SLICE_SOURCE
        or any(n > 0 for n in node.dra_accelerators.values())
    )


def _carried(node: Node, before: Node) -> Node:
    """`node` with the GPU facts `before` had from its slices (count, model, driver versions,
    other vendors' DRA devices)."""
    changes: dict[str, object] = {"gpu_signs": before.gpu_signs}
    if before.gpu_count_basis.startswith("ResourceSlice") and node.gpu_count is None:
        changes.update(gpu_count=before.gpu_count, gpu_count_basis=before.gpu_count_basis)
    if before.gpu_model_basis and node.gpu_model is None:
        changes.update(gpu_model=before.gpu_model, gpu_model_basis=before.gpu_model_basis)
    if before.driver_version_source == SLICE_SOURCE and node.driver_version is None:
        changes.update(
            driver_version=before.driver_version,
            driver_version_source=before.driver_version_source,
            driver_version_basis=before.driver_version_basis,
            cuda_driver_version=node.cuda_driver_version or before.cuda_driver_version,
        )
    if before.dra_accelerators and not node.dra_accelerators:
        changes["dra_accelerators"] = dict(before.dra_accelerators)
    return replace(node, **changes)


def slice_facts_kept(
    nodes: Iterable[Node], stored: Mapping[str, Node]
) -> tuple[list[Node], list[str]]:
    """The nodes of a sync that read no ResourceSlice: those the last sync knew from their
    slices keep those facts (their names are returned); the others read as holding no GPU get
    a sign that slices were not read. GPU nodes by capacity or labels are as read."""
    result, kept = [], []
    for node in nodes:
        before = stored.get(node.name)
        if before is not None and from_slices(before) and not from_slices(node):
            node = _carried(node, before)
            kept.append(node.name)
        elif node.gpu_signs is not None and NOT_READ_SIGN not in node.gpu_signs:
            node = replace(node, gpu_signs=(*node.gpu_signs, NOT_READ_SIGN))
        result.append(node)
    return result, kept
