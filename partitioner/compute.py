"""Split one MIG GPU instance into compute instances, or say in plain words why not.

Pure. NVIDIA's rule as modelled here (facts in inventory.mig_profiles.CI_SLICES): a GPU
instance of N compute slices holds compute instances whose slices add up to at most N, each of a
size that GI offers, and no more of one size than the GI allows. CIs of one GI share its memory
and L2: they are not an isolation boundary between tenants (DESIGN §2, SHARE-002).

Where each CI sits inside its GI (its compute-slice placement) is not modelled: the sizes and
counts above already exclude the splits nvidia-smi refuses on the GPUs in our table.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from inventory.mig_profiles import MigProfile, ci_profile_name, ci_profiles

# "2c", "2c.3g.40gb", or the GI's own name for a CI of the whole GI.
_CI_NAME = re.compile(r"^(?P<k>\d{1,2})c(?:\.(?P<gi>.+))?$")


@dataclass(frozen=True, slots=True)
class ComputeRequest:
    """One compute instance wanted inside a GPU instance, for a tenant (None: the GI's)."""

    profile: str
    tenant: str | None = None


@dataclass(frozen=True, slots=True)
class ComputeInstance:
    """A compute instance: NVIDIA's profile name, its compute slices, whose it is."""

    profile: str
    slices: int
    tenant: str | None = None


def ci_size(gi: MigProfile, name: str) -> int | None:
    """Compute slices of the CI called `name` in `gi`, or None when `name` is not one of its
    CI profiles ("2c" and "2c.3g.40gb" are 2 in a 3g.40gb; "3g.40gb" is the whole GI)."""
    if name == gi.name:
        return gi.compute
    match = _CI_NAME.match(name.strip())
    if match is None or (match["gi"] is not None and match["gi"] != gi.name):
        return None
    slices = int(match["k"])
    return slices if slices in ci_profiles(gi) else None


def allowed_names(gi: MigProfile) -> str:
    """The CI profiles of `gi` in words: "1c.3g.40gb, 2c.3g.40gb or 3g.40gb"."""
    names = [ci_profile_name(gi, k) for k in sorted(ci_profiles(gi))]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def split(
    gi: MigProfile, wanted: Sequence[ComputeRequest], gi_tenant: str | None, label: str
) -> tuple[tuple[ComputeInstance, ...], list[str]]:
    """The compute instances of `wanted` in `gi`, and an error per rule they break.

    `label` names the GI in messages ("GPU instance 2 (3g.40gb)"). A CI without a tenant
    belongs to the GI's tenant. No CIs wanted means one CI of the whole GI, returned as ().
    """
    errors: list[str] = []
    made: list[ComputeInstance] = []
    for ci in wanted:
        slices = ci_size(gi, ci.profile)
        if slices is None:
            errors.append(
                f"{label}: {ci.profile!r} is not a compute-instance profile of {gi.name}; "
                f"allowed: {allowed_names(gi)}"
            )
            continue
        made.append(ComputeInstance(ci_profile_name(gi, slices), slices, ci.tenant or gi_tenant))
    total = sum(ci.slices for ci in made)
    if total > gi.compute:
        parts = " + ".join(ci.profile for ci in made)
        errors.append(
            f"{label}: its compute instances need {total} compute slices ({parts}), "
            f"a {gi.name} GPU instance has {gi.compute}"
        )
    limits = ci_profiles(gi)
    for slices, count in sorted(Counter(ci.slices for ci in made).items()):
        if count > limits[slices]:
            name = ci_profile_name(gi, slices)
            errors.append(
                f"{label}: {count} x {name} requested, at most {limits[slices]} fit in "
                f"a {gi.name} GPU instance"
            )
    return tuple(made), errors
