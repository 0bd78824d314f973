"""SHARE-008: the vGPU best-effort scheduler where a class requires predictable performance."""

from __future__ import annotations

from collections.abc import Iterator

from posture.inputs import PostureInputs
from posture.rules.common import gpu_holdings, holding_evidence, sorted_nodes
from posture.rules.registry import FindingDraft, check
from posture.rules.share.parties import by_tenant, node_draft

# Classes whose workloads need a guaranteed GPU share (latency-bound inference for customers,
# regulated workloads with fixed deadlines): vGPU best effort gives none.
PREDICTABLE_PERFORMANCE_CLASSES = ("sensitive", "external")
VGPU_SCHEDULER_UNKNOWN = "unknown scheduler, assumed best effort"


@check(
    id="SHARE-008",
    title="vGPU best-effort scheduler where a tenant's class requires predictable performance",
    severity="low",
    scope="node",
    rationale=(
        "NVIDIA vGPU time-shares a physical GPU between VMs under one of three schedulers: "
        "best effort (the default), equal share or fixed share. Best effort gives a VM "
        "whatever the others leave, so a neighbouring VM (outside the cluster's view) can "
        "slow a workload arbitrarily. Kubernetes does not expose which scheduler the host "
        "runs, so an unknown scheduler is assumed to be best effort. Sensitive and external "
        "tenants require predictable performance (deadlines, customer SLOs)."
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
    for node in sorted_nodes(inputs):
        if node.sharing_strategy != "vgpu":
            continue
        tenants = by_tenant(gpu_holdings(inputs, node))
        for slug, own in tenants.items():
            cls = inputs.tenants_by_slug[slug].trust_class
            if cls.slug not in PREDICTABLE_PERFORMANCE_CLASSES:
                continue
            evidence = {
                "node": node.name,
                "gpu_model": node.gpu_model,
                "node_sharing_strategy": node.sharing_strategy,
                "vgpu_scheduler": VGPU_SCHEDULER_UNKNOWN,
                "tenant": slug,
                "trust_class": cls.slug,
                "tenant_pods": holding_evidence(own),
            }
            title = (
                f"{cls.slug.title()} tenant {slug} runs on vGPU node {node.name} "
                f"({VGPU_SCHEDULER_UNKNOWN})"
            )
            yield node_draft("SHARE-008", node, slug, evidence, title=title)
