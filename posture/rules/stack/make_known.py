"""STACK-004's per-node answer to "what makes this version known here". PURE.

Where a component comes from decides how its version can be known (inventory/stack_managers.py
says who upgrades it: the UpgradePath). A driver on the host of a managed node image (EKS
accelerated AMI, Bottlerocket's nvidia variants, AKS, GKE) is read by importing nvidia-smi from
the node; a container toolkit or Bottlerocket's device plugin the image carries has no version any
Kubernetes object or import states: it is the one that image release ships. Only a component run
as pods (the GPU Operator's, or a chart of its own) is made known by a version-tagged image. So
the static remediation stays general and the evidence says which of these holds on each node.
"""

from __future__ import annotations

from collections.abc import Mapping

from inventory.bottlerocket import bottlerocket
from inventory.components import COMPONENT_FIELDS
from inventory.snapshot import Node
from inventory.stack_managers import (
    FIRMWARE,
    GKE,
    GKE_POOL_LABEL,
    OPERATOR,
    OWN_DEPLOYMENT,
    PRE_INSTALLED,
    UpgradePath,
)
from posture.rules.gke import gke_node_version

AKS_IMAGE = "kubernetes.azure.com/node-image-version"
EKS_IMAGE = "eks.amazonaws.com/nodegroup-image"
_FIELD_COMPONENT = {field: component for component, field in COMPONENT_FIELDS.items()}
_NAMES = {
    "driver": "driver",
    "container_toolkit": "container toolkit",
    "device_plugin": "device plugin",
    "dcgm_exporter": "DCGM exporter",
    "mig_manager": "MIG manager",
    "dra_driver": "DRA driver",
    "gpu_operator": "GPU Operator",
}
SMI_IMPORT = (
    "import `nvidia-smi -q -x` from the node (`nvidia-smi -q -x > {node}.xml`, then "
    "`manage.py import_nvidia_smi --cluster {cluster} --node {node} {node}.xml`)"
)
TAGGED = "a version-tagged image (not `latest` or a bare digest)"


def node_image(node: Node) -> str | None:
    """The node image that carries the host's GPU stack, as the node shows it; None where the
    node is none of the managed images (bare metal, a self-built image: host packages)."""
    labels = node.labels
    if bottlerocket(node.os_image):
        return f"the Bottlerocket release {node.os_image}"
    if AKS_IMAGE in labels or "kubernetes.azure.com/agentpool" in labels:
        version = labels.get(AKS_IMAGE)
        return f"the AKS node image {version}" if version else "the AKS node image"
    if GKE_POOL_LABEL in labels:
        version = gke_node_version(node)
        return f"the GKE node image of GKE version {version}" if version else "the GKE node image"
    if any(k.startswith(("eks.amazonaws.com/", "karpenter.k8s.aws/")) for k in labels):
        # The node group's AMI id where EKS labels it; the OS image says which release.
        ami = labels.get(EKS_IMAGE)
        what = f"the EKS AMI {ami}" if ami else "the EKS AMI"
        return f"{what} ({node.os_image})" if node.os_image else what
    return None


def make_known(
    cluster: str, node: Node, unknown: list[str], paths: Mapping[str, UpgradePath]
) -> dict[str, str]:
    """node field -> what makes its version known on this node, for each unknown one."""
    image = node_image(node)
    smi = SMI_IMPORT.format(cluster=cluster, node=node.name)
    return {
        field: _how(node, field, paths.get(_FIELD_COMPONENT[field]), image, smi)
        for field in unknown
    }


def _how(node: Node, field: str, path: UpgradePath | None, image: str | None, smi: str) -> str:
    component = _FIELD_COMPONENT[field]
    name = _NAMES.get(component, component)
    managed = path.managed_by if path is not None else None
    if component == "firmware" or managed == FIRMWARE:
        return f"{smi}: the VBIOS is never in the Kubernetes API"
    if managed == GKE and component != "driver":
        return (
            f"GKE manages the {name} here: its version follows {image or 'the GKE node image'} "
            "(a GKE build, not an NVIDIA release), and a node pool upgrade moves it"
        )
    if managed in (PRE_INSTALLED, GKE):
        if component == "driver":
            return (
                f"the driver is on the host, from {image or 'its packages'}: {smi}, or run GPU "
                "Feature Discovery (it labels `nvidia.com/cuda.driver-version.full`)"
            )
        if image is None:
            return (
                f"the {name} is installed on the host by its packages: no Kubernetes object or "
                "nvidia-smi import states its version; the host's package manager does"
            )
        if component == "device_plugin" and bottlerocket(node.os_image):
            return (
                "Bottlerocket's device plugin runs on the host: its version follows "
                f"{image}, which states no device-plugin version"
            )
        return (
            f"the {name} is on the host, from {image}: no Kubernetes object or nvidia-smi "
            f"import states its version; it is the one that release ships (its release notes "
            "name it), and only a newer release moves it"
        )
    if managed == OPERATOR:
        extra = " or run GPU Feature Discovery" if component == "driver" else ""
        return (
            f"the GPU Operator deploys the {name}: make sure its pod runs on the node with "
            f"{TAGGED}{extra}"
        )
    if managed == OWN_DEPLOYMENT and path is not None:
        return f"give {path.change}, which runs the {name} here, {TAGGED}"
    if component == "driver":
        return (
            "nothing read says who installs the driver: run GPU Feature Discovery (it labels "
            f"`nvidia.com/cuda.driver-version.full`) or {smi}"
        )
    return (
        f"nothing read says who installs the {name} here: run it as pods with {TAGGED}, or "
        "find what installed it on the node and read its version there"
    )


def title_note(node: Node, unknown: list[str], paths: Mapping[str, UpgradePath]) -> str:
    """What the title adds where the node image carries unknown components: " (from <image>)",
    naming them when only some are its; "" where none is (pods, or nothing known of who)."""
    image = node_image(node)
    if image is None:
        return ""
    carried = [
        f
        for f in unknown
        if (path := paths.get(_FIELD_COMPONENT[f])) is not None
        and path.managed_by in (PRE_INSTALLED, GKE)
    ]
    if not carried:
        return ""
    if carried == [f for f in unknown if f != "firmware_version"]:
        return f" (from {image})"
    names = ", ".join(_NAMES.get(_FIELD_COMPONENT[f], f) for f in carried)
    return f" ({names} from {image})"
