"""How a node's component versions read against bulletins: the driver's branch, the version a
dcgm-exporter tag speaks of, the DCGM it bundles, and whether a firmware fix concerns a GPU model.
PURE."""

from __future__ import annotations

import re

from inventory.bulletins.csaf.versions import parse_version


def driver_branch(version: str) -> str | None:
    parsed = parse_version(version)
    return f"R{parsed[0]}" if parsed and isinstance(parsed[0], int) else None


def installed_version(kind: str, version: str) -> str:
    """The version a bulletin speaks of: dcgm-exporter tags read `<DCGM>-<exporter>` (e.g.
    3.3.9-3.6.1), and its bulletins name the exporter's own version."""
    if kind == "dcgm_exporter" and "-" in version:
        return version.split("-", 1)[1]
    return version


def bundled_dcgm(exporter: str | None) -> str | None:
    """The DCGM version an exporter image carries: its tag reads `<DCGM>-<exporter>`
    (4.2.3-4.1.3-ubuntu22.04), and the exporter runs that DCGM's library in its container, so a
    DCGM bulletin concerns it. Without the pair (a tag of one number) it is not known."""
    if not exporter or "-" not in exporter:
        return None
    dcgm = exporter.split("-", 1)[0]
    return dcgm if parse_version(dcgm) else None


def model_matches(model: str | None, gpu_model: str | None) -> bool:
    """Does a firmware fix for `model` (H100) concern a node whose GFD product label is
    `gpu_model` (NVIDIA-H100-80GB-HBM3)? An unknown node model cannot be ruled out."""
    if gpu_model is None:
        return True
    return bool(model) and model.upper() in re.split(r"[-_\s]+", gpu_model.upper())
