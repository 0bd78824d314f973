"""SHARE-006: MPS shared between different tenants."""

from __future__ import annotations

from collections.abc import Iterator

from posture.inputs import PostureInputs
from posture.rules.pairs import PairCause, pair_drafts
from posture.rules.registry import DRA_KINDS, FindingDraft, check
from posture.rules.share.dra_names import shared_name
from posture.rules.share.groups import tenant_pairs_sharing


@check(
    id="SHARE-006",
    needs=DRA_KINDS,
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
    yield from pair_drafts("SHARE-006", tenant_pairs_sharing(inputs, "mps"), _title)


def _title(cause: PairCause) -> str:
    return f"{cause.who} share {shared_name(cause, cause.key)} by MPS in {cause.where} {cause.note}"
