"""STACK-008: the node's container toolkit honours NVIDIA_VISIBLE_DEVICES from unprivileged pods
(inventory/visible_devices.py decides from what the snapshot shows)."""

from __future__ import annotations

from collections.abc import Iterator

from inventory.env_holds import node_envvar_access as stack_envvar_access
from inventory.env_holds import plugin_config_of
from inventory.pools import fix_pool, taint_tuples
from inventory.runtime import operator_toolkit
from inventory.snapshot import Node, SharingConfig
from inventory.visible_devices import EnvvarAccess
from posture.inputs import PostureInputs
from posture.rules.common import sorted_nodes, tenants_on_node
from posture.rules.node_gpus import node_gpus
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import node_draft, subject_draft


def node_envvar_access(inputs: PostureInputs, node: Node) -> EnvvarAccess:
    """What the node's GPU stack shows (once per node and evaluation: POD-011 asks too)."""
    key = ("envvar_access", node.name)
    if key not in inputs.memo:
        inputs.memo[key] = stack_envvar_access(
            node,
            inputs.pods_by_node.get(node.name, ()),
            inputs.snapshot.sharing_configs,
            inputs.snapshot.gpu_operator_policies,
            tenant_claimed=inputs.tenant_claimed,
        )
    return inputs.memo[key]  # type: ignore[return-value]  # memo[key] holds what this function stored under it


def node_plugin_config(inputs: PostureInputs, node: Node) -> SharingConfig | None:
    """The device-plugin config the sync found in force on the node (plugin_config_of)."""
    return plugin_config_of(node, inputs.snapshot.sharing_configs)


@check(
    id="STACK-008",
    needs=("ConfigMap",),
    title="Container toolkit honours NVIDIA_VISIBLE_DEVICES from unprivileged pods",
    severity="high",
    scope="node",  # one per ClusterPolicy, pool or node: where the one fix is (fix_subject)
    rationale=(
        "CUDA base images set `NVIDIA_VISIBLE_DEVICES=all` in their own ENV, which no manifest "
        "shows. Where the NVIDIA Container Toolkit accepts that variable from unprivileged "
        "containers (`accept-nvidia-visible-devices-envvar-when-unprivileged`, true by default) "
        "any pod that reaches the NVIDIA runtime gets the GPUs it names without requesting one: "
        "every GPU of the node, including those allocated to other tenants, outside quota and "
        "invisible to attribution. The device plugin's default device-list strategy `envvar` "
        "relies on that acceptance. POD-011 finds the pods that set the variable in their "
        "manifest; this finds the nodes where an image alone is enough."
    ),
    remediation=(
        "Make the toolkit ignore the variable from unprivileged containers and have the "
        "device plugin pass allocated GPUs another way. GPU Operator: set in the ClusterPolicy "
        "(or chart values) `toolkit.env` ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED="
        '"false" and ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS="true", and '
        "`devicePlugin.env` DEVICE_LIST_STRATEGY=volume-mounts (or enable CDI). A toolkit "
        "installed on the host: `accept-nvidia-visible-devices-envvar-when-unprivileged = "
        "false` in /etc/nvidia-container-runtime/config.toml and the plugin's "
        "`--device-list-strategy=volume-mounts`. Keep hostPath mounts away from tenant pods."
    ),
    mappings=("SP800-53:AC-3", "SP800-53:CM-6", "ATT&CK:T1496.001"),
)
def toolkit_honours_visible_devices(inputs: PostureInputs) -> Iterator[FindingDraft]:
    groups: dict[tuple[str, str], list[tuple[Node, EnvvarAccess]]] = {}
    for node in sorted_nodes(inputs):
        if not node.is_gpu_node:
            continue
        access = node_envvar_access(inputs, node)
        if access.honoured is not True:
            continue  # "no", or nothing visible: unverified is said in POD-011, not shouted
        groups.setdefault(fix_subject(inputs, node), []).append((node, access))
    for (kind, name), members in groups.items():
        if kind == "Node":
            yield _node_finding(inputs, *members[0])
        else:
            yield _group_finding(inputs, kind, name, members)


