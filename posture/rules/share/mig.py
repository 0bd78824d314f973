"""SHARE-002: compute instances of one MIG GPU instance used by different tenants; also the
compute partitions of one AMD GPU (CPX, DPX, QPX under NPS1: compute instances of one GPU, never
separate instances, posture.rules.vendor_holdings; held through AMD's DRA driver too,
posture.rules.dra_holdings), the same cause on another vendor's GPU."""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import chain, combinations

from inventory.snapshot import Node
from posture.inputs import PostureInputs, TrustClassInfo
from posture.rules.common import GpuHolding, gpu_holdings, sorted_nodes
from posture.rules.pairs import Meeting, PairCause, Party, pair_drafts
from posture.rules.registry import DRA_KINDS, FindingDraft, check
from posture.rules.share.groups import shared_groups
from posture.rules.share.parties import namespace_parties, node_facts, parties_of
from tenants.policy import base_resource

# A100, H100, H200 and B200 have 7 compute slices per GPU (A30: 4), so at most 7 // g GPU
# instances of a "<g>g" profile fit on one GPU.
MAX_MIG_SLICES = 7
AMD_PREFIX = "amd.com/"
# "nvidia.com/mig-1c.3g.40gb" -> compute slices 1, GPU-instance profile "3g.40gb".
_MIG_CI_PROFILE = re.compile(r"^nvidia\.com/mig-(\d+)c\.((\d+)g\..+)$")


def gi_profile(resource: str) -> tuple[str, int] | None:
    """("3g.40gb", 3) for a compute-instance resource such as nvidia.com/mig-1c.3g.40gb."""
    match = _MIG_CI_PROFILE.match(base_resource(resource))
    return (match.group(2), int(match.group(3))) if match else None


def gpu_instance_bound(node: Node, profile: str, slices: int) -> int | None:
    """At most how many GPU instances of `profile` the node has: each holds at least one
    advertised compute instance, and at most 7 // slices fit on one GPU."""
    cis = sum(
        count
        for name, count in node.gpu_capacity.items()
        if (found := gi_profile(name)) is not None and found[0] == profile
    )
    bounds = [cis] if cis else []
    if node.container_gpus:  # MIG lives on the driver's GPUs, not on vfio-bound ones
        bounds.append(node.container_gpus * (MAX_MIG_SLICES // slices))
    return min(bounds) if bounds else None


@check(
    id="SHARE-002",
    needs=DRA_KINDS,
    title="Compute instances of one MIG GPU instance used by different tenants",
    severity="high",
    scope="gpu",
    rationale=(
        "A MIG compute instance (`nvidia.com/mig-<c>c.<g>g.<mem>`) partitions only the SMs of "
        "its GPU instance: the framebuffer, L2 cache, copy engines and memory controllers "
        "stay shared by every compute instance of that GPU instance, so there is no memory "
        "isolation and only partial fault isolation between them. Compute instances of one "
        "GPU instance are not separate tenants. The API does not say which GPU "
        "instance a device belongs to, so pods of different tenants holding compute instances "
        "of the same GPU-instance profile on one node are reported as possibly co-resident, "
        "and as certainly co-resident when the node can only have one such GPU instance. "
        "The compute partitions of an AMD Instinct GPU in a mode other than SPX (CPX, DPX, "
        "QPX) are the same: they share its memory under NPS1 and the rest of the GPU under "
        "any memory mode, and which GPU a pod's partition is on is not visible, unless AMD's "
        "DRA driver names it (certain co-residence on one GPU, none on different ones)."
    ),
    remediation=(
        "Give each tenant whole GPU instances: change the node's mig-parted config (label "
        "`nvidia.com/mig.config=<config>` naming a layout without compute-instance splits, "
        "e.g. `all-3g.40gb`) so the device plugin advertises `nvidia.com/mig-3g.40gb`, and "
        "move the tenants' pods to those resources. Keep compute-instance profiles only on "
        "nodes (tainted per tenant) that serve a single tenant. On an AMD node, set the GPUs "
        "to SPX (the AMD GPU Operator's partitioning profile for the node) or taint the "
        "partitioned node for one tenant."
    ),
    mappings=("SP800-53:SC-4", "SP800-53:SC-39"),
)
def compute_instances_between_tenants(inputs: PostureInputs) -> Iterator[FindingDraft]:
    yield from pair_drafts("SHARE-002", _meetings(inputs), _title)


def _meetings(inputs: PostureInputs) -> Iterator[Meeting]:
    """Each pair of tenants holding compute instances of one GPU-instance profile on a node."""
    for node in sorted_nodes(inputs):
        yield from compute_instance_meetings(inputs, node)
        yield from _amd_partitions(inputs, node)


def compute_instance_meetings(
    inputs: PostureInputs, node: Node, platform: TrustClassInfo | None = None
) -> Iterator[Meeting]:
    """Each pair of parties holding NVIDIA compute instances of one GPU-instance profile on the
    node, whatever the compute-instance sizes (1c.3g.40gb and 2c.3g.40gb may sit in one
    3g.40gb GPU instance), keyed by the profile. SHARE-002 pairs tenants; SHARE-003 passes
    `platform` so the platform's pods are a party too: both read these pairs and verdicts, so
    they never disagree on who may share a GPU instance."""
    groups: dict[tuple[str, int], list[GpuHolding]] = {}
    for holding in gpu_holdings(inputs, node):
        profile = gi_profile(holding.resource)
        if holding.mode == "mig_ci" and profile is not None:
            groups.setdefault(profile, []).append(holding)
    for (profile, slices), holdings in sorted(groups.items()):
        bound = gpu_instance_bound(node, profile, slices)
        # Unclassified namespaces meet one another too (fail closed: parties.namespace_parties).
        for pair in chain(
            combinations(parties_of(holdings, platform).values(), 2),
            combinations(namespace_parties(holdings).values(), 2),
        ):
            yield _meeting(node, profile, bound, pair)


def _amd_partitions(inputs: PostureInputs, node: Node) -> Iterator[Meeting]:
    """Each pair of tenants holding compute partitions of the node's AMD GPUs (the co-tenancy
    groups' mig_ci pools of another vendor: share.groups, vendor_holdings)."""
    for group in shared_groups(inputs, node):
        if group.mode != "mig_ci" or not group.pool.startswith(AMD_PREFIX):
            continue
        details = {"resource": group.pool, "sharing_mode": "mig_ci", "vendor": "AMD"}
        for first, second in group.tenant_pairs:
            if found := group.meeting(first, second, group.pool, details=details):
                yield found


def _meeting(node: Node, profile: str, bound: int | None, pair: tuple[Party, Party]) -> Meeting:
    verdict = "certain" if bound == 1 else "possible"
    why = (
        f"node {node.name} can hold only one {profile} GPU instance"
        if bound == 1
        else f"node {node.name} may hold up to {bound or 'an unknown number of'} {profile} "
        "GPU instances; the API does not say which one each compute instance belongs to"
    )
    facts = {**node_facts(node), "gpu_instances_at_most": bound}
    details = {"gpu_instance_profile": profile, "sharing_mode": "mig_ci"}
    return Meeting(node, profile, pair, verdict, why, facts, details=details)


def _title(cause: PairCause) -> str:
    if cause.key.startswith(AMD_PREFIX):
        return (
            f"{cause.who} use compute partitions ({cause.key}) of AMD GPUs in {cause.where} "
            f"{cause.note}"
        )
    return (
        f"{cause.who} use compute instances of {cause.key} GPU instances in {cause.where} "
        f"{cause.note}"
    )
