"""Place MIG GPU instances on one GPU's memory-slice grid, or say in plain words why not.

Pure: takes requests, returns a LayoutResult. NVIDIA's rules as modelled here: a profile may only
start at its allowed slots (inventory.mig_profiles), instances may not overlap in memory slices,
the compute slices add up to at most the GPU's (7), and no profile exceeds its max_instances.
A GPU instance may be split into compute instances (partitioner.compute); the tenants it is
assigned to get the SHARE-002 / SHARE-003 warnings of partitioner.tenancy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from inventory.mig_profiles import MODELS, GpuModel, MigProfile, model_key
from partitioner.compute import ComputeInstance, ComputeRequest, split
from partitioner.tenancy import ShareWarning, tenant_warnings
from tenants.policy import TrustClassRules

__all__ = [
    "ComputeInstance",
    "ComputeRequest",
    "InstanceRequest",
    "LayoutResult",
    "Placement",
    "to_mig_parted",
    "validate_layout",
]


@dataclass(frozen=True, slots=True)
class InstanceRequest:
    """One GPU instance wanted: a profile, optionally pinned to a start slot, for a tenant,
    optionally split into compute instances."""

    profile: str
    start: int | None = None
    tenant: str | None = None
    compute_instances: tuple[ComputeRequest, ...] = ()


@dataclass(frozen=True, slots=True)
class Placement:
    """One GPU instance on the grid: memory slots start .. start + size - 1."""

    profile: str
    start: int
    size: int
    tenant: str | None = None
    compute_instances: tuple[ComputeInstance, ...] = ()  # (): one CI of the whole GI
    index: int | None = field(default=None, compare=False)  # position in the request

    @property
    def slots(self) -> range:
        return range(self.start, self.start + self.size)


@dataclass(frozen=True, slots=True)
class LayoutResult:
    """Whether the requests fit, where they went (sorted by start), and why not."""

    valid: bool
    placements: list[Placement] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # "SHARE-00n: ..." (str of details)
    model: str | None = None
    compute_slices_used: int = 0
    memory_slices_used: int = 0
    warning_details: list[ShareWarning] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Wanted:
    """A request whose profile exists on the model, with its compute instances made."""

    index: int
    req: InstanceRequest
    prof: MigProfile
    cis: tuple[ComputeInstance, ...]

    def place(self, start: int) -> Placement:
        return Placement(
            self.prof.name, start, self.prof.size, self.req.tenant, self.cis, self.index
        )


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


def _order(p: Placement) -> tuple:
    return (p.start, p.profile, p.tenant or "", _ci_key(p.compute_instances))


def _budget_errors(gpu: GpuModel, wanted: Sequence[_Wanted]) -> list[str]:
    errors = []
    counts = Counter(w.prof.name for w in wanted)
    for name, count in sorted(counts.items()):
        most = gpu.profiles[name].max_instances
        if count > most:
            errors.append(f"{name}: {count} requested, at most {most} fit on one {gpu.key}")
    compute = sum(w.prof.compute for w in wanted)
    if compute > gpu.compute_slices:
        errors.append(f"compute slices: {compute} requested, the GPU has {gpu.compute_slices}")
    memory = sum(w.prof.size for w in wanted)
    if memory > gpu.memory_slots:
        errors.append(f"memory slices: {memory} requested, the GPU has {gpu.memory_slots}")
    return errors


def _pin(wanted: Sequence[_Wanted], errors: list[str]) -> list[Placement]:
    """Place the requests with an explicit start, appending an error for each that cannot go."""
    pinned: list[Placement] = []
    for w in wanted:
        req, prof = w.req, w.prof
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
        pinned.append(w.place(req.start))
    return pinned


def _search(todo: Sequence[_Wanted], placed: list[Placement], best: list) -> list[Placement] | None:
    """Backtrack over allowed starts; `best` keeps the deepest dead end for the explanation."""
    if not todo:
        return list(placed)
    w, rest = todo[0], todo[1:]
    prof = w.prof
    for start in prof.placements:
        if _occupants(placed, start, prof.size):
            continue
        placed.append(w.place(start))
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
    trust_classes: Mapping[str, TrustClassRules] | None = None,
) -> LayoutResult:
    """Fit `instances` on one GPU of `gpu_model` (a key or GFD product label).

    Pinned starts are honoured; the rest are searched, larger instances first. Compute
    instances are checked against their GPU instance. SHARE-002 warnings need no classes; with
    `trust_classes` (tenant slug -> its trust class) SHARE-003 warnings are added too (see
    partitioner.tenancy). Never raises for bad input: problems are in `errors`.
    """
    key = model_key(gpu_model)
    if key is None:
        return LayoutResult(valid=False, errors=[f"unknown GPU model {gpu_model!r} for MIG"])
    gpu = MODELS[key]
    errors: list[str] = []
    wanted: list[_Wanted] = []
    for index, req in enumerate(instances):
        prof = gpu.profiles.get(req.profile)
        if prof is None:
            known = ", ".join(gpu.profiles)
            errors.append(f"{req.profile!r} is not a MIG profile of {key}; known: {known}")
            continue
        label = f"GPU instance {index + 1} ({prof.name})"
        cis, ci_errors = split(prof, req.compute_instances, req.tenant, label)
        errors += ci_errors
        wanted.append(_Wanted(index, req, prof, cis))
    errors += _budget_errors(gpu, wanted)
    placements = _pin(wanted, errors)
    if not errors:
        todo = sorted((w for w in wanted if w.req.start is None), key=_search_order)
        best: list = []
        found = _search(todo, list(placements), best)
        if found is None:
            errors.append(_no_fit(*best))
            placements = best[0]
        else:
            placements = found
    placements = sorted(placements, key=_order)
    details = tenant_warnings(placements, trust_classes)
    return LayoutResult(
        valid=not errors,
        placements=placements,
        errors=errors,
        warnings=[str(w) for w in details],
        model=key,
        compute_slices_used=sum(gpu.profiles[p.profile].compute for p in placements),
        memory_slices_used=sum(p.size for p in placements),
        warning_details=details,
    )


def _search_order(w: _Wanted) -> tuple:
    # Larger first; the rest only makes the outcome independent of the request order.
    return (-w.prof.size, -w.prof.compute, w.prof.name, w.req.tenant or "", _ci_key(w.cis))


def _ci_key(cis: Sequence[ComputeInstance]) -> tuple[tuple[str, str], ...]:
    return tuple((c.profile, c.tenant or "") for c in cis)


def to_mig_parted(config_name: str, placements: Sequence[Placement]) -> dict[str, Any]:
    """A mig-parted v1 config with one named config: these profiles on all devices.

    mig-parted makes one compute instance per GPU instance: a GI holding a single smaller CI is
    written as that CI's profile ("1c.3g.40gb"); a GI split into several CIs can only be written
    as the GI (the split is made afterwards with `nvidia-smi mig -cci`).
    """
    counts = Counter(parted_profile(p) for p in placements)
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


def parted_profile(p: Placement) -> str:
    """The mig-devices key mig-parted would create this GPU instance (and its CI) from."""
    return p.compute_instances[0].profile if len(p.compute_instances) == 1 else p.profile
