"""Who upgrades each GPU-stack component of a node, and so which change moves it. PURE.

A bulletin's fix reaches a node by whatever put the component there, and that differs per
component and per cluster:
- the GPU Operator (its ClusterPolicy, from its Helm values): the Operator rolls out the version
  the ClusterPolicy names, and upgrading the Operator's release moves its defaults;
- the node itself: a driver or toolkit pre-installed on the host (AKS and EKS GPU images,
  Bottlerocket, bare metal with host packages): `driver.enabled: false` (or
  `toolkit.enabled: false`) in the ClusterPolicy, or the Operator's own node label
  `nvidia.com/gpu.deploy.driver=pre-installed`. The Operator then ignores `driver.version`:
  only a new node image (AKS node-image upgrade, a new EKS AMI) or the host's package manager
  moves it;
- a deployment of its own: a device plugin, DCGM exporter or MIG manager run by its own Helm
  chart or DaemonSet, outside the Operator (its section disabled in the ClusterPolicy, or no
  Operator at all);
- GKE: on a GKE node pool, GKE's own device plugin (gke.gcr.io/nvidia-gpu-device-plugin, a
  DaemonSet in kube-system), its managed DCGM exporter (gke-managed-system, gke_managed.py) and
  its driver installer (`nvidia-driver-installer`) are GKE's: a
  node pool upgrade (its GKE version, and its gpu-driver-version) moves them, not an edit of
  the DaemonSet, which GKE's addon manager reverts;
- unknown: nothing read says which; the fix text says so and names no mechanism.

Each answer is an UpgradePath whose `change` is the identity of the change: two components
with the same change on one pool are upgraded together (one action); different changes are
different actions, often for different owners.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from inventory.bottlerocket import (
    BOTTLEROCKET_PLUGIN,
    bottlerocket,
    bottlerocket_how,
    bottlerocket_nvidia,
)
from inventory.cluster_policy_state import (
    policy_auto_upgrade,
    policy_enabled,
    policy_versions,
)
from inventory.operator_nodes import NOT_MANAGED
from inventory.patching.versions import bundled_dcgm, installed_version
from inventory.snapshot import GpuOperatorPolicy, Node, Pod
from inventory.sources.gke_managed import gke_managed_dcgm_image as gke_dcgm
from inventory.sources.images import component_of, is_gke_device_plugin, is_vgpu_manager

OPERATOR, PRE_INSTALLED, OWN_DEPLOYMENT, FIRMWARE, GKE, UNKNOWN = (
    "gpu_operator",
    "pre_installed",
    "own_deployment",
    "firmware",
    "gke",
    "unknown",
)
GKE_POOL_LABEL = "cloud.google.com/gke-nodepool"
# GKE's driver installer DaemonSets (COS and Ubuntu node images) in kube-system.
_GKE_INSTALLER = "nvidia-driver-installer"
# The Operator's per-node deploy labels (it writes them on GPU nodes; "false" turns the
# component off on that node, "pre-installed" says it found a host driver).
VGPU_DEPLOY_LABEL = "nvidia.com/gpu.deploy.vgpu-manager"
DEPLOY_LABELS = {
    "driver": "nvidia.com/gpu.deploy.driver",
    "container_toolkit": "nvidia.com/gpu.deploy.container-toolkit",
    "device_plugin": "nvidia.com/gpu.deploy.device-plugin",
    "dcgm_exporter": "nvidia.com/gpu.deploy.dcgm-exporter",
    "mig_manager": "nvidia.com/gpu.deploy.mig-manager",
}
# ClusterPolicy section of each component it can deploy.
SECTIONS = {
    "driver": "driver",
    "container_toolkit": "toolkit",
    "device_plugin": "devicePlugin",
    "dcgm_exporter": "dcgmExporter",
    "mig_manager": "migManager",
}
_HOST_COMPONENTS = ("driver", "container_toolkit")
# A pod of GPU Feature Discovery runs the device-plugin image: it says nothing of the plugin.
_NOT_THE_COMPONENT = ("feature-discovery",)


@dataclass(frozen=True, slots=True)
class UpgradePath:
    managed_by: str  # OPERATOR, PRE_INSTALLED, OWN_DEPLOYMENT, FIRMWARE, GKE or UNKNOWN
    change: str  # the change's identity: components with the same one move together
    how: str  # what to do, as an instruction
    why: str  # what was read to say so
    # The version the ClusterPolicy asks the Operator to run (OPERATOR only; None: unstated,
    # unreadable, several policies disagree, or NVIDIADriver objects set the driver).
    desired_version: str | None = None
    # The ClusterPolicy's driver.upgradePolicy.autoUpgrade (OPERATOR driver only; None: not
    # stated or not known): true, the Operator's upgrade controller rolls the driver out.
    auto_upgrade: bool | None = None

    def as_dict(self) -> dict[str, str]:
        return {
            "managed_by": self.managed_by,
            "change": self.change,
            "how": self.how,
            "why": self.why,
        }


def upgrade_paths(
    node: Node, policies: Sequence[GpuOperatorPolicy], pods_on_node: Iterable[Pod]
) -> dict[str, UpgradePath]:
    """component -> how it is upgraded on the node, for every component that may be exposed
    (inventory.components.COMPONENT_FIELDS, and `dcgm`, the DCGM an exporter bundles)."""
    spec = policy_enabled(policies)
    desired = policy_versions(policies)
    operator = _operator(node)
    # Only a snapshot that read the pods says no Operator runs, or that the one in the cluster
    # does not manage this node (inventory.components.presence, inventory.operator_nodes).
    no_operator = "gpu_operator" in node.not_installed
    pods_on_node = list(pods_on_node)
    pods = _component_pods(pods_on_node)
    installer = _gke_installer(node, pods_on_node)
    paths = {
        component: _path(component, node, spec, operator, no_operator, pods.get(component))
        for component in (*SECTIONS, "gpu_operator")
    }
    if installer is not None and paths["driver"].managed_by != OPERATOR:
        # GKE's installer runs on the node: GKE installs its driver, whatever the Operator
        # might (it finds the driver there and labels the node pre-installed).
        paths["driver"] = _gke("driver", f"GKE's driver installer pod {installer} runs on it")
    # driver.version and its upgrade policy are not the vGPU Manager's (its own version is an
    # image tag the ClusterPolicy does not state as a driver version).
    vgpu = is_vgpu_manager_pod(pods.get("driver"))
    for component, path in paths.items():
        vgpu_driver = component == "driver" and vgpu
        if path.managed_by == OPERATOR and desired.get(component) and not vgpu_driver:
            paths[component] = replace(path, desired_version=desired[component])
    if paths["driver"].managed_by == OPERATOR and spec is not None and not vgpu:
        paths["driver"] = replace(paths["driver"], auto_upgrade=policy_auto_upgrade(policies))
    # The DCGM an exporter bundles moves with the exporter's image: its tag's DCGM part.
    exporter = paths["dcgm_exporter"]
    paths["dcgm"] = replace(exporter, desired_version=bundled_dcgm(desired.get("dcgm_tag")))
    if exporter.desired_version:
        paths["dcgm_exporter"] = replace(
            exporter, desired_version=installed_version("dcgm_exporter", exporter.desired_version)
        )
    paths["firmware"] = UpgradePath(
        FIRMWARE,
        "firmware",
        "update the GPU firmware (VBIOS) with the vendor's firmware update for the GPU model "
        "(on a cloud VM the provider does; drain the node first)",
        "firmware is never deployed through Kubernetes",
    )
    # The DRA driver comes with a chart of its own (the GPU Operator never deploys it).
    dra = pods.get("dra_driver")
    paths["dra_driver"] = _own(dra, "") if dra is not None else _path_unknown("dra_driver")
    return paths


def _path(
    component: str,
    node: Node,
    spec: Mapping[str, bool | None] | None,
    operator: str | None,
    no_operator: bool,
    pod: Pod | None,
) -> UpgradePath:
    if component == "gpu_operator":
        return _operator_path(operator or "the GPU Operator")
    if component == "driver" and pod is not None and is_vgpu_manager_pod(pod):
        return _vgpu_manager_path(node, spec, operator, pod)
    label = node.labels.get(DEPLOY_LABELS[component], "").strip().lower()
    enabled = spec.get(component) if spec is not None else None
    section = f"ClusterPolicy spec.{SECTIONS[component]}.enabled"
    if component in _HOST_COMPONENTS:
        if label == "pre-installed":
            return _host(node, component, f"node label {DEPLOY_LABELS[component]}=pre-installed")
        # A driver or toolkit container running on the node (NVAIE's guest driver DaemonSet,
        # a chart of its own) is not the host's, whatever the ClusterPolicy turns off.
        if enabled is False and pod is None:
            return _host(node, component, f"{section} is false: the Operator does not install it")
    if pod is not None and node.labels.get(GKE_POOL_LABEL) and _is_gkes(pod):
        return _gke(component, f"its pod {pod.namespace}/{pod.name} runs GKE's own image")
    if pod is not None:
        ours = operator is not None and enabled is not False and label != "false"
        if ours and _in_operator_namespace(pod, operator):
            return _operator_path(operator, f"its pod {pod.namespace}/{pod.name}")
        return _own(pod, section if enabled is False else "")
    if component in _HOST_COMPONENTS and no_operator:
        return _host(node, component, f"no pod of it on the node and {_no_operator(node)}")
    if component in _HOST_COMPONENTS and label == "false":
        return _host(node, component, f"node label {DEPLOY_LABELS[component]}=false")
    # Bottlerocket's nvidia variants run the device plugin as a host service from the OS
    # image, unless an Operator that would deploy one is there (its pod not in the snapshot).
    operators = operator is not None and enabled is not False and label != "false"
    if component == "device_plugin" and bottlerocket_nvidia(node.os_image) and not operators:
        return _host(node, component, f"no pod of it on the node; {BOTTLEROCKET_PLUGIN}")
    return _path_unknown(component)


def is_vgpu_manager_pod(pod: Pod | None) -> bool:
    """The GPU Operator's vGPU Manager: the driver of a node giving its GPUs to VMs as vGPUs."""
    return pod is not None and any(is_vgpu_manager(c.image) for c in pod.containers)


