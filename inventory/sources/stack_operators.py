"""The namespaces of the operators that run the GPU nodes' host stack, found by evidence. PURE.

One rule for every such operator (DESIGN §3, fail closed): a namespace is the operator's where a
Deployment runs the operator's image AND a ClusterRoleBinding names one of the namespace's
service accounts, or the operator's own operands run beside it; where the snapshot read no
ClusterRoleBinding at all (a cluster always has some), the image alone. A namespace's name never
places it. stack_namespaces.operator_namespaces applies it to the GPU Operator; this module to
the NVIDIA Network Operator and to KubeVirt and its Containerized Data Importer. A namespace no
ClusterRoleBinding names is only found here: stack_namespaces makes it the platform's only if
it holds nothing else (stack_alone).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable

from inventory.owners import OwnerIndex, workload_of
from inventory.snapshot import Pod, RoleBinding, Workload
from inventory.sources.images import image_version


def operator_deployment_namespaces(
    workloads: Iterable[Workload],
    bindings: Iterable[RoleBinding] | None,
    *,
    is_operator: Callable[[str], bool],
    is_operand: Callable[[str], bool],
    operand_kinds: Collection[str] = ("DaemonSet",),
) -> frozenset[str]:
    """The namespaces of Deployments running an operator's image that a ClusterRoleBinding
    names or beside which its operands run (workloads of `operand_kinds` running an operand's
    image); with no ClusterRoleBinding read at all, the image alone."""
    workloads = list(workloads)
    bound = cluster_bound_namespaces(bindings or ())
    operands = {
        w.namespace
        for w in workloads
        if w.kind in operand_kinds and any(is_operand(image) for image in w.images.values())
    }
    return frozenset(
        w.namespace
        for w in workloads
        if w.kind == "Deployment"
        and any(is_operator(image) for image in w.images.values())
        and (bound is None or w.namespace in bound or w.namespace in operands)
    )


def controllers_of_pods(workloads: Iterable[Workload], pods: Iterable[Pod]) -> list[Workload]:
    """The Deployments and DaemonSets the snapshot did not read (`kubectl get nodes,pods`) as
    their pods show them: a pod's images are its controller's template, so the GPU Operator's
    own pod (its ReplicaSet named after the Deployment, inventory.owners) is the same evidence
    as its Deployment, and is held to the same safeguards (operator_deployment_namespaces: the
    image plus its binding or operands, never a name; a claimed namespace never the platform's).
    A pod of a ReplicaSet its labels do not tie to a Deployment (no pod-template-hash) stands
    for the Deployment the ReplicaSet is named after (deployment_named), as stack_alone holds
    it. Controllers that were read are not repeated."""
    read = {(w.kind, w.namespace, w.name) for w in workloads}
    index = OwnerIndex(())  # by the controllers' own naming alone: no ReplicaSet was read
    found: dict[tuple[str, str, str], dict[str, str]] = {}
    for pod in pods:
        ref = workload_of(pod, index)
        kind, name = ref.kind, ref.name
        if kind == "ReplicaSet" and (deployment := deployment_named(name)):
            # Only the images count here, and a Deployment's are its ReplicaSet's: an export
            # that lost the pod's pod-template-hash label (rtedge's edge-west) otherwise left
            # the operator's own pod as "something else" in its namespace.
            kind, name = "Deployment", deployment
        key = (kind, ref.namespace, name)
        if kind in ("Deployment", "DaemonSet") and key not in read:
            images = found.setdefault(key, {})
            images.update({c.name: c.image for c in pod.containers if not c.ephemeral})
    return [Workload(kind=k, namespace=ns, name=n, images=i) for (k, ns, n), i in found.items()]


def deployment_named(replica_set: str) -> str | None:
    """The Deployment a ReplicaSet's name says made it (`<deployment>-<pod-template-hash>`, the
    Deployment controller's naming); None where the name has no such suffix. For the GPU
    stack's namespaces only, where what the pods run is judged whoever made them: a finding's
    subject stays the ReplicaSet (inventory.owners never guesses)."""
    prefix, _, digest = replica_set.rpartition("-")
    return prefix if prefix and digest.isalnum() else None


def cluster_bound_namespaces(bindings: Iterable[RoleBinding]) -> set[str] | None:
    """Namespaces one of whose service accounts (or all of them, the group
    `system:serviceaccounts:<namespace>`) a ClusterRoleBinding names; None with none read."""
    cluster_bindings = [b for b in bindings if b.kind == "ClusterRoleBinding"]
    if not cluster_bindings:
        return None
    group = "system:serviceaccounts:"
    found: set[str] = set()
    for subject in (s for b in cluster_bindings for s in b.subjects):
        if subject.kind == "ServiceAccount" and subject.namespace:
            found.add(subject.namespace)
        elif subject.kind == "Group" and subject.name.startswith(group):
            found.add(subject.name.removeprefix(group))
    return found


def repository_name(image: str) -> str | None:
    """The last segment of an image's repository under a path (`nvcr.io/nvidia/x` -> x)."""
    repository, _ = image_version(image)
    return repository.rsplit("/", 1)[1] if "/" in repository else None


# --- The NVIDIA Network Operator --------------------------------------------------------------

# The NVIDIA Network Operator (RDMA/InfiniBand for GPUDirect): its operator image, and the
# operands it runs in its own namespace, by the last segment of their image repository. It is
# the GPU nodes' host stack as the GPU Operator is (its driver container is privileged by
# design), so its namespace as found is the platform's. The NicClusterPolicy itself is
# cluster-scoped and names no namespace: its operands place the operator. Where the snapshot
# read no RBAC, the namespace is the platform's only if it holds nothing else
# (stack_alone.STACK_IMAGES), so an operand missing here made the whole stack a tenant's
# (POD-001 critical on the DOCA driver, affecting every tenant on the node): the list follows
# the chart and the NicClusterPolicy spec (Mellanox/network-operator, values.yaml and
# api/v1alpha1), in every image name NVIDIA has published them under.
NETWORK_OPERATOR_IMAGE = "network-operator"
NETWORK_OPERATOR_PUBLISHERS = (
    "nvcr.io/nvidia/",
    "mellanox/",
    "docker.io/mellanox/",
    "ghcr.io/mellanox/",
)
NETWORK_OPERANDS = frozenset(
    {
        # NicClusterPolicy ofedDriver: the MOFED / DOCA-OFED driver and the init container the
        # chart gives it.
        "doca-driver",
        "mofed",
        "network-operator-init-container",
        # rdmaSharedDevicePlugin, sriovDevicePlugin, ibKubernetes.
        "k8s-rdma-shared-dev-plugin",
        "sriov-network-device-plugin",
        "ib-kubernetes",
        # secondaryNetwork: Multus, the CNI plugins (MELLANOX_PLUGINS below), IPoIB, IPAM.
        "multus-cni",
        "ipoib-cni",
        "whereabouts",
        # nvIpam (node DaemonSet and controller Deployment), nicFeatureDiscovery.
        "nvidia-k8s-ipam",
        "nic-feature-discovery",
        # docaTelemetryService: `nvcr.io/nvidia/doca/doca_telemetry` in NVIDIA's examples.
        "doca_telemetry",
        "doca-telemetry-service",
        # nicConfigurationOperator: the operator Deployment and its per-node daemon.
        "nic-configuration-operator",
        "nic-configuration-operator-daemon",
        # The chart's SR-IOV Network Operator subchart (sriovNetworkOperator.enabled), in the
        # release namespace: the operator, its config daemon, webhook and resources injector,
        # and the CNIs its config daemon installs.
        "sriov-network-operator",
        "sriov-network-operator-config-daemon",
        "sriov-network-operator-webhook",
        "network-resources-injector",
        "sriov-cni",
        "ib-sriov-cni",
        "ovs-cni-plugin",
        "rdma-cni",
        # The chart's Maintenance Operator subchart (maintenanceOperator.enabled).
        "maintenance-operator",
    }
)
# Operand images whose last segment says nothing alone (`plugins`: the containernetworking
# CNI plugins, secondaryNetwork.cniPlugins): the Network Operator's only under Mellanox's
# path (`nvcr.io/nvidia/mellanox/plugins`, `ghcr.io/mellanox/plugins`, a mirror's
# `.../mellanox/plugins`), never anyone's `plugins`.
MELLANOX_PLUGINS = frozenset({"plugins"})


def is_network_operand(image: str) -> bool:
    """An image of one of the Network Operator's operands (NETWORK_OPERANDS, or a
    MELLANOX_PLUGINS name under a `mellanox/` path)."""
    name = repository_name(image)
    if name in NETWORK_OPERANDS:
        return True
    repository, _ = image_version(image)
    return name in MELLANOX_PLUGINS and repository.split("/")[-2:-1] == ["mellanox"]


def network_operator_namespaces(
    workloads: Iterable[Workload], bindings: Iterable[RoleBinding] | None = None
) -> frozenset[str]:
    """Where the NVIDIA Network Operator runs: the namespaces of Deployments running its image
    (NVIDIA's or Mellanox's repository) that a ClusterRoleBinding names, or beside which run
    DaemonSets of its operands; with no ClusterRoleBinding read at all, the image alone (as for
    the GPU Operator, operator_namespaces). A namespace's name never places it (fail closed):
    a namespace called `nvidia-network-operator` with none of this stays unclassified."""
    return operator_deployment_namespaces(
        workloads,
        bindings,
        is_operator=_is_network_operator,
        is_operand=is_network_operand,
    )


def _is_network_operator(image: str) -> bool:
    repository, _ = image_version(image)
    return repository_name(image) == NETWORK_OPERATOR_IMAGE and repository.startswith(
        NETWORK_OPERATOR_PUBLISHERS
    )


# --- KubeVirt and its Containerized Data Importer (CDI) ---------------------------------------

# KubeVirt gives the GPU Operator's passthrough GPUs and vGPUs to VMs. virt-operator (a
# Deployment) creates virt-api and virt-controller (Deployments) and the privileged virt-handler
# DaemonSet, which runs every VM's virt-launcher pod's host side, in its own namespace
# (`kubevirt`; `openshift-cnv` on OpenShift Virtualization, beside CDI); CDI's operator creates
# cdi-apiserver, cdi-deployment (the cdi-controller image) and cdi-uploadproxy, Deployments all,
# in its own (`cdi`). Their images, upstream on quay.io/kubevirt/ and Red Hat's builds
# (`virt-operator-rhel9`, CDI's as `virt-cdi-operator-rhel9`). The VMs themselves, virt-launcher
# pods in the namespaces that own the VMs, and CDI's importer/cloner pods there, are not
# operands: they stay their namespace's.
KUBEVIRT_PUBLISHERS = ("quay.io/kubevirt/", "registry.redhat.io/container-native-virtualization/")
KUBEVIRT_OPERATORS = frozenset({"virt-operator", "cdi-operator"})
KUBEVIRT_OPERANDS = frozenset(
    {
        "virt-api",
        "virt-controller",
        "virt-handler",
        "virt-exportproxy",
        "cdi-apiserver",
        "cdi-controller",
        "cdi-uploadproxy",
    }
)
# Red Hat's build suffix (`-rhel9`), and its `virt-` prefix to CDI's images.
_RED_HAT_BUILD = re.compile(r"-rhel\d+$")


def kubevirt_namespaces(
    workloads: Iterable[Workload], bindings: Iterable[RoleBinding] | None = None
) -> frozenset[str]:
    """Where KubeVirt or CDI runs: the namespaces of Deployments running virt-operator's or
    cdi-operator's image (KubeVirt's or Red Hat's repository) that a ClusterRoleBinding names
    (their manifests bind `kubevirt-operator` and `cdi-operator` so), or beside which their
    operands run; with no ClusterRoleBinding read at all, the image alone. A namespace merely
    named `kubevirt` stays unclassified and judged."""
    return operator_deployment_namespaces(
        workloads,
        bindings,
        is_operator=lambda image: kubevirt_component(image) in KUBEVIRT_OPERATORS,
        is_operand=lambda image: kubevirt_component(image) in KUBEVIRT_OPERANDS,
        operand_kinds=("DaemonSet", "Deployment"),
    )


def kubevirt_component(image: str) -> str | None:
    """The KubeVirt or CDI component an image of KubeVirt's or Red Hat's repository runs
    (`registry.redhat.io/container-native-virtualization/virt-cdi-operator-rhel9` ->
    cdi-operator); None for any other image."""
    repository, _ = image_version(image)
    name = repository_name(image)
    if name is None or not repository.startswith(KUBEVIRT_PUBLISHERS):
        return None
    name = _RED_HAT_BUILD.sub("", name)
    return name.removeprefix("virt-") if name.startswith("virt-cdi-") else name
