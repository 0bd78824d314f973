"""Where an installed version stands against a fix's affected bound. PURE.

The comparisons inventory.patching.status makes for every fix that concerns a node's component:
inside the bound (exposed), past the fixed version (past_fix), a bound that can be compared with
at all (bounded), or a bulletin that names the installed version both affected and fixed
(contradicted). Versions compare as inventory.bulletins.csaf.versions compares them.
"""

from __future__ import annotations

from inventory.bulletins.csaf.fixes import Fix
from inventory.bulletins.csaf.products import EVERY
from inventory.bulletins.csaf.versions import compare, is_below, parse_version


def bounded(fix: Fix) -> bool:
    """Whether the fix's affected bound can be compared with (else neither side of it is known)."""
    bound = fix.affected
    return bound.op in ("<", "<=") and parse_version(bound.version) is not None


def past_fix(installed: str, fix: Fix) -> bool:
    """An exact affected version ("== 1.17.7") says nothing of others, but a node at or past
    its fixed version runs the fix."""
    fixed = fix.fixed_version
    return bool(fixed and parse_version(fixed) and compare(installed, fixed) >= 0)


def exposed(installed: str, fix: Fix) -> bool:
    bound = fix.affected
    if bound.op == EVERY:
        return True  # a range with no upper end; a lower end is the fix's condition
    if bound.op == "==" and parse_version(bound.version) is not None:
        # A document listing the affected versions one by one ("1.17.7"): that one is affected.
        return compare(installed, bound.version) == 0
    if not bounded(fix):
        return False
    return is_below(installed, bound.version, inclusive=bound.op == "<=")


def contradicted(installed: str, fix: Fix) -> bool:
    """The node runs the very version the bulletin names fixed, inside the bound it names
    affected (nvidia-5857: DCGM Exporter "0.0 to 4.8.2" affected, 4.8.2 fixed)."""
    fixed = fix.fixed_version
    return bool(
        fixed
        and parse_version(fixed)
        and compare(installed, fixed) == 0
        and fix.affected.op in ("<=", "==")
        and exposed(installed, fix)
    )