def fix_subject(inputs: PostureInputs, node: Node) -> tuple[str, str]:
    """Where the one change that closes the node's finding is made (DESIGN §5): the
    ClusterPolicy whose toolkit.env configures the Operator's toolkit running on the node; else,
    the toolkit being the node's own (pre-installed, another chart's), its pool
    (inventory.pools.fix_pool: a provider's, or on bare metal the trust-class pool); else the
    node itself, keyed as it always was (its history and any accepted risk carry over)."""
    if operator_toolkit(node) is True:
        policies = sorted(
            p.name
            for p in inputs.snapshot.gpu_operator_policies
            if not p.error and p.spec.get("toolkit_enabled") is not False
        )
        if policies:
            return "ClusterPolicy", policies[0]
    pool = fix_pool(node.labels, taint_tuples(node.taints), inputs.pool_taint_rules)
    return ("NodePool", pool) if pool else ("Node", node.name)


WHY = (
    "an image's own ENV NVIDIA_VISIBLE_DEVICES=all (every CUDA base image) is "
    "enough for a pod with no GPU request to see every GPU of the node"
)
# Node names listed in a grouped finding's evidence (node_count has them all).
NODES_SHOWN = 100


def _node_finding(inputs: PostureInputs, node: Node, access: EnvvarAccess) -> FindingDraft:
    tenants = tenants_on_node(inputs, node.name)
    evidence = {
        "node": node.name,
        **access.evidence(),
        "why": WHY,
        "tenants_with_pods_on_node": [t.slug for t in tenants],
    }
    title = (
        f"Node {node.name} gives GPUs to unprivileged pods that name them in NVIDIA_VISIBLE_DEVICES"
    )
    return node_draft(
        "STACK-008", node, inputs=inputs, tenants=tenants, evidence=evidence, title=title
    )


def _group_finding(
    inputs: PostureInputs, kind: str, name: str, members: list[tuple[Node, EnvvarAccess]]
) -> FindingDraft:
    """One finding for the nodes one change fixes: every tenant on them, exposure the GPUs
    they span (the score's 1 + log2 gives the diminishing return), the first node's facts as
    the sample (the others' differ only in which pod states them)."""
    tenants = {t.slug: t for node, _ in members for t in tenants_on_node(inputs, node.name)}
    # Each tenant's own exposure: the GPUs of the nodes it has pods on, not of every node.
    tenant_gpus: dict[str, int] = {}
    for node, _ in members:
        for tenant in tenants_on_node(inputs, node.name):
            tenant_gpus[tenant.slug] = (
                tenant_gpus.get(tenant.slug, 0) + node_gpus(inputs, node).count
            )
    first, access = members[0]
    names = [node.name for node, _ in members]
    gpus = sum(node_gpus(inputs, node).count for node, _ in members)
    # Where a node's GPU count is unknown, how its GPUs were counted (node_gpus).
    bases = {node.name: b for node, _ in members if (b := node_gpus(inputs, node).basis)}
    evidence = {
        "fix_in": f"{kind} {name}",
        "node_count": len(names),
        "nodes": names[:NODES_SHOWN],
        "gpus": gpus,
        **(
            {"exposure_gpus_basis_by_node": dict(list(bases.items())[:NODES_SHOWN])}
            if bases
            else {}
        ),
        **access.evidence(),
        "facts_as_on_node": first.name,
        "why": WHY,
        "tenants_with_pods_on_nodes": sorted(tenants),
    }
    where = f"ClusterPolicy {name}'s toolkit" if kind == "ClusterPolicy" else f"Pool {name}"
    title = (
        f"{where} gives GPUs to unprivileged pods that name them in NVIDIA_VISIBLE_DEVICES "
        f"({len(names)} node{'s' if len(names) != 1 else ''})"
    )
    return subject_draft(
        "STACK-008",
        kind=kind,
        name=name,
        tenants=tenants.values(),
        evidence=evidence,
        title=title,
        exposure=gpus,
        tenant_exposures=tenant_gpus,
        # Each node was its own finding before (and still is where no pool or ClusterPolicy
        # fixes it): what was accepted on them is carried, or said to no longer apply.
        covers=tuple((("Node", "", node, ""),) for node in names),
    )
