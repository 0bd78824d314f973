"""DRIFT-004: the sharing mode observed differs from the approved one (judged with
SHARE-004 in posture/rules/share/approvals.py)."""

from __future__ import annotations

from collections.abc import Iterator

from posture.inputs import PostureInputs
from posture.rules.registry import FindingDraft, check
from posture.rules.share.approvals import approval_findings


@check(
    id="DRIFT-004",
    title="The sharing mode observed differs from the approved one",
    severity="high",
    scope="tenant",
    rationale=(
        "The tenant's approval covers one sharing mode, and its GPUs are shared by another: "
        "for example approved for its own MIG GPU instances and observed time-slicing, which "
        "gives no memory or fault isolation. The change happened in the cluster (a device "
        "plugin config, a MIG layout, a relabelled node) without a new request, so the "
        "isolation the approval relied on is gone. An observed mode that isolates better than "
        "an approved one covering the pool is said so (title and evidence), at the same "
        "severity: nobody approved the change, and the next one may go the other way."
    ),
    remediation=(
        "Restore the approved configuration on the nodes in the evidence (the node's "
        "`nvidia.com/device-plugin.config` or `nvidia.com/mig.config` label, or the pod's GPU "
        "resource name), or file a sharing request for the observed mode and have it decided. "
        "Then find who changed it (the API server audit log for the node and ConfigMap)."
    ),
    severity_rule=(
        "Lowered to low when the mode in use isolates better than the weakest approved mode "
        "covering its node pool (a record to correct, not an exposure)."
    ),
    mappings=("SP800-53:CM-3",),
)
def sharing_mode_drift(inputs: PostureInputs) -> Iterator[FindingDraft]:
    yield from (draft for check_id, draft in approval_findings(inputs) if check_id == "DRIFT-004")
