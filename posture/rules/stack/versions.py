"""STACK-004: the GPU host stack deployed on a GPU node must be inventoried (DESIGN §2, §7).
STACK-007: the GPU configuration a node uses must be readable, or its sharing is unknown."""

from __future__ import annotations

from collections.abc import Iterator

from inventory.components import COMPONENT_FIELDS
from inventory.node_components import deployed_unknown, node_components
from inventory.snapshot import CAPACITY_KIND, LABEL_KIND, Node, UnreadableConfig
from inventory.stack_managers import UpgradePath
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.common import sorted_nodes, tenants_on_node
from posture.rules.gke import gke_stack
from posture.rules.registry import FindingDraft, check
from posture.rules.stack.make_known import make_known, title_note
from posture.rules.stack.upgrade_by import paths_of
from posture.rules.subjects import node_draft

# Node field -> where sync looks for it, so the remediation in the evidence is concrete.
STACK_COMPONENTS = {
    "driver_version": "GFD label nvidia.com/cuda.driver-version.full or the driver pod's image",
    "container_toolkit_version": "image tag of the nvidia-container-toolkit pod on the node",
    "device_plugin_version": "image tag of the nvidia-device-plugin pod on the node",
    "gpu_operator_version": "image tag of the gpu-operator Deployment",
    "dcgm_exporter_version": "image tag of the dcgm-exporter pod on the node",
    "mig_manager_version": "image tag of the k8s-mig-manager pod on the node",
    "dra_driver_version": "image tag of the k8s-dra-driver-gpu (formerly k8s-dra-driver) "
    "kubelet plugin pod on the node",
    "firmware_version": "nvidia-smi -q -x (VBIOS version) for the node",
}
FIRMWARE = "firmware_version"


