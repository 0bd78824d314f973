"""POD-011: GPU access that bypasses the scheduler through NVIDIA_VISIBLE_DEVICES (DESIGN §2)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from inventory.snapshot import Container, EnvConfigMap, EnvVar, Node, Pod
from posture.inputs import PostureInputs
from posture.rules.common import (
    container_path,
    nodes_by_name,
    tenant_pods,
)
from posture.rules.plugin_holdings import holds_device
from posture.rules.registry import FindingDraft, check
from posture.rules.stack.visible_devices import node_envvar_access
from posture.rules.subjects import workload_draft
from tenants.policy import FRACTIONAL_RESOURCES

VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
VISIBLE_DEVICES_OFF = ("", "void", "none")
ConfigMaps = Mapping[tuple[str, str], EnvConfigMap]


def env_configmaps_by_name(inputs: PostureInputs) -> dict[tuple[str, str], EnvConfigMap]:
    return {(c.namespace, c.name): c for c in inputs.snapshot.env_configmaps}


def visible_devices_env(
    container: Container, path: str, namespace: str = "", configmaps: ConfigMaps | None = None
) -> dict[str, Any] | None:
    """The container's NVIDIA_VISIBLE_DEVICES as Kubernetes sets it, if it asks for devices:
    `env` (the last entry of the name) wins over `envFrom` (the last source carrying the key).
    A value that cannot be read (a Secret, a ConfigMap not in the snapshot) counts as asking;
    an envFrom source whose keys are not known sets nothing we can see."""
    configmaps = configmaps or {}
    explicit = [(i, var) for i, var in enumerate(container.env) if var.name == VISIBLE_DEVICES]
    if explicit:
        index, var = explicit[-1]
        found = _from_env(var, namespace, configmaps)
        return _asking({"field": f"{path}.env[{index}]", **found}) if found else None
    sources = list(enumerate(container.env_from_sources()))
    for index, (kind, name, prefix) in reversed(sources):
        found = _from_env_from(kind, name, prefix, namespace, configmaps)
        if found:
            return _asking({"field": f"{path}.envFrom[{index}]", **found})
    return None


def _asking(found: dict[str, Any]) -> dict[str, Any] | None:
    value = found["value"]
    if value is not None and value.strip().lower() in VISIBLE_DEVICES_OFF:
        return None
    return found


def _from_env(var: EnvVar, namespace: str, configmaps: ConfigMaps) -> dict[str, Any] | None:
    """value, value_from, where the value was read; None when the variable ends up unset."""
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


@check(
    id="POD-011",
    title="Container reaches GPUs through NVIDIA_VISIBLE_DEVICES without requesting one",
    severity="high",
    scope="tenant",
    rationale=(
        "The NVIDIA Container Toolkit injects the GPUs named in NVIDIA_VISIBLE_DEVICES into "
        "any container on the node unless it is configured to ignore the variable for "
        "unprivileged containers (STACK-008 says which nodes do). A container that sets it "
        "(e.g. `all` or a GPU index), literally, from a ConfigMap key (`configMapKeyRef`) or "
        "through `envFrom`, without requesting an `nvidia.com/*` resource gets GPUs the "
        "scheduler never "
        "allocated: outside quota and accounting, on devices allocated to other tenants, and "
        "invisible to attribution (a compute-hijacking path, T1496.001). Platform pods are "
        "exempt by design (the device plugin and DCGM-Exporter set it legitimately); images "
        "that set it in their own ENV are not visible to the API and need the toolkit "
        "setting below."
    ),
    remediation=(
        "Remove NVIDIA_VISIBLE_DEVICES from the container at the field in the evidence (or "
        "set it to `void`) and request GPUs through `resources.limits` (`nvidia.com/gpu` or "
        "a MIG resource). On every GPU node set "
        "`accept-nvidia-visible-devices-envvar-when-unprivileged = false` in "
        "/etc/nvidia-container-runtime/config.toml (GPU Operator: "
        "`toolkit.env` ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false with the "
        "device plugin's `deviceListStrategy: volume-mounts` or CDI)."
    ),
    mappings=("SP800-53:AC-3", "ATT&CK:T1496.001"),
)
def visible_devices_without_request(inputs: PostureInputs) -> Iterator[FindingDraft]:
    nodes = nodes_by_name(inputs)
    configmaps = env_configmaps_by_name(inputs)
    for pod, tenant in tenant_pods(inputs):
        node = nodes.get(pod.node_name or "")
        if node is None or not node.is_gpu_node:
            continue
        for container in _unallocated(pod, node):
            path = container_path(pod, container)
            found = visible_devices_env(container, path, pod.namespace, configmaps)
            if found is None:
                continue
            evidence = {
                "container": container.name,
                "init_container": container.init,
                "image": container.image,
                **found,
                "gpu_requests": {},
                "gpu_limits": {},
            }
            node_facts = {
                "node_gpu_model": node.gpu_model,
                "node_gpu_count": node.gpu_count,
                # STACK-008's verdict: whether the node's toolkit acts on the variable at all.
                "node_honours_visible_devices": node_envvar_access(inputs, node).verdict,
            }
            title = (
                f"Container {container.name} of {inputs.workload_of(pod).ref()} sets "
                f"{VISIBLE_DEVICES} without requesting a GPU"
            )
            yield workload_draft(
                "POD-011",
                inputs,
                pod,
                tenant,
                evidence,
                key=container.name,
                title=title,
                pod_facts=node_facts,
            )


def _unallocated(pod: Pod, node: Node) -> list[Container]:
    """Containers no scheduler gave GPUs to: not those the device plugin allocated a GPU to (it
    sets the variable itself), nor the first app container of a KAI fraction pod (KAI's binder
    sets it, from a ConfigMap, to the GPU the fraction's reservation holds)."""
    app = [c for c in pod.containers if not c.init and not c.ephemeral]
    fraction = app[0] if pod.gpu_fraction and app else None
    return [c for c in pod.containers if not _allocated_gpu(c, node) and c is not fraction]


def _allocated_gpu(container: Container, node: Node) -> bool:
    """The container asks for at least one GPU device (or a HAMi share of one). Not any
    nvidia.com/* name: a limit of 0 allocates nothing, and the NVIDIA Network Operator's SR-IOV
    NICs (`nvidia.com/hostdev`, ...) are not GPUs; the variable then still hands over GPUs."""
    asked = {**container.gpu_requests, **container.gpu_limits}
    return any(
        _positive(qty) and (holds_device(node, name) or name in FRACTIONAL_RESOURCES)
        for name, qty in asked.items()
    )


def _positive(quantity: str) -> bool:
    try:
        return int(str(quantity).strip()) > 0
    except ValueError:
        return True  # a quantity we cannot read may be a request: do not accuse on a guess
