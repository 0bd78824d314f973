"""What a co-tenancy title calls a resource shared through DRA. PURE.

A DRA holding's pool is the internal key "nvidia.com/gpu" (posture.rules.dra_holdings), so
that DRA and device-plugin holdings of one GPU meet; a cluster that hands out GPUs through DRA
may advertise no `nvidia.com/gpu` at all, so a title saying "time-slice nvidia.com/gpu" names a
resource no one asked for. Titles and evidence name the DeviceClass and the claims instead;
the key (and so the finding's identity) is unchanged. Claims are written "<namespace>/<name>":
tenants.redaction hides another tenant's claim with its namespace."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from posture.rules.holding import ENV_RESOURCE, EVERY_GPU, GpuHolding
from posture.rules.pairs import UNCLASSIFIED_PREFIX, PairCause
from posture.rules.share.parties import own_party, party_name
from posture.rules.subjects import PLATFORM_PARTY
from tenants.mapping import UNCLASSIFIED

CLAIM_PREFIX = "resourceclaim/"  # GpuHolding.resource of a DRA holding
CLAIMS_SHOWN = 3
WHOLE_GPU_POOLS = ("nvidia.com/gpu", "amd.com/gpu")  # posture.rules.dra_holdings.held_pool
ENV_SAID = "GPUs reached through NVIDIA_VISIBLE_DEVICES"


def dra_details(holdings: Iterable[GpuHolding], parties: tuple[str, str]) -> dict[str, Any]:
    """The DRA claims and DeviceClasses by which the two parties hold the group's GPUs, and
    whether they hold them other ways too; {} where neither holds through DRA."""
    claims: set[str] = set()
    classes: set[str] = set()
    other: set[str] = set()
    for h in holdings:
        if party_name(h) not in parties and own_party(h) not in parties:
            continue
        if h.resource.startswith(CLAIM_PREFIX):
            claims.add(h.resource.removeprefix(CLAIM_PREFIX))
            if h.device_class:
                classes.add(h.device_class)
        else:
            other.add(h.resource)
    if not claims:
        return {}
    return {
        "dra_claims": sorted(claims),
        "dra_device_classes": sorted(classes),
        # The other ways either holds them (a device-plugin resource, NVIDIA_VISIBLE_DEVICES).
        "other_resources": sorted(other),
    }


def shared_name(cause: PairCause, fallback: str) -> str:
    """The shared resource as a title says it: `fallback` (the resource) where no DRA claim
    holds it; else the DeviceClass and claims, over every meeting of the pair."""
    claims = sorted({c for m in cause.meetings for c in m.details.get("dra_claims", ())})
    if not claims:
        return fallback
    classes = sorted({c for m in cause.meetings for c in m.details.get("dra_device_classes", ())})
    shown = ", ".join(claims[:CLAIMS_SHOWN])
    if len(claims) > CLAIMS_SHOWN:
        shown += f" and {len(claims) - CLAIMS_SHOWN} more"
    word = "ResourceClaims" if len(claims) > 1 else "ResourceClaim"
    of_class = f" of DeviceClass {', '.join(classes)}" if classes else ""
    # A whole-GPU pool key names a resource DRA does not advertise; a MIG profile's or a
    # partition's ("nvidia.com/mig-1g.10gb") still says what is shared.
    what = "GPUs" if fallback in WHOLE_GPU_POOLS else fallback
    name = f"{what}{of_class} ({word} {shown})"
    other = sorted({r for m in cause.meetings for r in m.details.get("other_resources", ())})
    if other:
        said = [ENV_SAID if r == ENV_RESOURCE else r for r in other]
        return f"{name} and {', '.join(said)}"
    return name


def env_reach(cause: PairCause) -> str:
    """How the pair shares where a party reaches the GPUs through NVIDIA_VISIBLE_DEVICES, as a
    title says it ("quant reaching it through NVIDIA_VISIBLE_DEVICES=all"); "" where neither
    does. Such a hold is filed under the time_slicing mode (it time-shares whatever it reaches)
    and joins the node's MIG pools, so a title saying "time-slice nvidia.com/mig-1g.18gb"
    would name a mode nobody configured: the way in is the variable."""
    reaching: dict[str, bool] = {}  # party -> every one of its env holds is `all`
    for meeting in cause.meetings:
        for party in meeting.parties:
            env = [e for e in party.pods if e.get("resource") == ENV_RESOURCE]
            if env:
                every = all(e.get("reach") == EVERY_GPU for e in env)
                reaching[party.name] = reaching.get(party.name, True) and every
    if not reaching:
        return ""
    names = sorted(reaching)
    value = "=all" if all(reaching.values()) else ""
    who = "both" if len(names) == 2 else _party_words(names[0])
    return f"{who} reaching it through NVIDIA_VISIBLE_DEVICES{value}"


def _party_words(name: str) -> str:
    if name == PLATFORM_PARTY:
        return "platform pods"
    if name == UNCLASSIFIED:
        return "pods of a namespace no tenant owns"
    if name.startswith(UNCLASSIFIED_PREFIX):
        return f"pods of namespace {name.removeprefix(UNCLASSIFIED_PREFIX)}"
    return name
