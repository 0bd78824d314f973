"""SHARE-007: a sensitive tenant on a GPU time-sliced or MPS-shared with a lower class."""

from __future__ import annotations

from collections.abc import Iterator

from gpuposture.base.enums import SharingMode
from posture.inputs import PostureInputs, TrustClassInfo
from posture.rules.common import platform_trust_class, sorted_nodes
from posture.rules.pairs import Meeting, PairCause, pair_drafts
from posture.rules.registry import DRA_KINDS, FindingDraft, check
from posture.rules.share.dra_names import env_reach, shared_name
from posture.rules.share.groups import shared_groups

SENSITIVE_CLASS = "sensitive"


@check(
    id="SHARE-007",
    needs=DRA_KINDS,
    title="Sensitive tenant on a GPU time-sliced or MPS-shared with a lower trust class",
    severity="critical",
    scope="gpu",
    rationale=(
        "A sensitive model or dataset never shares a physical GPU in time-sliced or MPS mode "
        "with less trusted code. Time-slicing leaves GPU memory unprotected "
        "between workloads, and MPS puts every client behind one server whose fault ends "
        "them all; a tenant of a lower class (or a platform pod, whose code the sensitive "
        "tenant's approval did not cover) on the same time-sliced or MPS resource of the node "
        "can read leftover memory, observe timing, or deny service to the sensitive workload."
    ),
    remediation=(
        "Move the sensitive tenant to its dedicated pool now: nodes tainted "
        "`gpuposture.io/trust-class=sensitive:NoSchedule` whose device-plugin config "
        "(`nvidia.com/device-plugin.config`) has no `sharing` section, or MIG GPU instances "
        "owned by that tenant alone. Delete the pods named in the evidence so they reschedule "
        "there, then reset the GPUs they used (`nvidia-smi --gpu-reset -i <gpu>`) and record "
        "the reset attestation before any other tenant uses them. A party that reaches the "
        "GPU through NVIDIA_VISIBLE_DEVICES (evidence `mode_basis`) is removed by deleting the "
        "variable from its workload (POD-011), then the same reset."
    ),
    mappings=("SP800-53:SC-4",),
)
def sensitive_on_shared_gpu(inputs: PostureInputs) -> Iterator[FindingDraft]:
    yield from pair_drafts("SHARE-007", _meetings(inputs), _title)


def _meetings(inputs: PostureInputs) -> Iterator[Meeting]:
    """Each sensitive tenant and each party of a lower class (the platform's pods included)
    holding one time-sliced or MPS resource of a node."""
    platform = platform_trust_class(inputs)

    def class_of(name: str) -> TrustClassInfo:
        return inputs.tenants_by_slug[name].trust_class if name else platform

    for node in sorted_nodes(inputs):
        for group in shared_groups(inputs, node):
            pool, mode = group.pool, group.mode
            if mode not in (SharingMode.TIME_SLICING, SharingMode.MPS):
                continue
            parties = group.parties
            for name, own in parties.items():
                cls = class_of(name)
                if not name or cls.slug != SENSITIVE_CLASS:
                    continue
                for other, theirs in parties.items():
                    if class_of(other).rank < cls.rank and group.may_meet(name, other):
                        details = {
                            "resource": pool,
                            "sharing_mode": mode,
                            "sensitive_tenant": name,
                            "trust_class_rank": cls.rank,
                        }
                        key = f"{pool}:{mode}"
                        if found := group.meeting(own, theirs, key, details=details):
                            yield found


def _title(cause: PairCause) -> str:
    first = cause.meetings[0]
    sensitive = first.details["sensitive_tenant"]
    other = next(p for p in first.parties if p.name != sensitive)
    who = f"{other.name} ({other.trust_class})" if other.name else "platform pods"
    resource = shared_name(cause, first.details["resource"])
    if reach := env_reach(cause):  # the variable's time-sharing, not a configured mode
        where = f"{cause.where}, {reach}"
        return f"Sensitive tenant {sensitive} shares {resource} with {who} in {where}"
    return (
        f"Sensitive tenant {sensitive} shares {resource} by "
        f"{first.details['sharing_mode']} with {who} in {cause.where}"
    )
