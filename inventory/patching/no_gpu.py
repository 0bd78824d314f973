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

# The stored patch fields (inventory.bulletins.store.PATCH_FIELDS) of a node with nothing to
# patch: no status, no exposures, notes, not-affected bounds or unknown components.
NOTHING_TO_PATCH: tuple[Any, ...] = ("", [], [], [], [])


def no_gpu_patch(data: Mapping[str, Any]) -> tuple[Any, ...]:
    """The patch fields (status, exposures, notes, not affected, unknown components) of a node
    with no GPU capacity, from its stored snapshot record."""
    signs = data.get("gpu_signs")
    if signs == []:
        return NOTHING_TO_PATCH
    if signs:
        why = f"no GPU capacity, but {'; '.join(signs)}: its GPU stack cannot be judged"
    else:
        why = "no GPU capacity; whether it holds GPUs was not read yet (sync the cluster again)"
    return (UNKNOWN, [], [why], [], [])
