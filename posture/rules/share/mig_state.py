"""SHARE-009: a node's MIG reconfiguration failed or is stuck, so its real layout is unknown
(inventory/mig_state.py: failed at once; pending or rebooting on syncs 15 minutes apart; a
requested layout MIG Manager never reported on while GFD sees no MIG device: not applied)."""

from __future__ import annotations

from collections.abc import Iterator

from inventory.mig_state import NOT_APPLIED, mig_layout_problem
from posture.inputs import PostureInputs
from posture.rules.common import gpu_holdings, holding_evidence, sorted_nodes, tenants_on_node
from posture.rules.registry import DRA_KINDS, MEMBERS_SHOWN, FindingDraft, check
from posture.rules.subjects import node_draft
from tenants.policy import is_mig_resource


@check(
    id="SHARE-009",
    needs=DRA_KINDS,
    title="MIG reconfiguration failed or stuck: the node's real MIG layout is unknown",
    severity="high",
    scope="node",
    rationale=(
        "MIG Manager applies the layout a node's `nvidia.com/mig.config` label requests and "
        "reports `nvidia.com/mig.config.state`: `pending` (or `rebooting`) while it works, "
        "`success` or `failed` after. A failed reconfiguration, one still pending on syncs "
        "far apart, or a requested layout MIG Manager never reported on while GPU Feature "
        "Discovery sees no MIG device (MIG Manager not running on the node), leaves the GPUs "
        "in a layout nobody asked for: MIG may be off, instances "
        "may be missing or merged, the device plugin may advertise stale devices. Tenants "
        "placed there for the isolation of their own MIG GPU instances may not have it, and "
        "the sharing checks cannot judge the node from a layout that does not hold, so its "
        "MIG-based sharing is reported unknown rather than assumed."
    ),
    remediation=(
        "Read MIG Manager's log on the node (`kubectl logs -n <gpu-operator namespace> "
        "<nvidia-mig-manager pod on the node>`): common causes are GPU processes still running "
        "(drain GPU pods first), a profile the GPU model does not support, or a reboot the "
        "node needs (WITH_REBOOT). Fix the cause and relabel the node "
        "(`kubectl label node <node> nvidia.com/mig.config=<config> --overwrite`), or set a "
        "layout that applies; check `nvidia-smi mig -lgi` on the node before scheduling "
        "tenants there again. Cordon the node until the state reads `success`."
    ),
    mappings=("SP800-53:SC-39", "SP800-53:CM-6"),
)
def mig_reconfiguration_unknown(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for node in sorted_nodes(inputs):
        problem = mig_layout_problem(node)
        if problem is None:
            continue
        holdings = [h for h in gpu_holdings(inputs, node) if h.tenant is not None]
        held = {h.tenant.slug: h.tenant for h in holdings if h.tenant is not None}
        tenants = [held[s] for s in sorted(held)] or tenants_on_node(inputs, node.name)
        evidence = {
            "node": node.name,
            "mig_config_state": problem["state"],
            "requested_mig_config": problem["requested"] or None,
            "why": problem["why"],
            "state_first_seen": node.mig_config_state_since,
            "state_last_seen": node.mig_config_state_seen,
            "mig_strategy": node.mig_strategy,
            "advertised_mig_resources": {
                name: count for name, count in node.gpu_capacity.items() if is_mig_resource(name)
            },
            "sharing_facts": "unknown: the node's MIG instances are not judged as isolated",
            "tenant_gpu_holdings": holding_evidence(holdings)[:MEMBERS_SHOWN],
        }
        state = problem["state"]
        state = state if state in ("failed", NOT_APPLIED) else f"stuck {state}"
        requested = problem["requested"] or "(no layout label)"
        title = (
            f"MIG reconfiguration of node {node.name} to {requested} {state}: its MIG layout "
            "is unknown"
        )
        yield node_draft(
            "SHARE-009", node, inputs=inputs, tenants=tenants, evidence=evidence, title=title
        )
