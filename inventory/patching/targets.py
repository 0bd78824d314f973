"""Which version closes a node's exposures of one component: the target of its upgrade. PURE.

An exposure closes at its fixed version. One whose fixed version is unknown closes too where its
affected range is closed above by a version on the node's branch ("<= 535.261.04"): any version
past that bound is outside it. NVIDIA 5703 names the R535 vGPU Manager's fix "575.274.03", an
upstream typo the import drops as another branch's (inventory.bulletins.csaf.fixes), and a
bulletin may name no fixed version at all; neither makes such a range "no fix". No version
closes an exposure the vendor says has no fix (`none_available`, `no_fix_planned`), nor one
whose range has no upper end and no fixed version.

The exposures are `inventory.patching.status.Exposure` as stored (dicts). Callers group them by
component first (the driver by branch: inventory.patching.rollout.component_key).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cmp_to_key

from inventory.bulletins.csaf.versions import compare, is_below, parse_version
from inventory.patching.versions import driver_branch

CLOSED = ("<", "<=")


@dataclass(frozen=True)
class ClosedBound:
    """A closed-above affected range: versions below `version` (or up to it, for "<=")."""

    op: str
    version: str

    def cleared_by(self, version: str) -> bool:
        """Whether `version` is past the range (outside it, above)."""
        return bool(parse_version(version)) and not is_below(
            version, self.version, inclusive=self.op == "<="
        )

    def __str__(self) -> str:
        return f"{self.op} {self.version}"

    @classmethod
    def parse(cls, text: str) -> ClosedBound | None:
        """ "<= 535.261.04" (an exposure's `affected`, or str() of one); None for any other."""
        op, _, version = text.strip().partition(" ")
        return cls(op, version) if op in CLOSED and parse_version(version) else None


@dataclass(frozen=True)
class Target:
    """Where one component's upgrade goes. `version`: the highest fixed version named, when it
    is past every closed bound an exposure without a fixed version has (else None: the named
    versions do not close those). `past`: that highest bound, where no named version passes it:
    any version past it closes them ("upgrade past 535.261.04", never a version made up)."""

    version: str | None
    past: ClosedBound | None = None

    def words(self) -> str:
        """ "to 535.309.01", "past 535.261.04", "to 1.17.8 or later" (a "<" bound), or "to a
        fixed version" where nothing is known (the caller's exposures named no move)."""
        if self.version:
            return f"to {self.version}"
        if self.past is None:
            return "to a fixed version"
        if self.past.op == "<":
            return f"to {self.past.version} or later"
        return f"past {self.past.version}"


def closed_bound(exposure: Mapping[str, object]) -> ClosedBound | None:
    """The closed-above range of an exposure (a stored dict) with no fixed version, whose
    bound is on the node's branch; None where it has a fixed version, the vendor says it has
    no fix, or its range has no upper end (closed_range)."""
    if exposure.get("fixed_version") or exposure.get("no_fix"):
        return None
    return closed_range(
        str(exposure.get("affected") or ""),
        str(exposure.get("component") or ""),
        str(exposure.get("installed") or ""),
    )


def closed_range(affected: str, component: str, installed: str) -> ClosedBound | None:
    """ "<= 535.261.04" as a bound to move past, for a component at `installed`; None for a
    range with no upper end, and for a driver's bound on another branch than the node's (it
    says nothing of how far the node's own branch is affected)."""
    bound = ClosedBound.parse(affected)
    if bound is None:
        return None
    if component == "driver" and driver_branch(bound.version) != driver_branch(installed):
        return None
    return bound


def unfixed(exposure: Mapping[str, object]) -> bool:
    """No version closes it: no fixed version, and no closed bound to move past."""
    return not exposure.get("fixed_version") and closed_bound(exposure) is None


def target(exposures: Iterable[Mapping[str, object]]) -> Target:
    """The target of one component's exposures (those no version closes are left out: the
    caller says so apart)."""
    fixed: list[str] = []
    bounds: list[ClosedBound] = []
    for exposure in exposures:
        version = str(exposure.get("fixed_version") or "")
        if version and parse_version(version):
            fixed.append(version)
        elif (found := closed_bound(exposure)) is not None:
            bounds.append(found)
    # Text order first, so of versions that compare equal (1.0, 1.0.0) the same one is named.
    highest = max(sorted(set(fixed)), key=cmp_to_key(compare)) if fixed else None
    hardest = max(bounds, key=cmp_to_key(_harder), default=None)
    if hardest is None or (highest and hardest.cleared_by(highest)):
        return Target(highest)
    return Target(None, hardest)


def _harder(a: ClosedBound, b: ClosedBound) -> int:
    """Order of bounds by how far a version must go to pass them ("<= v" beyond "< v")."""
    order = compare(a.version, b.version)
    return order or (a.op == "<=") - (b.op == "<=")
