"""Policy packs per cluster: the one public entry point that other features call.

`policy_pack(cluster, dialect=..., mode=...)` returns the pack's Kubernetes objects (dicts).
Inputs are read in enforcement.selectors; objects are built by the pure enforcement.build.
"""

from __future__ import annotations

from enforcement.build import build_pack
from enforcement.inputs import DIALECTS, MODES, PackInputs
from enforcement.selectors import pack_inputs
from inventory.models import Cluster
from posture.inputs import PostureInputs


class PackError(ValueError):
    """Bad pack arguments, with a message a person can act on."""


def check_arguments(dialect: str, mode: str) -> None:
    if dialect not in DIALECTS:
        raise PackError(f"Unknown dialect {dialect!r}: use one of {', '.join(DIALECTS)}.")
    if mode not in MODES:
        raise PackError(f"Unknown mode {mode!r}: use one of {', '.join(MODES)}.")


def policy_pack(
    cluster: Cluster, *, dialect: str, mode: str, inputs: PostureInputs | None = None
) -> list[dict]:
    """The admission policy pack generated for the cluster now (every object labelled
    app.kubernetes.io/managed-by=gpuposture and annotated gpuposture.io/checks); `inputs` when
    the caller has already read the cluster's posture inputs."""
    check_arguments(dialect, mode)
    return build_pack(pack_inputs(cluster, inputs), dialect=dialect, mode=mode)


def policy_pack_with_inputs(
    cluster: Cluster, *, dialect: str, mode: str
) -> tuple[PackInputs, list[dict]]:
    """The pack and the inputs it came from (the page shows both)."""
    check_arguments(dialect, mode)
    inputs = pack_inputs(cluster)
    return inputs, build_pack(inputs, dialect=dialect, mode=mode)