def _vgpu_manager_path(
    node: Node, spec: Mapping[str, bool | None] | None, operator: str | None, pod: Pod
) -> UpgradePath:
    """The vGPU Manager's DaemonSet is the Operator's where it deploys one (ClusterPolicy
    `vgpuManager`, node label gpu.deploy.vgpu-manager): its version is `vgpuManager.version`
    (an image the user builds), never `driver.version`, which a vm-vgpu node does not run."""
    enabled = spec.get("vgpu_manager") if spec is not None else None
    label = node.labels.get(VGPU_DEPLOY_LABEL, "").strip().lower()
    ours = operator is not None and enabled is not False and label != "false"
    if ours and operator is not None and _in_operator_namespace(pod, operator):
        return UpgradePath(
            OPERATOR,
            "gpu_operator",
            "upgrade it through the GPU Operator: build the newer vGPU Manager image and set "
            "ClusterPolicy `vgpuManager.version` (or the gpu-operator Helm values) to it, and "
            "let the Operator roll it out",
            f"deployed by the GPU Operator ({operator}): its vGPU Manager pod "
            f"{pod.namespace}/{pod.name}",
        )
    return _own(pod, "ClusterPolicy spec.vgpuManager.enabled" if enabled is False else "")


def _path_unknown(component: str) -> UpgradePath:
    return UpgradePath(
        UNKNOWN,
        f"unknown {component}",
        "find out what installed it on the node (the GPU Operator, the node image or host "
        "packages, or a chart of its own) and upgrade it there",
        "no pod of it on the node in the snapshot, and nothing read says who installs it",
    )


