"""A Node object's own fields as a snapshot Node takes them (inventory.sources.nodes): its
taints, its GPU quantities (capacity, allocatable) and the GPU model its GFD product label names."""

from __future__ import annotations

from typing import Any

from inventory.snapshot import GPU_RESOURCE_PREFIX, Taint
from inventory.snapshot.quantity import gpu_count, parse_quantity
from inventory.sources.node_kinds import physical_model
from inventory.sources.node_sharing import SHARED_SUFFIX
from inventory.sources.raw import dicts, mapping, text


def gpu_quantities(value: Any) -> dict[str, int]:
    """The GPU resources of a node's capacity or allocatable, in any Quantity form ("1k" is
    1000 GPUs); a fraction counts as the whole device it shares. Text that is no quantity, or
    a negative one, is left out: the node reads as listing no such capacity, which gpu_signs
    says, and the sync warns of it (quantity_warnings)."""
    listed = mapping(value).items()
    gpu = {str(k): parse_quantity(v) for k, v in listed if str(k).startswith(GPU_RESOURCE_PREFIX)}
    return {k: gpu_count(n) for k, n in gpu.items() if n is not None and n >= 0}


def product_model(product: str | None) -> str | None:
    if not product:
        return None
    return physical_model(product.removesuffix(SHARED_SUFFIX))


def node_taints(value: Any) -> tuple[Taint, ...]:
    taints = {
        Taint(
            key=text(t.get("key"), "") or "",
            value=text(t.get("value"), "") or "",
            effect=text(t.get("effect"), "") or "",
        )
        for t in dicts(value)
    }
    return tuple(sorted(taints, key=lambda t: (t.key, t.value, t.effect)))
