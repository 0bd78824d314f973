"""Other vendors' sharing that SHARE-004 asks an approval for. PURE.

DESIGN §2: a tenant may use a sharing mode only under an approved sharing request. AMD's compute
partitions (`mig_ci`, by the device plugin or AMD's DRA driver) and Intel's cards shared by
`sharedDevNum` (`time_slicing`) are modes the co-tenancy checks already judge (share.groups).
One tenant's partitions or shares alone share nothing with another (docs/clusters.md, DRA: they
need no approval); where another party may hold a part of the same GPU (the pair meets there,
certainly or possibly, as SHARE-001/-002 judge it), the tenant uses the mode as any NVIDIA
sharer does, and SHARE-004 / DRIFT-004 ask for its approval.
"""

from __future__ import annotations

from inventory.snapshot import Node
from inventory.snapshot.accelerators import is_other_accelerator
from posture.inputs import PostureInputs
from posture.rules.holding import GpuHolding
from posture.rules.share.groups import shared_groups
from posture.rules.share.parties import own_party, party_name

AMD_POOLS = "amd.com/"  # an AMD DRA device's pool (posture.rules.dra_holdings.held_pool)


def other_vendor_pool(pool: str) -> bool:
    """A pool of another vendor's devices (AMD's DRA pools, a device plugin's resource)."""
    return pool.startswith(AMD_POOLS) or is_other_accelerator(pool)


def shared_vendor_holdings(inputs: PostureInputs, node: Node) -> list[GpuHolding]:
    """Tenants' holdings of another vendor's shared devices on `node` whose GPU another party
    may hold a part of too."""
    found = []
    for group in shared_groups(inputs, node):
        if not other_vendor_pool(group.pool):
            continue
        met: set[str] = set()
        for first, second in group.pairs:
            if group.meeting(first, second, group.pool) is not None:
                met.update((first.name, second.name))
        found += [
            h
            for h in group.holdings
            if h.tenant is not None
            and not h.through_env
            and (party_name(h) in met or own_party(h) in met)
        ]
    return found