def _operator_path(operator: str, why: str = "") -> UpgradePath:
    return UpgradePath(
        OPERATOR,
        "gpu_operator",
        "upgrade it through the GPU Operator: set the component's version in the ClusterPolicy "
        "(or the gpu-operator Helm values), or upgrade the gpu-operator release, and let the "
        "Operator roll it out",
        f"deployed by the GPU Operator ({operator}){f': {why}' if why else ''}",
    )


def _own(pod: Pod, disabled: str) -> UpgradePath:
    owner = f"{pod.owner_kind or 'Pod'} {pod.namespace}/{pod.owner_name or pod.name}"
    why = f"its pod {pod.namespace}/{pod.name} belongs to {owner}, not to the GPU Operator"
    return UpgradePath(
        OWN_DEPLOYMENT,
        owner,
        f"upgrade {owner} itself (its Helm chart or manifest): the GPU Operator does not manage it",
        f"{why} ({disabled} is false)" if disabled else why,
    )


def _host(node: Node, component: str, why: str) -> UpgradePath:
    """A component on the host: the node image carries it, or the host's packages do."""
    labels = node.labels
    what = {"driver": "driver", "device_plugin": "device plugin"}.get(
        component, "container toolkit"
    )
    if bottlerocket(node.os_image):
        # Before the EKS labels: a Bottlerocket node on EKS or Karpenter takes no EKS-optimized
        # AMI, only a newer Bottlerocket release of its nvidia variant.
        return UpgradePath(
            PRE_INSTALLED,
            "node image",
            bottlerocket_how(labels, what),
            f"pre-installed on the node: {why}",
        )
    if (
        "kubernetes.azure.com/node-image-version" in labels
        or "kubernetes.azure.com/agentpool" in labels
    ):
        how = (
            f"upgrade the AKS node image of the pool (az aks nodepool upgrade --node-image-only), "
            f"or move to a new node pool whose image carries the fixed {what}"
        )
        change = "node image"
    elif GKE_POOL_LABEL in labels:
        # GKE installs the driver itself (its installer DaemonSet, or Autopilot), at the
        # version the node pool's GKE version and `gpu-driver-version` give.
        return _gke(component, f"pre-installed on the node: {why}")
    elif any(k.startswith(("eks.amazonaws.com/", "karpenter.k8s.aws/")) for k in labels):
        how = (
            f"roll the nodes to an EKS-optimized accelerated AMI that carries the fixed {what} "
            "(the node group's AMI release version, or the Karpenter EC2NodeClass's AMI)"
        )
        change = "node image"
    else:
        how = (
            f"upgrade the {what} on the host, with its package manager or a new node image: "
            f"the GPU Operator does not install it here"
        )
        change = "host"
    return UpgradePath(PRE_INSTALLED, change, how, f"pre-installed on the node: {why}")


