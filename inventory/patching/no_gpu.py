"""Patch status of a node with no GPU capacity. PURE.

The vendor bulletins judge GPU drivers, toolkits and plugins. A node the snapshot shows holds
no GPU (inventory.sources.gpu_signs found nothing: no GPU resource, GPU label, GPU-stack pod or
ResourceSlice of GPUs) has nothing to patch: its status is "" (null in the API, which never
matches `?patch_status=unknown`). A node with no GPU capacity that something says may hold
GPUs stays "unknown" with what says so, as does one stored before the signs were read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inventory.patching.status import UNKNOWN
from inventory.snapshot.accelerators import accelerator_vendors

# The stored patch fields (inventory.bulletins.store.PATCH_FIELDS) of a node with nothing to
# patch: no status, no exposures, notes, not-affected bounds or unknown components.
NOTHING_TO_PATCH: tuple[Any, ...] = ("", [], [], [], [])


def no_gpu_patch(data: Mapping[str, Any]) -> tuple[Any, ...]:
    """The patch fields (status, exposures, notes, not affected, unknown components) of a node
    with no GPU capacity, from its stored snapshot record."""
    signs = data.get("gpu_signs")
    if signs == []:
        return NOTHING_TO_PATCH
    if others := data.get("accelerator_resources"):
        # Another vendor's GPUs: "no GPU capacity" would be false, and their stack is not read.
        held = ", ".join(f"{name}: {n}" for name, n in sorted(others.items()))
        vendors = " and ".join(accelerator_vendors(others))
        why = (
            f"holds {vendors} accelerators ({held}): the {vendors} stack is not read and no "
            f"{vendors} bulletin is judged, so its patch status cannot be known"
        )
    elif signs:
        why = f"no GPU capacity, but {'; '.join(signs)}: its GPU stack cannot be judged"
    else:
        why = "no GPU capacity; whether it holds GPUs was not read yet (sync the cluster again)"
    return (UNKNOWN, [], [why], [], [])
