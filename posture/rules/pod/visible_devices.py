"""POD-011: GPU access that bypasses the scheduler through NVIDIA_VISIBLE_DEVICES (DESIGN §2)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from inventory.snapshot import Container
from posture.inputs import PostureInputs
from posture.rules.common import (
    container_path,
    nodes_by_name,
    tenant_pods,
)
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import workload_draft

VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
VISIBLE_DEVICES_OFF = ("", "void", "none")


def visible_devices_env(container: Container, path: str) -> dict[str, Any] | None:
    """The container's NVIDIA_VISIBLE_DEVICES if it asks for devices; a value from a
    reference cannot be read here and counts as asking."""
    for index, var in enumerate(container.env):
        if var.name != VISIBLE_DEVICES:
            continue
        if var.value is not None and var.value.strip().lower() in VISIBLE_DEVICES_OFF:
            return None
        return {
            "field": f"{path}.env[{index}]",
            "value": var.value,
            "value_from": var.value_from,
        }
    return None


@check(
    id="POD-011",
    title="Container reaches GPUs through NVIDIA_VISIBLE_DEVICES without requesting one",
    severity="high",
    scope="tenant",
    rationale=(
        "The NVIDIA Container Toolkit injects the GPUs named in NVIDIA_VISIBLE_DEVICES into "
        "any container on the node unless it is configured to ignore the variable for "
        "unprivileged containers. A container that sets it (e.g. `all` or a GPU index) "
        "without requesting an `nvidia.com/*` resource gets GPUs the scheduler never "
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
    for pod, tenant in tenant_pods(inputs):
        node = nodes.get(pod.node_name or "")
        if node is None or not node.is_gpu_node:
            continue
        for container in pod.containers:
            if container.gpu_requests or container.gpu_limits:
                continue  # the device plugin allocated GPUs and sets the variable itself
            found = visible_devices_env(container, container_path(pod, container))
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
            node_facts = {"node_gpu_model": node.gpu_model, "node_gpu_count": node.gpu_count}
            title = (
                f"Container {container.name} of {inputs.workload_of(pod).ref()} sets "
                f"{VISIBLE_DEVICES} without requesting a GPU"
            )
            yield workload_draft(
                "POD-011", inputs, pod, tenant, evidence, key=container.name, title=title,
                pod_facts=node_facts,
            )  # fmt: skip
