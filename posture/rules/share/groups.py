"""A node's GPU holdings grouped by pool and sharing mode (common.pools_by_mode), with their
parties and which pairs of them meet: what the co-tenancy checks (SHARE-001, -003, -006, -007)
judge. Several checks read the same groups and judge the same pairs, so each group is built
once per evaluation (inputs.memo) and each pair's co-residence is worked out once: the parties
of a group are the same whichever check asks."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from itertools import chain, combinations
from typing import Any, cast

from inventory.snapshot import Node
from posture.inputs import PostureInputs, TrustClassInfo
from posture.rules.common import (
    GpuHolding,
    gpu_holdings,
    platform_trust_class,
    pools_by_mode,
    sorted_nodes,
)
from posture.rules.pairs import Meeting, Party
from posture.rules.share.dra_names import dra_details
from posture.rules.share.parties import (
    co_residence,
    may_meet,
    namespace_parties,
    node_facts,
    pair_verdict,
    parties_of,
    party_holds,
    reaches_every_gpu,
)
from posture.rules.subjects import PLATFORM_PARTY
from posture.rules.vendor_holdings import vendor_holdings


class SharedGroup:
    """One pool and mode of one node: its holdings, its parties (the platform's pods as one,
    PLATFORM_PARTY) and the pairs of them that share its GPUs by the mode."""

    def __init__(
        self,
        node: Node,
        pool: str,
        mode: str,
        holdings: list[GpuHolding],
        platform: TrustClassInfo,
        facts: dict[str, Any],
    ) -> None:
        self.node, self.pool, self.mode, self.holdings = node, pool, mode, holdings
        self._platform = platform
        self._facts = facts  # node_facts(node), read by every meeting on the node
        self._verdicts: dict[tuple[str, str], tuple[str, str] | None] = {}
        self._reaching: dict[str, bool] = {}
        self._residences: dict[tuple[int, int], tuple[str, str]] = {}

    @cached_property
    def parties(self) -> dict[str, Party]:
        """Every party holding the group's GPUs, by name (sorted)."""
        return parties_of(self.holdings, self._platform)

    @cached_property
    def pairs(self) -> tuple[tuple[Party, Party], ...]:
        """Each pair of parties (in name order) that shares the group's GPUs (may_meet), then
        each pair of unclassified namespaces that does (namespace_parties): the unclassified
        party meets tenants and the platform as one, but its namespaces meet one another."""
        found = chain(
            combinations(self.parties.values(), 2),
            combinations(namespace_parties(self.holdings).values(), 2),
        )
        return tuple((a, b) for a, b in found if self.may_meet(a.name, b.name))

    @cached_property
    def tenant_pairs(self) -> tuple[tuple[Party, Party], ...]:
        """`pairs` without the platform's pods."""
        return tuple(p for p in self.pairs if PLATFORM_PARTY not in (p[0].name, p[1].name))

    @cached_property
    def _holds(self) -> dict[str, tuple[bool, bool]]:
        return party_holds(self.holdings, self.mode)

    def may_meet(self, first: str, second: str) -> bool:
        """Whether two parties of the group share its GPUs by its mode (parties.may_meet)."""
        return may_meet(self._holds, first, second)

    def _everywhere(self, party: Party) -> bool:
        """reaches_every_gpu, once per party."""
        if party.name not in self._reaching:
            self._reaching[party.name] = reaches_every_gpu(party)
        return self._reaching[party.name]

    def _residence(self, own: int, others: int) -> tuple[str, str]:
        """co_residence on the group's node and pool, once per pair of replica counts (most
        pairs on a node hold alike: one replica each)."""
        if (own, others) not in self._residences:
            self._residences[own, others] = co_residence(self.node, self.pool, own, others)
        return self._residences[own, others]

    def meeting(self, first: Party, second: Party, key: str, **extra: Any) -> Meeting | None:
        """The two parties' meeting on the node, its verdict (parties.pair_verdict) worked out
        once per ordered pair; None when the scheduler placed them on different devices."""
        names = (first.name, second.name)
        if names not in self._verdicts:
            verdict = pair_verdict(self.node, first, second, self._everywhere, self._residence)
            self._verdicts[names] = verdict
        found = self._verdicts[names]
        if found is None:
            return None
        # The claims and DeviceClass the pair shares through DRA, for titles and evidence.
        if dra := dra_details(self.holdings, names):
            extra["details"] = {**extra.get("details", {}), **dra}
        return Meeting(self.node, key, (first, second), *found, self._facts, **extra)


def shared_groups(inputs: PostureInputs, node: Node) -> list[SharedGroup]:
    """The node's groups (pools_by_mode order), built once per evaluation."""
    key = ("shared_groups", node.name)
    if key not in inputs.memo:
        platform, facts = platform_trust_class(inputs), node_facts(node)
        inputs.memo[key] = [
            SharedGroup(node, pool, mode, holdings, platform, facts)
            for (pool, mode), holdings in pools_by_mode(_holdings(inputs, node)).items()
        ]
    return cast("list[SharedGroup]", inputs.memo[key])  # what this function stored


def _holdings(inputs: PostureInputs, node: Node) -> list[GpuHolding]:
    """The node's NVIDIA holdings and the other vendors' devices parts of one GPU that pods of
    several tenants may hold (vendor_holdings: Intel's shared cards, AMD's compute
    partitions). Those stay out of gpu_holdings: DCGM attribution, NVIDIA_VISIBLE_DEVICES and
    approvals of NVIDIA sharing configs do not read them."""
    return gpu_holdings(inputs, node) + vendor_holdings(inputs, node)


def tenant_pairs_sharing(inputs: PostureInputs, mode: str) -> Iterator[Meeting]:
    """Each pair of tenants holding one resource of a node shared by `mode` (time-slicing,
    MPS): the resource is the key."""
    for node in sorted_nodes(inputs):
        for group in shared_groups(inputs, node):
            if group.mode != mode:
                continue
            details = {"resource": group.pool, "sharing_mode": mode}
            for first, second in group.tenant_pairs:
                if found := group.meeting(first, second, group.pool, details=details):
                    yield found
