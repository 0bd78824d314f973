"""SHARE-006: MPS shared between different tenants."""

from __future__ import annotations

from collections.abc import Iterator

from posture.inputs import PostureInputs
from posture.rules.common import gpu_holdings, holding_evidence, pools_by_mode, sorted_nodes
from posture.rules.registry import FindingDraft, check
from posture.rules.share.parties import (
    by_tenant,
    co_residence,
    node_draft,
    node_facts_mig,
    replicas,
)


@check(
    id="SHARE-006",
    title="MPS shared between different tenants",
    severity="high",
    scope="gpu",
    rationale=(
        "Under MPS all clients of a GPU submit work through one MPS server: address spaces "
        "are separated on Volta and later, but a fatal fault in any client (an illegal memory "
        "access, an out-of-range kernel) tears down every client of that server, performance "
        "limits are advisory, and DCGM-Exporter cannot attribute usage per pod. The device "
        "plugin hands out MPS replicas without regard to tenant, so two tenants on one MPS "
        "node can share a physical GPU and one can crash or starve the other."
    ),
    remediation=(
        "Keep `sharing.mps` only in the device-plugin config of a single-tenant pool: label "
        "the other nodes with a `nvidia.com/device-plugin.config` that has no `sharing` "
        "section, taint the MPS pool for one tenant and give that tenant's pods the matching "
        "toleration and nodeSelector. Between tenants use MIG GPU instances or whole GPUs."
    ),
    mappings=("SP800-53:SC-39",),
)
def mps_between_tenants(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for node in sorted_nodes(inputs):
        for (pool, mode), holdings in pools_by_mode(gpu_holdings(inputs, node)).items():
            tenants = by_tenant(holdings)
            if mode != "mps" or len(tenants) < 2:
                continue
            for slug, own in tenants.items():
                others = {o: hs for o, hs in tenants.items() if o != slug}
                verdict, why = co_residence(
                    node, pool, replicas(own), sum(replicas(hs) for hs in others.values())
                )
                evidence = {
                    **node_facts_mig(node, pool, mode),
                    "co_residence": verdict,
                    "co_residence_reason": why,
                    "tenant": slug,
                    "tenant_pods": holding_evidence(own),
                    "other_tenants": {o: holding_evidence(hs) for o, hs in others.items()},
                }
                title = (
                    f"Tenant {slug} shares {pool} by MPS on node {node.name} with "
                    f"{', '.join(others)} ({verdict} co-residence)"
                )
                yield node_draft("SHARE-006", node, slug, evidence, key=pool, title=title)
