"""Nebuly nos's GPU partitioning of a node. PURE.

nos labels each node it partitions with `nos.nebuly.com/gpu-partitioning`: `mig` (real MIG
GPU instances, read as any MIG node) or `mps`. An `mps` node's GPUs are split by NVIDIA MPS
(nos runs its fork of NVIDIA's device plugin) into slices advertised as `nvidia.com/gpu-<N>gb`
(N GB of one GPU's memory each): MPS clients of one GPU (DESIGN §2 `mps`), whatever GFD's
own sharing label says, as GFD does not know of nos's plugin."""

from __future__ import annotations

import re
from collections.abc import Mapping

NOS_PARTITIONING = "nos.nebuly.com/gpu-partitioning"
_MPS_SLICE = re.compile(r"^nvidia\.com/gpu-\d+gb$")


def nos_mps(labels: Mapping[str, str]) -> bool:
    """nos partitions the node's GPUs by MPS."""
    return labels.get(NOS_PARTITIONING, "").strip().lower() == "mps"


def nos_mps_slice(labels: Mapping[str, str], resource: str) -> bool:
    """An MPS slice nos advertises (`nvidia.com/gpu-10gb`) on a node nos partitions by MPS:
    a client of one physical GPU (pool `nvidia.com/gpu`)."""
    return nos_mps(labels) and bool(_MPS_SLICE.match(resource))
