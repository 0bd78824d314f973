"""A Node object's own fields as a snapshot Node takes them (inventory.sources.nodes): its
taints, its GPU quantities (capacity, allocatable) and the GPU model its GFD product label names."""

from __future__ import annotations

from typing import Any

from inventory.snapshot import GPU_RESOURCE_PREFIX, Taint
from inventory.sources.node_kinds import physical_model
from inventory.sources.node_sharing import SHARED_SUFFIX
from inventory.sources.raw import as_int, dicts, mapping, text


def gpu_quantities(value: Any) -> dict[str, int]:
    capacity = {str(k): as_int(v) for k, v in mapping(value).items()}
    return {
        k: v for k, v in capacity.items() if k.startswith(GPU_RESOURCE_PREFIX) and v is not None
    }


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
