"""Which pods hold every GPU of their node through NVIDIA_VISIBLE_DEVICES=all, where the node acts
on it (DESIGN §2, "a GPU reaches a pod by any of"), for the holder record of sync history
(inventory.holding_sets, LEAK-001). PURE.

The rule is posture.rules.env_holdings', read with what a sync has: a tenant pod's container
(a platform namespace's are the device plugin's and DCGM-Exporter's own reach), in a Running
pod, that requests no GPU resource (one that does holds its GPUs through the plugin) and holds
no NVIDIA GPU through a DRA claim, whose NVIDIA_VISIBLE_DEVICES as Kubernetes sets it (`env`
over `envFrom`, a ConfigMap key read from the snapshot) names `all`; honoured where the
container is privileged (the toolkit honours it from privileged containers whatever its
setting) or the node's toolkit accepts it from unprivileged ones (inventory.visible_devices).
Unverified is not honoured: nothing is claimed that the product cannot see. A pod whose
RuntimeClass handler runs it in a Kata guest VM holds nothing through it (the host's toolkit
never sees it: inventory.sources.nvidia_runtime.vm_runtime). A list of GPUs
(`0,1`, UUIDs) is not counted: which of the node's GPUs an index is, and whether the plugin
gave the same one to someone else, sync history cannot tell.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from inventory.runtime import operator_toolkit, resolved_strategy
from inventory.snapshot import (
    Container,
    EnvConfigMap,
    EnvVar,
    GpuOperatorPolicy,
    Node,
    Pod,
    SharingConfig,
)
from inventory.snapshot.pods import is_nic_resource
from inventory.snapshot.quantity import gpu_count
from inventory.sources.node_kinds import sandbox_default, sandbox_workload
from inventory.sources.nvidia_runtime import vm_runtime
from inventory.sources.plugin_config import matching_config
from inventory.visible_devices import EnvvarAccess, Fact, envvar_access

VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
ConfigMaps = Mapping[tuple[str, str], EnvConfigMap]


def plugin_config_of(node: Node, configs: Sequence[SharingConfig]) -> SharingConfig | None:
    """The device-plugin config the sync found in force on the node (its label does not name
    it where the plugin runs no config-manager); by the label for a node synced before."""
    if node.device_plugin_config_used is not None:
        return next((c for c in configs if c.ref == node.device_plugin_config_used), None)
    return matching_config(node.device_plugin_config, configs)[0]


def node_envvar_access(
    node: Node,
    pods_on_node: Iterable[Pod],
    configs: Sequence[SharingConfig],
    policies: Iterable[GpuOperatorPolicy],
    *,
    tenant_claimed: Collection[str],
) -> EnvvarAccess:
    """What the node's GPU stack shows about NVIDIA_VISIBLE_DEVICES from unprivileged pods:
    its stack's pods, the device-plugin config in force, the ClusterPolicies, and the
    device-list strategy the sync resolved for it (the bulletin conditions read it too).
    `tenant_claimed`: the namespaces tenants claim. A tenant's pod is never the node's stack
    (docs/clusters.md): anyone may run the toolkit's or the plugin's image with any env, and
    its `ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false` must not silence
    STACK-008, nor its `true` speak for a toolkit installed on the host. With only tenants'
    pods, the setting stays unverified, as where no stack pod is seen."""
    stack_pods = [p for p in pods_on_node if p.namespace not in tenant_claimed]
    value, source = resolved_strategy(node)
    readable = [(p.name, p.spec) for p in policies if not p.error]
    # A node whose GPUs go to VMs (its workload label, else the ClusterPolicy's default).
    default = sandbox_default(spec for _, spec in readable)
    sandbox = sandbox_workload(node.labels, default, node.gpu_capacity)
    return envvar_access(
        stack_pods,
        plugin_config_of(node, configs),
        readable,
        strategy=Fact(value, source) if source else None,
        toolkit_here=operator_toolkit(node),
        operator_version=node.gpu_operator_version,
        sandbox=sandbox if node.is_gpu_node else None,
    )


def visible_devices_value(
    container: Container, namespace: str, configmaps: ConfigMaps
) -> str | None:
    """The container's NVIDIA_VISIBLE_DEVICES as Kubernetes sets it; None where it is unset or
    its value cannot be read (a Secret, a field, a ConfigMap not in the snapshot)."""
    read = visible_devices_read(container, namespace, configmaps)
    return None if read is None else read["value"]


def visible_devices_read(
    container: Container, namespace: str, configmaps: ConfigMaps
) -> dict[str, Any] | None:
    """Where the container's NVIDIA_VISIBLE_DEVICES comes from and what it is, as Kubernetes
    sets it: the last `env` entry of the name wins over `envFrom` (the last source carrying the
    key). `field` (`env[i]` or `envFrom[i]`), `value` (None: not readable), `value_from`, and
    `value_read` saying where it was read or why it is unknown; None where the variable ends
    up unset. The one reader of the variable: the holder record here and POD-011 agree."""
    explicit = [(i, var) for i, var in enumerate(container.env) if var.name == VISIBLE_DEVICES]
    if explicit:
        index, var = explicit[-1]
        found = _from_env(var, namespace, configmaps)
        return {"field": f"env[{index}]", **found} if found else None
    sources = list(enumerate(container.env_from_sources()))
    for index, (kind, name, prefix) in reversed(sources):
        found = _from_env_from(kind, name, prefix, namespace, configmaps)
        if found:
            return {"field": f"envFrom[{index}]", **found}
    return None


def _from_env(var: EnvVar, namespace: str, configmaps: ConfigMaps) -> dict[str, Any] | None:
    base = {"value": var.value, "value_from": var.value_from}
    if var.value is not None or var.value_from != "configMapKeyRef":
        if var.value_from == "secretKeyRef":
            base["value_read"] = f"unknown: from Secret {var.source} (never read)"
        return base
    where = f"ConfigMap {namespace}/{var.source} key {var.key}"
    configmap = configmaps.get((namespace, var.source or ""))
    if configmap is None:
        return {**base, "value_read": f"unknown: {where} is not in the snapshot"}
    if var.key not in configmap.keys:
        return None  # unset (optional) or the container cannot start: no GPUs either way
    return {**base, "value": configmap.values.get(var.key or ""), "value_read": where}


def _from_env_from(
    kind: str, name: str, prefix: str, namespace: str, configmaps: ConfigMaps
) -> dict[str, Any] | None:
    if kind != "configMapRef" or not VISIBLE_DEVICES.startswith(prefix):
        return None
    key = VISIBLE_DEVICES[len(prefix) :]
    configmap = configmaps.get((namespace, name))
    if configmap is None or key not in configmap.keys:
        return None
    where = f"ConfigMap {namespace}/{name} key {key}" + (f" (prefix {prefix})" if prefix else "")
    value = configmap.values.get(key)
    return {"value": value, "value_from": "envFrom configMapRef", "value_read": where}


def names_every_gpu(value: str | None) -> bool:
    return value is not None and any(w.strip().lower() == "all" for w in value.split(","))


def may_set_visible_devices(pod: Pod) -> bool:
    """Whether any container of the pod may set the variable (a cheap test before the node's
    toolkit is judged): an `env` entry of the name, or an `envFrom` ConfigMap."""
    return any(
        any(var.name == VISIBLE_DEVICES for var in c.env)
        or any(kind == "configMapRef" for kind, _, _ in c.env_from_sources())
        for c in pod.containers
    )


def every_gpu_holders(
    pods_on_node: Sequence[Pod],
    access: EnvvarAccess,
    configmaps: ConfigMaps,
    *,
    platform: frozenset[str],
    claimed: frozenset[tuple[str, str]],
) -> set[str]:
    """The namespaces of the node's Running tenant pods holding every GPU of the node through
    an honoured NVIDIA_VISIBLE_DEVICES=all (`claimed`: the pods holding an NVIDIA GPU of the
    node through a DRA claim, counted there; `platform`: the platform's namespaces nobody
    claims)."""
    found = set()
    for pod in pods_on_node:
        if pod.phase != "Running" or pod.namespace in platform:
            continue
        if (pod.namespace, pod.name) in claimed or vm_runtime(pod):
            continue  # a Kata pod's variable is read in its guest VM, never by the host's toolkit
        if any(_every_gpu(pod, c, access, configmaps) for c in _judged(pod)):
            found.add(pod.namespace)
    return found


def _every_gpu(
    pod: Pod, container: Container, access: EnvvarAccess, configmaps: ConfigMaps
) -> bool:
    if _asks_gpu(container):
        return False  # its GPU resource holds its GPUs (POD-011 judges the override)
    if container.init and not container.sidecar:
        return False  # a running pod's init containers have finished: they hold nothing now
    if not names_every_gpu(visible_devices_value(container, pod.namespace, configmaps)):
        return False
    return container.privileged or access.honoured is True


def _judged(pod: Pod) -> list[Container]:
    """Every container but the one KAI's binder sets the variable in for a fraction."""
    fraction = pod.fraction_container
    return [c for c in pod.containers if c is not fraction]


def _asks_gpu(container: Container) -> bool:
    """A GPU resource the container asks for (not a NIC under nvidia.com/); a quantity that
    cannot be read counts as asking (no hold is claimed on a guess)."""
    asked = {**container.gpu_requests, **container.gpu_limits}
    return any(gpu_count(qty) > 0 for name, qty in asked.items() if not is_nic_resource(name))
