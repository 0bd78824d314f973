"""Place MIG GPU instances on one GPU's memory-slice grid, or say in plain words why not.

Pure: takes requests, returns a LayoutResult. NVIDIA's rules as modelled here: a profile may only
start at its allowed slots (inventory.mig_profiles), instances may not overlap in memory slices,
the compute slices add up to at most the GPU's (7), and no profile exceeds its max_instances.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from inventory.mig_profiles import MODELS, GpuModel, MigProfile, model_key

MIG_GI = "mig_gi"


@dataclass(frozen=True, slots=True)
class InstanceRequest:
    """One GPU instance wanted: a profile, optionally pinned to a start slot, for a tenant."""

    profile: str
    start: int | None = None
    tenant: str | None = None


@dataclass(frozen=True, slots=True)
class Placement:
    """One GPU instance on the grid: memory slots start .. start + size - 1."""

    profile: str
    start: int
    size: int
    tenant: str | None = None

    @property
    def slots(self) -> range:
        return range(self.start, self.start + self.size)


@dataclass(frozen=True, slots=True)
class LayoutResult:
    """Whether the requests fit, where they went (sorted by start), and why not."""

    valid: bool
    placements: list[Placement] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    model: str | None = None
    compute_slices_used: int = 0
    memory_slices_used: int = 0


def _span(start: int, size: int) -> str:
    return f"slot {start}" if size == 1 else f"slots {start}-{start + size - 1}"


def _starts(profile: MigProfile) -> str:
    starts = [str(s) for s in profile.placements]
    return starts[0] if len(starts) == 1 else ", ".join(starts[:-1]) + " or " + starts[-1]


def _occupants(placed: Sequence[Placement], start: int, size: int) -> list[Placement]:
    wanted = set(range(start, start + size))
    return [p for p in placed if wanted & set(p.slots)]


def _who(placements: Sequence[Placement]) -> str:
    return " and ".join(f"{p.profile} at {p.start}" for p in sorted(placements, key=_order))


def _order(p: Placement) -> tuple[int, str, str]:
    return (p.start, p.profile, p.tenant or "")


def _budget_errors(
    gpu: GpuModel, wanted: Sequence[tuple[InstanceRequest, MigProfile]]
) -> list[str]:
    errors = []
    counts = Counter(req.profile for req, _ in wanted)
    for name, count in sorted(counts.items()):
        most = gpu.profiles[name].max_instances
        if count > most:
            errors.append(f"{name}: {count} requested, at most {most} fit on one {gpu.key}")
    compute = sum(p.compute for _, p in wanted)
    if compute > gpu.compute_slices:
        errors.append(f"compute slices: {compute} requested, the GPU has {gpu.compute_slices}")
    memory = sum(p.size for _, p in wanted)
    if memory > gpu.memory_slots:
        errors.append(f"memory slices: {memory} requested, the GPU has {gpu.memory_slots}")
    return errors


def _pin(
    wanted: Sequence[tuple[InstanceRequest, MigProfile]], errors: list[str]
) -> list[Placement]:
    """Place the requests with an explicit start, appending an error for each that cannot go."""
    pinned: list[Placement] = []
    for req, prof in wanted:
        if req.start is None:
            continue
        if req.start not in prof.placements:
            errors.append(
                f"{prof.name} cannot start at {req.start}; allowed starts: {_starts(prof)}"
            )
            continue
        taken = _occupants(pinned, req.start, prof.size)
        if taken:
            errors.append(
                f"{prof.name} at {req.start} needs {_span(req.start, prof.size)}, "
                f"taken by {_who(taken)}"
            )
            continue
        pinned.append(Placement(prof.name, req.start, prof.size, req.tenant))
    return pinned


def _search(
    todo: Sequence[tuple[InstanceRequest, MigProfile]], placed: list[Placement], best: list
) -> list[Placement] | None:
    """Backtrack over allowed starts; `best` keeps the deepest dead end for the explanation."""
    if not todo:
        return list(placed)
    (req, prof), rest = todo[0], todo[1:]
    for start in prof.placements:
        if _occupants(placed, start, prof.size):
            continue
        placed.append(Placement(prof.name, start, prof.size, req.tenant))
        found = _search(rest, placed, best)
        placed.pop()
        if found is not None:
            return found
    if not best or len(placed) > len(best[0]):
        best[:] = [list(placed), prof]
    return None


def _no_fit(placed: Sequence[Placement], prof: MigProfile) -> str:
    blocked = [
        f"{_span(s, prof.size)} {'is' if prof.size == 1 else 'are'} taken by "
        f"{_who(_occupants(placed, s, prof.size))}"
        for s in prof.placements
    ]
    return (
        f"no arrangement fits: {prof.name} needs {prof.size} memory "
        f"slice{'s' if prof.size > 1 else ''} starting at {_starts(prof)}; " + "; ".join(blocked)
    )


def validate_layout(
    gpu_model: str,
    instances: Sequence[InstanceRequest],
    allowed_modes: Mapping[str, Collection[str]] | None = None,
) -> LayoutResult:
    """Fit `instances` on one GPU of `gpu_model` (a key or GFD product label).

    Pinned starts are honoured; the rest are searched, larger instances first. With
    `allowed_modes` (tenant slug -> sharing modes its trust class allows), tenant warnings are
    added (see tenant_warnings). Never raises for bad input: problems are in `errors`.
    """
    key = model_key(gpu_model)
    if key is None:
        return LayoutResult(valid=False, errors=[f"unknown GPU model {gpu_model!r} for MIG"])
    gpu = MODELS[key]
    errors: list[str] = []
    wanted: list[tuple[InstanceRequest, MigProfile]] = []
    for req in instances:
        prof = gpu.profiles.get(req.profile)
        if prof is None:
            known = ", ".join(gpu.profiles)
            errors.append(f"{req.profile!r} is not a MIG profile of {key}; known: {known}")
        else:
            wanted.append((req, prof))
    errors += _budget_errors(gpu, wanted)
    placements = _pin(wanted, errors)
    if not errors:
        todo = sorted(
            ((r, p) for r, p in wanted if r.start is None),
            key=lambda rp: (-rp[1].size, -rp[1].compute, rp[1].name, rp[0].tenant or ""),
        )
        best: list = []
        found = _search(todo, list(placements), best)
        if found is None:
            errors.append(_no_fit(*best))
            placements = best[0]
        else:
            placements = found
    placements = sorted(placements, key=_order)
    warnings = tenant_warnings(placements, allowed_modes) if allowed_modes is not None else []
    by_name = gpu.profiles
    return LayoutResult(
        valid=not errors,
        placements=placements,
        errors=errors,
        warnings=warnings,
        model=key,
        compute_slices_used=sum(by_name[p.profile].compute for p in placements),
        memory_slices_used=sum(p.size for p in placements),
    )


def tenant_warnings(
    placements: Sequence[Placement], allowed_modes: Mapping[str, Collection[str]]
) -> list[str]:
    """Warn when tenants share this GPU as separate GPU instances against their trust class.

    Two different tenants with GPU instances on one GPU share it by mode `mig_gi` (as SHARE-003
    judges it). Each tenant whose allowed modes lack `mig_gi` gets one warning naming the
    others. A tenant missing from `allowed_modes` is treated as allowing nothing. Instances with
    no tenant are ignored.
    """
    tenants = sorted({p.tenant for p in placements if p.tenant})
    warnings = []
    for tenant in tenants:
        modes = allowed_modes.get(tenant, ())
        if MIG_GI in modes:
            continue
        for other in tenants:
            if other == tenant:
                continue
            allows = ", ".join(sorted(modes)) or "nothing"
            warnings.append(
                f"tenants {tenant} and {other} share this GPU as separate MIG GPU instances "
                f"({MIG_GI}); trust class of {tenant} allows: {allows}"
            )
    return warnings


def to_mig_parted(config_name: str, placements: Sequence[Placement]) -> dict[str, Any]:
    """A mig-parted v1 config with one named config: these profiles on all devices."""
    counts = Counter(p.profile for p in placements)
    return {
        "version": "v1",
        "mig-configs": {
            config_name: [
                {
                    "devices": "all",
                    "mig-enabled": True,
                    "mig-devices": {name: counts[name] for name in sorted(counts)},
                }
            ]
        },
    }
