"""SHARE-008: the vGPU best-effort scheduler where a class requires predictable performance."""

from __future__ import annotations

from collections.abc import Iterator

from gpuposture.base.enums import SharingMode
from posture.inputs import PostureInputs, TrustClassInfo
from posture.rules.common import gpu_holdings, sorted_nodes
from posture.rules.registry import DRA_KINDS, FindingDraft, check
from posture.rules.share.parties import parties_of
from posture.rules.subjects import node_draft

VGPU_SCHEDULER_UNKNOWN = "unknown scheduler, assumed best effort"
BEST_EFFORT = SharingMode.VGPU_BEST_EFFORT.value


@check(
    id="SHARE-008",
    needs=DRA_KINDS,
    title="vGPU best-effort scheduler where a tenant's class requires predictable performance",
    severity="low",
    scope="node",
    rationale=(
        "NVIDIA vGPU time-shares a physical GPU between VMs under one of three schedulers: "
        "best effort (the default), equal share or fixed share. Best effort gives a VM "
        "whatever the others leave, so a neighbouring VM (outside the cluster's view) can "
        "slow a workload arbitrarily. Kubernetes does not expose which scheduler the host "
        "runs, so an unknown scheduler is assumed to be best effort. A tenant whose trust "
        "class does not allow vgpu_best_effort requires predictable performance (deadlines, "
        "customer SLOs): by default internal, external and sensitive tenants; platform and "
        "internal_trusted ones allow it. Each vGPU type is judged by its own mode: a MIG-backed "
        "vGPU with a GPU instance to itself (Ampere and Hopper types such as A100-3-20C) is "
        "shared with no other VM and is not reported."
    ),
    remediation=(
        "On the hypervisor host, set the vGPU scheduler to equal share or fixed share "
        '(`options nvidia NVreg_RegistryDwords="RmPVMRL=0x01"` for equal share or '
        "`RmPVMRL=0x11` for fixed share in /etc/modprobe.d of the vGPU manager host, then "
        "reload the module or reboot), record the chosen scheduler with the node "
        "pool, or move the tenant to nodes with whole GPUs or MIG GPU instances."
    ),
    mappings=("SP800-53:SC-6",),
)
def vgpu_best_effort(inputs: PostureInputs) -> Iterator[FindingDraft]:
    """One finding per vGPU node (the scheduler is the host's), for every tenant on it whose
    class needs a predictable share. Read per resource, not from the node's strategy: a
    MIG-backed vGPU that has its GPU instance to itself (inventory.resource_modes: `mig_gi`)
    is time-shared with no other VM, so the vGPU scheduler does not reach it."""
    for node in sorted_nodes(inputs):
        shared = [h for h in gpu_holdings(inputs, node) if h.mode == BEST_EFFORT]
        if not shared:
            continue
        parties = parties_of(shared)
        needy = {
            name: party
            for name, party in parties.items()
            if needs_predictable_performance(inputs.tenants_by_slug[name].trust_class)
        }
        if not needy:
            continue
        evidence = {
            "node": node.name,
            "gpu_model": node.gpu_model,
            "node_sharing_strategy": node.sharing_strategy,
            "vgpu_scheduler": VGPU_SCHEDULER_UNKNOWN,
            "tenants": [
                {"tenant": name, "trust_class": p.trust_class, "pods": list(p.pods)}
                for name, p in needy.items()
            ],
        }
        names = ", ".join(f"{name} ({p.trust_class})" for name, p in needy.items())
        title = f"Tenants {names} run on vGPU node {node.name} ({VGPU_SCHEDULER_UNKNOWN})"
        yield node_draft(
            "SHARE-008", node, inputs=inputs, tenants=needy, evidence=evidence, title=title
        )


def needs_predictable_performance(trust_class: TrustClassInfo) -> bool:
    """A class requires a guaranteed GPU share when it does not allow vGPU best effort: it may
    share by the predictable schedulers (vgpu_fixed, vgpu_equal) at most. Read from the class's
    allowed modes, so a class the admin edits is judged as it now reads."""
    return BEST_EFFORT not in trust_class.allowed_modes
