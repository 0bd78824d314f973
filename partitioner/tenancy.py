"""The sharing warnings a MIG layout raises for the tenants it is assigned to, before anything
is applied: SHARE-002 and SHARE-003 of DESIGN §5, judged by tenants.policy.

Pure. On one GPU, tenants in different GPU instances share it by `mig_gi`; tenants whose compute
instances sit in one GPU instance share it by `mig_ci`, which isolates nothing between them
(DESIGN §2), so that alone is SHARE-002 whatever their classes say.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Protocol

from tenants.policy import TrustClassRules, may_share

SHARE_002 = "SHARE-002"
SHARE_003 = "SHARE-003"
MIG_GI = "mig_gi"
MIG_CI = "mig_ci"


@dataclass(frozen=True, slots=True)
class ClassRules:
    """A trust class as the policy reads it (tenants.policy.TrustClassRules)."""

    slug: str
    allowed_modes: tuple[str, ...] = ()
    same_class_only_modes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ShareWarning:
    """One warning: the check it anticipates, in words, and whom it concerns."""

    check: str
    message: str
    tenants: tuple[str, ...]
    mode: str
    instance: int | None = None  # the GPU instance's position in the request, for mig_ci

    def __str__(self) -> str:
        return f"{self.check}: {self.message}"


class _Placed(Protocol):
    """What the warnings read of a placed GPU instance (partitioner.layout.Placement)."""

    @property
    def profile(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def tenant(self) -> str | None: ...
    @property
    def index(self) -> int | None: ...
    @property
    def compute_instances(self) -> Sequence[_HasTenant]: ...


class _HasTenant(Protocol):
    @property
    def tenant(self) -> str | None: ...


def instance_tenants(placement: _Placed) -> tuple[str, ...]:
    """Everyone with a share of this GPU instance: its tenant and its compute instances'."""
    named = {placement.tenant, *(ci.tenant for ci in placement.compute_instances)}
    return tuple(sorted(t for t in named if t))


def tenant_warnings(
    placements: Sequence[_Placed], classes: Mapping[str, TrustClassRules] | None
) -> list[ShareWarning]:
    """SHARE-002 for each GPU instance whose compute instances go to different tenants; with
    `classes` (tenant slug -> trust class), SHARE-003 for each pair of tenants sharing the GPU
    by a mode either class forbids. A tenant missing from `classes` allows nothing."""
    warnings: list[ShareWarning] = []
    for p in placements:
        tenants = instance_tenants(p)
        if len(tenants) > 1:
            warnings.append(_share_002(p, tenants))
        if classes is not None:
            for a, b in combinations(tenants, 2):
                where = f"compute instances of {p.profile} at {p.start}"
                warnings += _share_003(a, b, MIG_CI, where, classes, p.index)
    if classes is not None:
        for a, b in _gi_pairs(placements):
            warnings += _share_003(a, b, MIG_GI, "separate MIG GPU instances", classes, None)
    return warnings


def _share_002(p: _Placed, tenants: tuple[str, ...]) -> ShareWarning:
    return ShareWarning(
        SHARE_002,
        f"{p.profile} at {p.start} has compute instances for {_and(tenants)}: compute "
        "instances of one GPU instance share its memory, so they do not isolate tenants; "
        "give each tenant its own GPU instance",
        tenants,
        MIG_CI,
        p.index,
    )


def _gi_pairs(placements: Sequence[_Placed]) -> list[tuple[str, str]]:
    """Pairs of different tenants holding shares of different GPU instances, sorted."""
    pairs: set[tuple[str, str]] = set()
    for x, y in combinations(range(len(placements)), 2):
        for a in instance_tenants(placements[x]):
            for b in instance_tenants(placements[y]):
                if a != b:
                    pairs.add((min(a, b), max(a, b)))
    return sorted(pairs)


def _share_003(
    a: str,
    b: str,
    mode: str,
    where: str,
    classes: Mapping[str, TrustClassRules],
    instance: int | None,
) -> list[ShareWarning]:
    head = f"tenants {a} and {b} share this GPU as {where} ({mode})"
    unknown = [t for t in (a, b) if t not in classes]
    if unknown:
        reason = f"{_and(unknown)} {'has' if len(unknown) == 1 else 'have'} no trust class here"
        return [ShareWarning(SHARE_003, f"{head}; {reason}", (a, b), mode, instance)]
    decision = may_share(classes[a], classes[b], mode)
    if decision.allowed:
        return []
    return [ShareWarning(SHARE_003, f"{head}; {decision.rule}", (a, b), mode, instance)]


def _and(names: Sequence[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
