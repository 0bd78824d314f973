"""POD-009: GPU pods of a dedicated-pool tenant outside its class's tainted pool, and GPU pods
of any tenant inside another class's dedicated pool (DESIGN §3)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from inventory.snapshot import Node, Pod
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.class_pools import (
    class_labels,
    class_taints_naming_none,
    expected_taints,
    naming_none_note,
    node_pool_classes,
    tainted_for,
)
from posture.rules.common import (
    nodes_by_name,
    tenant_pods,
    tenants_on_node,
)
from posture.rules.dra_holdings import uses_accelerator
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import tenant_slugs, workload_draft
from tenants.mapping import PLATFORM_CLASS


@check(
    id="POD-009",
    needs=("ResourceClaim",),
    title="GPU pod of a dedicated-pool tenant scheduled outside its class's tainted pool",
    severity="high",
    scope="tenant",
    rationale=(
        "External and sensitive tenants require a dedicated node pool: nodes "
        "tainted for the class (a key of GPUPOSTURE_POOL_TAINT_KEYS, default "
        "`gpuposture.io/trust-class`, valued `<class>`, or an exact taint the class lists) "
        "with NoSchedule or NoExecute, so only "
        "that class's pods run there (a node tainted for two classes is neither's: whatever "
        "runs there tolerates another class's taint). A GPU pod of such a tenant on a node "
        "without that taint "
        "shares the node's kernel, container runtime, GPU driver and (depending on the sharing "
        "mode) GPUs with whatever else is scheduled there, which is exactly what the "
        "dedicated pool exists to prevent. It usually means a missing nodeSelector, a "
        "toleration broad enough to land anywhere, or a pool that lost its taint. The same "
        "holds from the pool's side: a GPU pod of any other class inside a dedicated pool "
        "(it tolerates the pool's taint, was bound by nodeName, or predates a NoSchedule "
        "taint, which evicts nobody) breaks that pool for the tenants it was made for. A GPU "
        "pod is one holding GPUs of any vendor (`amd.com/gpu`, `habana.ai/gaudi`, "
        "`gpu.intel.com/xe` as much as `nvidia.com/gpu`): a dedicated pool is one whatever the "
        "vendor."
    ),
    remediation=(
        "Taint the class's pool (`kubectl taint nodes <node> "
        "gpuposture.io/trust-class=<class>:NoSchedule --overwrite`, which replaces the value "
        "of a taint the node has under that key with that effect, set in the node pool "
        "configuration so "
        "new nodes get it), give the tenant's workloads that toleration and a nodeSelector "
        "`gpuposture.io/trust-class: <class>` (or node affinity), remove tolerations with "
        "`operator: Exists` and no key, and delete the pod named in the evidence so it is "
        "rescheduled inside the pool (a pod inside another class's pool: remove its toleration "
        "for that pool's taint and delete it, or taint the pool NoExecute so it is evicted). "
        "Enforce the nodeSelector and tolerations with an admission policy."
    ),
    mappings=("SP800-53:SC-39",),
)
def gpu_pod_outside_class_pool(inputs: PostureInputs) -> Iterator[FindingDraft]:
    nodes = nodes_by_name(inputs)
    dedicated = _dedicated_classes(inputs)
    # Read once per node, not per pod: a shared node carries twenty pods of a dozen tenants.
    pool_for: dict[str, list[str]] = {}
    on_node: dict[str, list[TenantInfo]] = {}
    for pod, tenant in tenant_pods(inputs):
        cls = tenant.trust_class
        node = nodes.get(pod.node_name or "")
        # An unscheduled pod, or a node outside the snapshot, cannot be judged.
        # uses_accelerator counts a KAI fraction (no nvidia.com/* request), a container naming
        # GPUs in NVIDIA_VISIBLE_DEVICES on a node that honours it, and another vendor's GPU
        # (amd.com/gpu, habana.ai/gaudi): a dedicated pool is one whatever the vendor.
        if node is None or not uses_accelerator(inputs, pod):
            continue
        # Another class's dedicated pool this pod sits in (a toleration broad enough, a pod
        # bound by nodeName, or one that predates the taint: NoSchedule evicts nobody).
        # The platform class's own system workloads (validators, burn-in) run in every pool.
        if node.name not in pool_for:
            pool_for[node.name] = node_pool_classes(inputs, node)
        invaded = [
            c
            for c in pool_for[node.name]
            if c != cls.slug and c in dedicated and cls.slug != PLATFORM_CLASS
        ]
        outside = cls.requires_dedicated_pool and not tainted_for(inputs, node, cls.slug)
        if outside or invaded:
            if node.name not in on_node:
                on_node[node.name] = tenants_on_node(inputs, node.name)
            pool = (pool_for[node.name], on_node[node.name])
            yield _pool_draft(inputs, pod, tenant, node, invaded, pool)


def _env_evidence(inputs: PostureInputs, pod: Pod) -> dict[str, Any]:
    # Imported here: env_holdings imports posture.rules.pod.visible_devices, whose package
    # (posture.rules.pod) imports this module first.
    from posture.rules.env_holdings import env_reach

    held = env_reach(inputs, pod)
    return {"gpu_access_through_visible_devices": held} if held else {}


def _dedicated_classes(inputs: PostureInputs) -> set[str]:
    """The classes known to require a dedicated pool (those of the tenants and the class
    unclassified namespaces are judged under)."""
    classes = [t.trust_class for t in inputs.tenants] + [inputs.unclassified.trust_class]
    return {c.slug for c in classes if c.requires_dedicated_pool}


def _pool_draft(
    inputs: PostureInputs,
    pod: Pod,
    tenant: TenantInfo,
    node: Node,
    invaded: list[str],
    pool: tuple[list[str], list[TenantInfo]],
) -> FindingDraft:
    """`pool`: the classes the node's pool is for (node_pool_classes) and the tenants with a
    pod on the node (tenants_on_node)."""
    pool_classes, on_node = pool
    slug = tenant.trust_class.slug
    evidence = {
        "gpu_resources": pod.accelerator_resources,
        **({"gpu_fraction": pod.gpu_fraction} if pod.gpu_fraction else {}),
        **_env_evidence(inputs, pod),
        "expected_taints": expected_taints(inputs, slug),
        "node_selector": dict(pod.node_selector),
        "tolerations": [dict(t) for t in pod.tolerations],
    }
    # Replicas land on different nodes: each pod's entry names its node and what it carries.
    where = {
        "node_taints": [f"{t.key}={t.value}:{t.effect}" for t in node.taints],
        "node_class_labels": class_labels(inputs, node),
        "node_pool_for": list(pool_classes),
    }
    # A taint meant as a class pool whose value names no class: why the node is in no pool.
    if naming_none := class_taints_naming_none(inputs, node):
        where["node_taints_naming_no_class"] = naming_none
        where["naming_no_class"] = naming_none_note(inputs, node)
    # The tenants whose dedicated pool the pod sits in are affected by it too.
    owners = [t for t in on_node if t.trust_class.slug in invaded]
    if invaded:
        where["inside_pool_of"] = [{"class": c} for c in invaded]
        where["pool_tenants_on_node"] = [t.slug for t in owners]
    where_words = (
        f"inside the {' and '.join(invaded)} pool" if invaded else f"outside the {slug} pool"
    )
    title = (
        f"GPU pods of {inputs.workload_of(pod).ref()} ({slug} tenant {tenant.slug}) run "
        f"{where_words}"
    )
    draft = workload_draft("POD-009", inputs, pod, tenant, evidence, title=title, pod_facts=where)
    return replace(draft, tenants=tenant_slugs((tenant, *owners)))
