"""Helpers the rule families share: GPU holdings per node, tenant attribution, field paths.

Drafts are built in posture/rules/subjects.py, never here."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from inventory.components import HOST_ONLY
from inventory.snapshot import Container, Node, Pod
from posture.inputs import PostureInputs, TenantInfo, TrustClassInfo, seed_trust_class
from posture.rules.dra_holdings import dra_holdings
from posture.rules.holding import EVERY_GPU, GpuHolding
from posture.rules.plugin_holdings import plugin_holdings

__all__ = ["GpuHolding"]  # defined in posture.rules.holding; the checks import it from here

PLATFORM = "platform"  # the party name and trust class slug of pods no tenant owns
# MIG pools as the device plugin (nvidia.com/mig-<profile>) and the DRA driver name them.
MIG_POOL_PREFIX = "nvidia.com/mig"


def platform_trust_class(inputs: PostureInputs) -> TrustClassInfo:
    """The class platform pods are judged by: the registry's own (edited) platform class when
    the inputs carry it, else the seed definition."""
    given = inputs.extra.get("platform_trust_class")
    if isinstance(given, TrustClassInfo):
        return given
    for tenant in inputs.tenants:
        if tenant.trust_class.slug == PLATFORM:
            return tenant.trust_class
    return seed_trust_class(PLATFORM)


def gpu_holdings(inputs: PostureInputs, node: Node) -> list[GpuHolding]:
    """Every active pod's GPU devices on `node`, with the mode they share a physical GPU by
    (computed once per node and evaluation: the sharing checks all ask for it).

    The list is shared by every caller, not copied: read it, never change it (each caller
    builds its own lists from it)."""
    key = ("gpu_holdings", node.name)
    if key not in inputs.memo:
        inputs.memo[key] = _gpu_holdings(inputs, node)
    return inputs.memo[key]  # type: ignore[return-value]  # memo[key] holds what this function stored under it


def _gpu_holdings(inputs: PostureInputs, node: Node) -> list[GpuHolding]:
    """Each way a GPU reaches a pod contributes its holdings here (DESIGN §2): device-plugin
    resources, HAMi and KAI fractions (posture.rules.plugin_holdings), DRA claims
    (posture.rules.dra_holdings), NVIDIA_VISIBLE_DEVICES outside the scheduler
    (posture.rules.env_holdings)."""
    # Imported here: env_holdings reads the variable as POD-011 does, and POD-011's module
    # imports this one.
    from posture.rules.env_holdings import env_holdings

    return plugin_holdings(inputs, node) + dra_holdings(inputs, node) + env_holdings(inputs, node)


def pools_by_mode(holdings: Iterable[GpuHolding]) -> dict[tuple[str, str], list[GpuHolding]]:
    """Holdings grouped by (physical pool, sharing mode), in a stable order.

    A hold through NVIDIA_VISIBLE_DEVICES time-shares its GPUs with whoever holds them, by
    whatever mode they got them (a whole GPU, an MPS client): its group also carries the
    pool's holdings of other modes, and share.parties.may_meet keeps those from meeting one
    another there (two whole GPUs beside an env access do not share with each other).

    `all` also reaches the node's MIG devices: libnvidia-container's device selection
    (src/cli/common.c, select_devices) takes "all" as every GPU *and* every MIG device of
    every GPU, so the container runs on each MIG instance beside whoever was given it. Such
    a hold joins every MIG pool held on the node. A GPU index or GPU UUID does not: a
    MIG-enabled GPU selected as a whole gives no MIG device (those are selected by MIG UUID
    or "<gpu>:<mig>" index). A MIG UUID it names joins the MIG pool whose holder is known to
    hold that device (a DRA claim names it); where no holder names its devices, which pool
    the UUID belongs to is not known and no meeting is claimed."""
    holdings = list(holdings)
    mig_pools = sorted({h.pool for h in holdings if h.pool.startswith(MIG_POOL_PREFIX)})
    grouped: dict[tuple[str, str], list[GpuHolding]] = {}
    for holding in holdings:
        grouped.setdefault((holding.pool, holding.mode), []).append(holding)
        if not holding.through_env:
            continue
        for pool in mig_pools:
            if holding.every_device or _names_a_device_of(holding, pool, holdings):
                grouped.setdefault((pool, holding.mode), []).append(replace(holding, pool=pool))
    joined = {}
    for (pool, mode), group in grouped.items():
        if any(h.through_env for h in group):
            group = group + [
                h for (p, m), others in grouped.items() if p == pool and m != mode for h in others
            ]
        joined[(pool, mode)] = group
    return dict(sorted(joined.items()))


def _names_a_device_of(env: GpuHolding, pool: str, holdings: list[GpuHolding]) -> bool:
    """The env hold names a MIG device some other holding of `pool` is known to hold."""
    named = {d for d in env.devices or () if d.startswith("MIG-")}
    return bool(named) and any(
        h.pool == pool and h.devices and named & set(h.devices) for h in holdings
    )


def pod_ref(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.name}"


def holding_evidence(holdings: Iterable[GpuHolding]) -> list[dict[str, Any]]:
    return [_holding_entry(h) for h in sorted(holdings, key=lambda h: (pod_ref(h.pod), h.resource))]


def _holding_entry(holding: GpuHolding) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "pod": pod_ref(holding.pod),
        "resource": holding.resource,
        "count": holding.count,
    }
    if holding.devices:
        entry["devices"] = list(holding.devices)
    if holding.every_device:
        entry["reach"] = EVERY_GPU
    if holding.basis:  # the mode comes from more than the node's sharing strategy
        entry["mode_basis"] = holding.basis
    if holding.workload:
        entry["workload"] = holding.workload
    return entry


def tenants_on_node(inputs: PostureInputs, node_name: str) -> list[TenantInfo]:
    """Tenants with at least one active pod on the node, by slug. Once per node and
    evaluation (a dozen node checks ask); each caller gets its own short list."""
    key = ("tenants_on_node", node_name)
    if key not in inputs.memo:
        found = {
            tenant.slug: tenant
            for pod in inputs.pods_by_node.get(node_name, ())
            if (tenant := inputs.tenant_of_pod(pod)) is not None
        }
        inputs.memo[key] = tuple(found[slug] for slug in sorted(found))
    return list(inputs.memo[key])  # type: ignore[call-overload]  # memo[key] holds what this function stored under it


def sorted_nodes(inputs: PostureInputs) -> list[Node]:
    return sorted(inputs.snapshot.nodes, key=lambda n: n.name)


def kubernetes_node(node: Node | None) -> bool:
    """Described by the Kubernetes API. A node known only from `nvidia-smi -q -x` has no
    taints, pods, device plugin or exporter to judge: where nothing is known, no finding
    (its driver and firmware are judged; docs/clusters.md)."""
    return node is None or node.described_by != HOST_ONLY


# --- pods ----------------------------------------------------------------------------------


def tenant_pods(inputs: PostureInputs) -> list[tuple[Pod, TenantInfo]]:
    """Active pods of tenant namespaces in a stable order; platform pods never appear."""
    return sorted(inputs.tenant_pods, key=lambda item: pod_ref(item[0]))


def hardening_pods(inputs: PostureInputs) -> list[tuple[Pod, TenantInfo]]:
    """What the pod-hardening checks (POD-001 to POD-008) judge: the active
    tenant pods and the templates of tenant workloads with none running (a CronJob between
    runs, a Deployment scaled to 0). Checks that need a node or a GPU placement use
    tenant_pods: a template runs nowhere. A tenant of the platform class is the platform team's
    own (DESIGN §3): its pods are platform workloads, which the hardening checks never report
    (DESIGN §7), as in a platform namespace (a privileged GPU health DaemonSet is its job)."""
    return [
        (pod, tenant)
        for pod, tenant in tenant_pods(inputs) + list(inputs.template_pods)
        if tenant.trust_class.slug != PLATFORM
    ]


def container_path(pod: Pod, container: Container) -> str:
    """The manifest path of a container: app, init and ephemeral containers are indexed
    separately."""
    same_kind = [
        c for c in pod.containers if (c.init, c.ephemeral) == (container.init, container.ephemeral)
    ]
    index = next(i for i, c in enumerate(same_kind) if c is container)
    field = (
        "initContainers"
        if container.init
        else "ephemeralContainers"
        if container.ephemeral
        else "containers"
    )
    return f"spec.{field}[{index}]"


def normalise_host_path(path: str) -> str:
    """Collapse repeated and trailing slashes and dot segments: "/dev//" is "/dev"."""
    collapsed = re.sub(r"/+", "/", path.strip())
    return posixpath.normpath(collapsed) if collapsed else collapsed


def path_within(path: str, root: str) -> bool:
    """True when `path` is `root` or lies under it (both normalised)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def mounts_of(pod: Pod, volume_name: str) -> list[dict[str, Any]]:
    """Which containers mount a volume, where, whether read-only, and which part of it (only
    when a subPath or subPathExpr narrows it)."""
    found = []
    for c in pod.containers:
        for m in c.volume_mounts:
            if m.name != volume_name:
                continue
            entry = {"container": c.name, "mount_path": m.mount_path, "read_only": m.read_only}
            if m.sub_path_expr:
                entry["sub_path_expr"] = m.sub_path_expr
            elif m.sub_path:
                entry["sub_path"] = m.sub_path
            found.append(entry)
    return found


def nodes_by_name(inputs: PostureInputs) -> dict[str, Node]:
    """The snapshot's nodes by name (built once per evaluation)."""
    key = ("nodes_by_name",)
    if key not in inputs.memo:
        inputs.memo[key] = {n.name: n for n in inputs.snapshot.nodes}
    return inputs.memo[key]  # type: ignore[return-value]  # memo[key] holds what this function stored under it


def containers_with_paths(pod: Pod) -> list[tuple[Container, str]]:
    """Each container of the pod with its manifest path."""
    return [(c, container_path(pod, c)) for c in pod.containers]