@check(
    id="STACK-004",
    needs=("RuntimeClass",),
    title="GPU node with an unknown version of a deployed GPU-stack component",
    severity="medium",
    scope="node",
    rationale=(
        "The driver, container toolkit, device plugin and the other GPU Operator components "
        "are privileged code that every tenant's workload reaches; NVIDIA bulletins regularly "
        "fix container escapes and cross-tenant memory disclosure in them. A version that is "
        "not known cannot be compared with the bulletin baseline, so the node may be exposed "
        "to a published flaw without any STACK-001..003 finding saying so. A component the "
        'node does not run is "not installed", not unknown, and is not reported. Firmware '
        "(VBIOS) is never visible through the Kubernetes API: it is inventory coverage, and "
        "reported here only where an imported bulletin names firmware for the node's GPU model."
    ),
    remediation=(
        "Make each unknown version observable where the component comes from on the node "
        "(the evidence's `make_known` says, per component, for this node). A driver on the "
        "host (an EKS accelerated AMI, a Bottlerocket nvidia variant, an AKS or GKE node "
        "image, or host packages): import `nvidia-smi -q -x` for the node (`manage.py "
        "import_nvidia_smi`, which records the VBIOS too) or deploy GPU Feature Discovery (it "
        "sets `nvidia.com/cuda.driver-version.full`). A component run as pods (by the GPU "
        "Operator or by a chart of its own): give it version-tagged images (not `latest` or a "
        "bare digest) and make sure each DaemonSet's pod actually runs on the node. A "
        "component the node image carries (the container toolkit of EKS, AKS and Bottlerocket "
        "nodes; Bottlerocket's device plugin, a host service) has the version that image "
        "release ships, which no Kubernetes object states: its release notes name it, only a "
        "newer image moves it, and where it must stay unknown, accept the finding with that "
        "release named. Then re-sync the cluster. "
        "On GKE (its own device plugin in kube-system, no GPU Operator) none of that is yours "
        "to deploy: GKE manages the driver and device plugin and patches them with GKE node "
        "version upgrades (the evidence's `gke.node_version`); give the driver version by "
        "importing `nvidia-smi -q -x` from the node (`gke.driver` says how)."
    ),
    mappings=("CSF 2.0:ID.AM-01", "SP800-53:CM-8"),
)
def unknown_stack_versions(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for node in sorted_nodes(inputs):
        if not node.is_gpu_node:
            continue
        unknown = [COMPONENT_FIELDS[c] for c in deployed_unknown(node)]
        patch = inputs.patch.get(node.name) or {}
        if "firmware" in (patch.get("unknown_components") or ()):
            unknown.append(FIRMWARE)
        if unknown:
            # Per component, what makes its version known on this node (make_known): who
            # installs it there (upgrade_by) decides, so a node image's toolkit is not sent
            # to the GPU Operator.
            draft = _stack_draft(
                inputs, node, unknown, tenants_on_node(inputs, node.name), paths_of(inputs, node)
            )
            draft.evidence["make_known"] = make_known(
                inputs.cluster, node, unknown, paths_of(inputs, node)
            )
            if gke := gke_stack(inputs, node):
                draft.evidence["gke"] = gke  # what GKE, not the user, manages there
            yield draft


def _stack_draft(
    inputs: PostureInputs,
    node: Node,
    unknown: list[str],
    tenants: list[TenantInfo],
    paths: dict[str, UpgradePath],
) -> FindingDraft:
    components = node_components(node)
    evidence = {
        "node": node.name,
        "gpu_model": node.gpu_model,
        "unknown": unknown,
        "where_looked": {name: STACK_COMPONENTS[name] for name in unknown},
        "known": {COMPONENT_FIELDS[c]: e["version"] for c, e in components.items() if e["version"]},
        "not_installed": dict(node.not_installed),
        "deployed": {
            COMPONENT_FIELDS[c]: node.deployed[c]
            for c in node.deployed
            if COMPONENT_FIELDS.get(c) in unknown
        },
        "driver_version_source": node.driver_version_source,
        "gpu_operator_version": node.gpu_operator_version,
    }
    if node.nvidia_runtime:  # no plugin or label shows its GPUs: the pods under NVIDIA's runtime
        evidence["gpus_shown_by"] = list(node.nvidia_runtime)
    return node_draft(
        "STACK-004",
        node,
        inputs=inputs,
        tenants=tenants,
        evidence=evidence,
        title=f"GPU node {node.name}: unknown {', '.join(unknown)}"
        + title_note(node, unknown, paths),
    )


@check(
    id="STACK-007",
    title="GPU configuration or label on the node could not be read",
    severity="medium",
    scope="node",
    rationale=(
        "How a node shares its GPUs between tenants is set by the GPU stack's own "
        "configuration: the device-plugin config (time-slicing, MPS), the mig-parted config "
        "and the GPU Operator's ClusterPolicy. When that configuration cannot be read (nested "
        "deeper, larger or with more YAML aliases than any real one, or not valid YAML), the "
        "node's sharing mode is unknown: the sharing checks judge it as time-sliced, the "
        "weakest isolation, and cannot tell whether `failRequestsGreaterThanOne` or a MIG "
        "layout protects its tenants. A configuration built to defeat parsers is also a sign "
        "that someone who should not edit it did. The same holds for the GPU labels the "
        "stack writes on the node (`nvidia.com/gpu.count`, `gpu.replicas`, "
        "`gpu.sharing-strategy`, `mig.strategy`, `mig.config.state`): a value no component "
        "writes is never read as a default; the node says it could not read it, and what the "
        "label decides (a garbled sharing strategy makes the node's sharing unknown) is "
        "judged as unknown. A device-plugin config entry that cannot be interpreted (no "
        "resource name, replicas that are not a positive integer, unreadable `devices` or "
        "`rename`) makes the whole config unreadable rather than silently dropping the entry. "
        "A config that replicates `nvidia.com/gpu` on a node whose capacity shows one per "
        "device (physical GPU, or GFD's `nvidia.com/gpu.count`), or a sharing config on a node "
        "whose GFD labels say `gpu.sharing-strategy=none` and whose capacity shows no replicas, "
        "is not in force there: the config is reported unverified, naming both sides, and the "
        "node's sharing is what GFD's labels say (unknown without them), not time-sliced for "
        "certain. A node that advertises more `nvidia.com/gpu` than its physical "
        "GPUs, with no GFD label and no device-plugin pod showing whether MIG (single strategy) "
        "or replicas split them, is unknown too (`capacity nvidia.com/gpu`), never whole GPUs."
    ),
    remediation=(
        "Open the ConfigMap and key (or the ClusterPolicy) named in the evidence and fix what "
        "the error says: the NVIDIA device plugin and mig-parted need only a few levels of "
        "plain YAML, no anchors or aliases, and well under 1 MiB. Check who changed it "
        "(K8S-004 lists tenant principals who may), then re-sync the cluster. For a label, "
        "find what wrote it (GPU Feature Discovery, the GPU Operator, MIG Manager, or a "
        "person: DRIFT-003 shows when it changed), restore the component's own value, and "
        "restrict who may label nodes (K8S-003)."
    ),
    mappings=("SP800-53:CM-6", "SP800-53:CM-8", "CSF 2.0:ID.AM-01"),
)
def unreadable_gpu_config(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for node in sorted_nodes(inputs):
        if node.unreadable_configs:
            yield _unreadable_draft(inputs, node, tenants_on_node(inputs, node.name))


def _unreadable_draft(inputs: PostureInputs, node: Node, tenants: list[TenantInfo]) -> FindingDraft:
    configs = [
        {
            "object": _object_name(p),
            "key": p.key or None,
            "purpose": p.purpose,
            "error": p.error,
        }
        for p in node.unreadable_configs
    ]
    names = ", ".join(sorted({c["object"] for c in configs}))
    return node_draft(
        "STACK-007",
        node,
        inputs=inputs,
        tenants=tenants,
        evidence={
            "node": node.name,
            "unreadable": configs,
            "node_sharing_strategy": node.sharing_strategy,
            "tenants_on_node": [t.slug for t in tenants],
        },
        title=f"GPU node {node.name}: unknown, could not read {names}",
    )


def _object_name(problem: UnreadableConfig) -> str:
    if problem.kind == LABEL_KIND:
        return f"label {problem.name}"
    if problem.kind == CAPACITY_KIND:
        return f"capacity {problem.name}"
    if problem.namespace:
        return f"{problem.kind} {problem.namespace}/{problem.name}"
    return f"{problem.kind} {problem.name}"