def _gke(component: str, why: str) -> UpgradePath:
    """A component GKE manages on its node pool: a node pool upgrade moves it. The change is
    the node image's, as a pre-installed driver's: one pool upgrade moves them together."""
    what = {"driver": "driver", "device_plugin": "device plugin"}.get(component, component)
    what = {"dcgm_exporter": "DCGM exporter", "dcgm": "DCGM"}.get(what, what)
    how = (
        f"upgrade the GKE node pool (gcloud container node-pools upgrade) to a GKE version that "
        f"carries the fixed {what}"
        + (
            " (GKE installs it for that version and the pool's gpu-driver-version)"
            if what == "driver"
            else ""
        )
        + ": GKE manages it and reverts edits to its DaemonSets"
    )
    return UpgradePath(GKE, "node image", how, f"managed by GKE: {why}")


def _is_gkes(pod: Pod) -> bool:
    # GKE's device plugin, or its managed DCGM exporter (gke-managed-system), reconciled alike.
    return any(is_gke_device_plugin(c.image) or gke_dcgm(c.image) for c in pod.containers)


def _gke_installer(node: Node, pods: Iterable[Pod]) -> str | None:
    """namespace/name of GKE's driver installer pod on a GKE node, if it runs there."""
    if not node.labels.get(GKE_POOL_LABEL):
        return None
    for pod in sorted(pods, key=lambda p: (p.namespace, p.name)):
        if (
            pod.is_active
            and pod.namespace == "kube-system"
            and (pod.owner_name or pod.name).startswith(_GKE_INSTALLER)
        ):
            return f"{pod.namespace}/{pod.name}"
    return None


# Who upgrades a component, in a few words (the node and patch pages' "upgraded by").
WHO_OPERATOR = "GPU Operator"
_WHO = {OPERATOR: WHO_OPERATOR, GKE: "GKE node pool", FIRMWARE: "firmware update"}


def who(path: UpgradePath) -> str:
    if path.managed_by == OWN_DEPLOYMENT:
        return f"own chart ({path.change})"
    if path.managed_by == PRE_INSTALLED:
        return "host packages" if path.change == "host" else path.change
    return _WHO.get(path.managed_by, path.managed_by)  # UNKNOWN: "unknown"


def upgraded_by(
    node: Node, policies: Sequence[GpuOperatorPolicy], pods_on_node: Iterable[Pod]
) -> dict[str, str]:
    """component -> who upgrades it on the node (who()), for the node as the sync built it."""
    paths = upgrade_paths(node, policies, pods_on_node)
    return {component: who(path) for component, path in sorted(paths.items())}


def _operator(node: Node) -> str | None:
    """Where the GPU Operator was seen (inventory.components.presence); None: not seen."""
    return None if "gpu_operator" in node.not_installed else node.deployed.get("gpu_operator")


def _no_operator(node: Node) -> str:
    """Why no GPU Operator installs the node's host components: none in the cluster, or the one
    there does not manage this node (inventory.operator_nodes)."""
    if NOT_MANAGED in node.not_installed.get("gpu_operator", ""):
        return "the GPU Operator in the cluster does not manage the node"
    return "no GPU Operator in the cluster"


def _in_operator_namespace(pod: Pod, operator: str) -> bool:
    """The Operator deploys its operands into its own namespace; a pod elsewhere is another
    deployment's. Where only the ClusterPolicy was seen, its namespace is not known."""
    kind, _, where = operator.partition(" ")
    if kind in ("Deployment", "pod") and "/" in where:
        return pod.namespace == where.split("/", 1)[0]
    return True


def _component_pods(pods: Iterable[Pod]) -> dict[str, Pod]:
    found: dict[str, Pod] = {}
    for pod in sorted(pods, key=lambda p: (p.namespace, p.name)):
        if not pod.is_active or any(n in pod.name for n in _NOT_THE_COMPONENT):
            continue
        for container in pod.containers:
            component = component_of(container.image)
            if component and component != "gpu_operator":
                found.setdefault(component, pod)
    return found
