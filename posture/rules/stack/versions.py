"""STACK-004: the GPU host stack must be inventoried on every GPU node (DESIGN §2, §7)."""

from __future__ import annotations

from collections.abc import Iterator

from inventory.snapshot import Node
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import sorted_nodes, tenants_on_node
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import node_draft

# Node field -> where sync looks for it, so the remediation in the evidence is concrete.
STACK_COMPONENTS = {
    "driver_version": "GFD label nvidia.com/cuda.driver-version.full or the driver pod's image",
    "container_toolkit_version": "image tag of the nvidia-container-toolkit pod on the node",
    "device_plugin_version": "image tag of the nvidia-device-plugin pod on the node",
    "firmware_version": "nvidia-smi -q -x (VBIOS version) for the node",
}


@check(
    id="STACK-004",
    title="GPU node with unknown driver, toolkit, device plugin or firmware version",
    severity="medium",
    scope="node",
    rationale=(
        "The driver, container toolkit, device plugin and firmware are privileged code that "
        "every tenant's workload reaches; NVIDIA bulletins regularly fix container escapes "
        "and cross-tenant memory disclosure in them. A version that is not known cannot be "
        "compared with the bulletin baseline, so the node may be exposed to a published flaw "
        "without any STACK-001..003 finding saying so."
    ),
    remediation=(
        "Make each unknown version observable: deploy GPU Feature Discovery (it sets "
        "`nvidia.com/cuda.driver-version.full`), run the toolkit and device plugin as GPU "
        "Operator pods with version-tagged images (not `latest`), and import "
        "`nvidia-smi -q -x` for the node (`manage.py import_nvidia_smi`) to record the VBIOS. "
        "Then re-sync the cluster."
    ),
    mappings=("CSF2.0:ID.AM-01", "SP800-53:CM-8"),
)
def unknown_stack_versions(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for node in sorted_nodes(inputs):
        if not node.is_gpu_node:
            continue
        unknown = [name for name in STACK_COMPONENTS if getattr(node, name) is None]
        if not unknown:
            continue
        yield _stack_draft(node, unknown, tenants_on_node(inputs, node.name))


def _stack_draft(node: Node, unknown: list[str], tenants: list[TenantInfo]) -> FindingDraft:
    known = {
        name: getattr(node, name) for name in STACK_COMPONENTS if getattr(node, name) is not None
    }
    evidence = {
        "node": node.name,
        "gpu_model": node.gpu_model,
        "unknown": unknown,
        "where_looked": {name: STACK_COMPONENTS[name] for name in unknown},
        "known": known,
        "driver_version_source": node.driver_version_source,
        "gpu_operator_version": node.gpu_operator_version,
    }
    return node_draft(
        "STACK-004",
        node,
        tenants=tenants,
        evidence=evidence,
        title=f"GPU node {node.name}: unknown {', '.join(unknown)}",
    )
