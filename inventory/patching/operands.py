"""Which GPU Operator fixes concern a node through the operands it deploys. PURE.

NVIDIA lists the GPU Operator affected beside the container toolkit in the toolkit's bulletins
(5582, 5585, 5599, 5616, 5659, 5850: "NVIDIA Container Toolkit ... contains a vulnerability"),
and in 5659 beside the device plugin and MIG manager that bundle the toolkit's code: the
Operator is affected because it deploys them. On a node that runs none of those operands (a
KubeVirt sandbox node runs no container toolkit) the flawed code is not there, so the Operator's
fix does not concern it: not affected, component not present (VEX), never critical.
"""

from __future__ import annotations

from collections.abc import Iterable

from inventory.bulletins.csaf.fixes import Fix

OPERATOR = "gpu_operator"


def operands(fix: Fix, fixes: Iterable[Fix]) -> set[str]:
    """The other components the same vulnerability names affected with a GPU Operator fix (the
    same bulletin, a CVE in common): where the flawed code is."""
    cves = set(fix.cves)
    return {
        other.component.kind
        for other in fixes
        if other.advisory_id == fix.advisory_id
        and other.component.kind != OPERATOR
        and cves.intersection(other.cves)
    }


def split_by_operands(
    relevant: Iterable[Fix], fixes: list[Fix], not_installed: frozenset[str]
) -> tuple[list[Fix], list[tuple[Fix, str]]]:
    """(GPU Operator fixes to judge, (fix, why not affected) for those whose operands the node
    runs none of). A fix is judged as usual where an operand runs or may run (its presence
    unknown; the driver is never "not installed"), or where the bulletin names no operand
    beside the Operator (the flaw may be the Operator's own)."""
    kept: list[Fix] = []
    spared: list[tuple[Fix, str]] = []
    for fix in relevant:
        found = operands(fix, fixes)
        if not found or "driver" in found or not found <= not_installed:
            kept.append(fix)
            continue
        names = ", ".join(sorted(kind.replace("_", " ") for kind in found))
        spared.append(
            (
                fix,
                f"Not affected: {fix.advisory_id} affects the GPU Operator through the {names} "
                "it deploys (named affected in the same bulletin), and the node runs none of "
                "them.",
            )
        )
    return kept, spared
