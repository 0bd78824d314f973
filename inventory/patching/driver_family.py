"""Which bulletin rows judge a node's host driver. PURE.

A container GPU node runs the Linux data-center ("Tesla") driver of its branch. A KubeVirt
vm-vgpu node runs the NVIDIA vGPU Manager instead (the GPU Operator's vgpu-manager image): it is
the host's kernel driver, numbered on the same branches but released separately (vGPU 17.4 is
550.127.06 where the data-center driver is 550.127.05), so NVIDIA's driver bulletins state its
fixes in their own "Virtual GPU Manager" rows, per hypervisor. A Kubernetes node is a Linux KVM
host: the rows for Red Hat Enterprise Linux KVM and Ubuntu apply; Citrix/XenServer, vSphere and
the Windows-numbered Azure Local / Azure Stack HCI / Windows Server rows (553.20) never do.
"""

from __future__ import annotations

from collections.abc import Mapping

from inventory.bulletins.csaf.fixes import Fix
from inventory.bulletins.csaf.versions import compare, parse_version
from inventory.sources.node_kinds import VGPU_HOST, WORKLOAD
from inventory.sources.node_versions import VGPU_MANAGER_POD

# The hypervisors a Kubernetes node's vGPU Manager is built for, as NVIDIA's rows name them.
_LINUX_KVM = ("kvm", "ubuntu")


def vgpu_host(labels: Mapping[str, str], driver_source: str | None) -> bool:
    """Whether a node's host driver is the vGPU Manager: its version was read from the vGPU
    Manager's image, or the node is a vm-vgpu node (its driver read another way, nvidia-smi)."""
    workload = str(labels.get(WORKLOAD, "")).strip().lower()
    return driver_source == VGPU_MANAGER_POD or workload == VGPU_HOST


def host_driver_fix(fix: Fix, vgpu_host: bool) -> bool:
    """A row for the node's kind of host driver (any branch)."""
    component = fix.component
    if not vgpu_host:
        return (
            component.kind == "driver"
            and component.platform == "linux"
            and component.line == "tesla"
        )
    host = (component.host or "").lower()
    return (
        component.kind == "vgpu_manager"
        and component.platform != "windows"
        and any(name in host for name in _LINUX_KVM)
    )


def fix_branch(fix: Fix) -> str | None:
    """The driver branch of a row: as the product states it, else that of its versions (NVIDIA
    names some vGPU rows by software release only: "vGPU 16" is 535.x)."""
    if fix.component.branch:
        return fix.component.branch
    for version in (fix.fixed_version, fix.affected.version):
        parsed = parse_version(version or "")
        if parsed and isinstance(parsed[0], int):
            return f"R{parsed[0]}"
    return None


def family_name(vgpu_host: bool) -> str:
    return "Linux KVM vGPU Managers" if vgpu_host else "Linux data-center drivers"


def one_per_bound(fixes: list[Fix]) -> list[Fix]:
    """The rows of one bulletin that repeat a bound per hypervisor (5614 names Red Hat KVM and
    Ubuntu apart, alike): one each, so a node is not told the same fix twice."""
    seen: set[tuple] = set()
    kept = []
    for fix in fixes:
        key = (fix.advisory_id, fix.affected, fix.fixed_version, fix.cves, fix.condition)
        if key not in seen:
            seen.add(key)
            kept.append(fix)
    return kept


def dropped_by(relevant: list[Fix], fixes: list[Fix], vgpu_host: bool = False) -> str | None:
    """Why a driver branch cannot read current: a later bulletin fixes Linux data-center drivers
    of other branches but not this one (R550 after July 2025). NVIDIA leaves a branch out of a
    bulletin when it no longer supports it, so its fixes stop while its flaws stay; whether the
    branch is out of support or was not affected, the bulletin does not say. A branch first
    listed after a bulletin (R580 and the bulletins of 2024) is not concerned by it."""
    listed = max(f.released[:10] for f in relevant)
    branch = fix_branch(relevant[0])
    # A bulletin that lists the branch never drops it, whatever the dates of its other rows
    # (a revision may add a branch weeks later: nvidia-5614 v3.0.0 added R570).
    listing = {f.advisory_id for f in relevant}
    later: dict[str, set[str]] = {}
    for fix in fixes:
        if (
            fix.advisory_id not in listing
            and host_driver_fix(fix, vgpu_host)
            and fix.released[:10] > listed
        ):
            later.setdefault(fix.advisory_id, set()).add(fix_branch(fix) or "?")
    if not later:
        return None
    latest = max(later, key=lambda a: next(f.released for f in fixes if f.advisory_id == a))
    others = ", ".join(sorted(later[latest], reverse=True))
    return (
        f"branch {branch} is not in bulletin {latest}, which fixes {family_name(vgpu_host)} "
        f"{others} (its last fix is in a bulletin of {listed}): out of support, or not "
        "affected, the bulletin does not say"
    )


def branch_fixes(
    fix: Fix, fixes: list[Fix], vgpu_host: bool = False
) -> tuple[tuple[str, str], ...]:
    """(branch, fixed version) for each driver branch `fix`'s bulletin fixes the same CVEs on,
    the highest where several rows do. A version on another branch is no fix by its number
    (580.105.08 is above R570's 570.211.01 but below R580's own 580.159.03): what fixes a
    branch is its own row. A branch one of whose rows names no fixed version is left out: no
    version is known to fix it. A CVE-less row matches rows of its bulletin without CVEs."""
    found: dict[str, str | None] = {}
    cves = set(fix.cves)
    for other in fixes:
        if other.advisory_id != fix.advisory_id or not host_driver_fix(other, vgpu_host):
            continue
        if not _same_cves(cves, other.cves):
            continue
        branch = fix_branch(other)
        if not branch:
            continue
        held = found.get(branch, "")
        fixed = other.fixed_version if parse_version(other.fixed_version or "") else None
        if fixed is None or held is None:
            found[branch] = None
        elif not held or compare(fixed, held) > 0:
            found[branch] = fixed
    return tuple(sorted((b, v) for b, v in found.items() if v))


def _same_cves(cves: set[str], other: tuple[str, ...]) -> bool:
    return bool(cves & set(other)) if cves else not other
