"""Patch status of one node against the fixes of imported bulletins. PURE.

A node's components (data-center driver by branch, container toolkit, device plugin, GPU
Operator, DCGM exporter) are compared with each fix's affected bound; the baseline of a
component (and driver branch) is the highest fixed version any bulletin names. A version that
is unknown, or a driver branch no bulletin covers any more, makes the status unknown: never a
guess in either direction.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from inventory.csaf.fixes import Fix
from inventory.csaf.versions import compare, is_below, parse_version

CURRENT, BELOW_BASELINE, UNKNOWN = "current", "below_baseline", "unknown"
# Node field -> the bulletin component kind it is compared with.
COMPONENTS = {
    "driver_version": "driver",
    "container_toolkit_version": "container_toolkit",
    "device_plugin_version": "device_plugin",
    "gpu_operator_version": "gpu_operator",
    "dcgm_exporter_version": "dcgm_exporter",
}
SEVERITY_ORDER = ("critical", "high", "medium", "low")


@dataclass(frozen=True)
class Exposure:
    component: str
    installed: str
    fixed_version: str | None
    affected: str  # "< 535.230.02" / "<= 1.16.1"
    cves: tuple[str, ...]
    max_cvss: float | None
    severity: str | None
    advisory_id: str
    released: str
    condition: str | None  # the bound applies only under this condition (e.g. CDI mode)


@dataclass(frozen=True)
class PatchStatus:
    status: str
    exposures: tuple[Exposure, ...]
    baselines: dict[str, str]  # component (driver as "driver R535") -> highest fixed version
    unknown: tuple[str, ...]  # why a component could not be judged


def driver_branch(version: str) -> str | None:
    parsed = parse_version(version)
    return f"R{parsed[0]}" if parsed and isinstance(parsed[0], int) else None


def installed_version(kind: str, version: str) -> str:
    """The version a bulletin speaks of: dcgm-exporter tags read `<DCGM>-<exporter>` (e.g.
    3.3.9-3.6.1), and its bulletins name the exporter's own version."""
    if kind == "dcgm_exporter" and "-" in version:
        return version.split("-", 1)[1]
    return version


def _applies(fix: Fix, kind: str, branch: str | None) -> bool:
    component = fix.component
    if component.kind != kind:
        return False
    if kind != "driver":
        return component.platform in (None, "linux")
    # Data-center nodes run the Linux data-center ("Tesla") driver of their branch.
    return (
        component.platform == "linux" and component.branch == branch and component.line == "tesla"
    )


def node_patch_status(versions: dict[str, str | None], fixes: Iterable[Fix]) -> PatchStatus:
    """`versions`: node field (see COMPONENTS) -> installed version or None."""
    fixes = list(fixes)
    if not fixes:
        return PatchStatus(UNKNOWN, (), {}, ("no bulletins imported",))
    exposures: list[Exposure] = []
    baselines: dict[str, str] = {}
    unknown: list[str] = []
    for field, kind in COMPONENTS.items():
        installed = versions.get(field)
        installed = installed_version(kind, installed) if installed else installed
        branch = driver_branch(installed) if kind == "driver" and installed else None
        relevant = [f for f in fixes if _applies(f, kind, branch)]
        label = f"driver {branch}" if branch else kind
        if not installed or parse_version(installed) is None:
            if kind == "driver" or any(f.component.kind == kind for f in fixes):
                unknown.append(f"{kind}: version unknown")
            continue
        if kind == "driver" and not relevant:
            if any(f.component.kind == "driver" for f in fixes):
                unknown.append(f"driver {installed}: branch {branch} is in no imported bulletin "
                               "(out of support, or bulletins missing)")  # fmt: skip
            continue
        for fix in relevant:
            if fix.fixed_version and parse_version(fix.fixed_version):
                best = baselines.get(label)
                if best is None or compare(fix.fixed_version, best) > 0:
                    baselines[label] = fix.fixed_version
            if _exposed(installed, fix):
                exposures.append(_exposure(kind, installed, fix))
    status = BELOW_BASELINE if exposures else UNKNOWN if unknown else CURRENT
    return PatchStatus(status, tuple(exposures), baselines, tuple(unknown))


def _exposed(installed: str, fix: Fix) -> bool:
    bound = fix.affected
    if bound.op not in ("<", "<=") or parse_version(bound.version) is None:
        return False
    return is_below(installed, bound.version, inclusive=bound.op == "<=")


def _exposure(kind: str, installed: str, fix: Fix) -> Exposure:
    return Exposure(
        component=kind, installed=installed, fixed_version=fix.fixed_version,
        affected=f"{fix.affected.op} {fix.affected.version}", cves=fix.cves,
        max_cvss=fix.max_cvss, severity=(fix.severity or "").lower() or None,
        advisory_id=fix.advisory_id, released=fix.released,
        condition=fix.condition or fix.affected.condition,
    )  # fmt: skip


def worst_severity(exposures: Iterable[Exposure]) -> str | None:
    found = {e.severity for e in exposures if e.severity in SEVERITY_ORDER}
    return next((s for s in SEVERITY_ORDER if s in found), None)
