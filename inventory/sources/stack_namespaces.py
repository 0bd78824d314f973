"""The GPU stack's namespaces, found by evidence. PURE.

Who runs the GPU nodes' host stack (DESIGN §3, fail closed: "the GPU Operator's namespace as
found"): the GPU Operator, the NVIDIA Network Operator, KubeVirt and CDI (stack_operators), the
NVIDIA DRA driver, a standalone device plugin and NVIDIA's standalone node agents. A binding
vouches for such a namespace; where none does, its images place it only when it holds nothing
else (stack_alone). A namespace's name never places it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from inventory.snapshot import Pod, RoleBinding, Workload
from inventory.sources.images import component_of, image_version, other_vendor
from inventory.sources.stack_alone import foreign_contents
from inventory.sources.stack_operators import (
    cluster_bound_namespaces,
    controllers_of_pods,
    kubevirt_namespaces,
    network_operator_namespaces,
    operator_deployment_namespaces,
    repository_name,
)
from inventory.sources.vendor_stacks import (
    handing_role,
    vendor_plugin_daemonsets,
    vendor_stack_namespaces,
)

# The GPU-stack components the operator deploys as DaemonSets in its own namespace.
OPERAND_COMPONENTS = frozenset(
    {"device_plugin", "container_toolkit", "driver", "dcgm_exporter", "mig_manager"}
)


def operator_namespaces(
    workloads: Iterable[Workload], bindings: Iterable[RoleBinding] | None = None
) -> frozenset[str]:
    """Where the GPU Operator runs: the namespaces of Deployments running its image that a
    ClusterRoleBinding names (one of their service accounts), or that also run the operator's
    operands (DaemonSets of the device plugin, toolkit, driver, DCGM exporter or MIG manager,
    which the operator creates in its own namespace). Anyone who may create a Deployment can run
    the operator's image, even at zero replicas, and a namespace found here becomes the
    platform's, unjudged: the image alone proves nothing where RBAC was read. Where a hand-made
    snapshot holds some bindings but not the operator's, its operands still place it, rather
    than every platform DaemonSet being judged as a tenant's pods. With no ClusterRoleBinding
    in `bindings` at all (the snapshot did not read RBAC; a cluster always has some), the image
    alone finds it. Found without its binding, it is the platform's only if it holds nothing
    else (find_stack_namespaces)."""
    return operator_deployment_namespaces(
        workloads,
        bindings,
        is_operator=lambda image: component_of(image) == "gpu_operator",
        is_operand=lambda image: component_of(image) in OPERAND_COMPONENTS,
    )


def stack_namespaces(
    workloads: Iterable[Workload],
    bindings: Iterable[RoleBinding] | None = None,
    pods: Iterable[Pod] = (),
) -> frozenset[str]:
    """The GPU stack's namespaces as found (find_stack_namespaces)."""
    return find_stack_namespaces(workloads, bindings, pods).found


@dataclass(frozen=True)
class StackNamespaces:
    """The GPU stack's namespaces as found, and those its images alone would have placed but
    that hold something else: namespace -> what else (stack_alone.foreign_contents)."""

    found: frozenset[str]
    refused: dict[str, list[str]] = field(default_factory=dict)


def find_stack_namespaces(
    workloads: Iterable[Workload],
    bindings: Iterable[RoleBinding] | None = None,
    pods: Iterable[Pod] = (),
) -> StackNamespaces:
    """The GPU stack's namespaces as found: the GPU Operator's (operator_namespaces), the NVIDIA
    Network Operator's (network_operator_namespaces), KubeVirt's and CDI's, which hand the
    sandbox nodes' GPUs and vGPUs to VMs (kubevirt_namespaces), those of the two things that hand
    GPUs to pods without the GPU Operator, the NVIDIA DRA driver and a standalone device plugin
    (a DaemonSet of theirs: their charts run them so, one per node), and those of NVIDIA's
    standalone node agents (_standalone). A namespace a ClusterRoleBinding vouches for (it names
    one of the namespace's service accounts: the DRA kubelet plugin publishes ResourceSlices,
    the plugin's config manager and GFD read nodes, their charts bind one) is the stack's.
    One only images place (the snapshot read no ClusterRoleBinding, the operator's operands
    beside it, a standalone agent's own RoleBinding) is the stack's only if it holds nothing
    else (stack_alone): anyone may run an image, and a namespace found here is the
    platform's, unjudged. A Deployment or DaemonSet the snapshot did not read is seen in its
    `pods` (controllers_of_pods), on the same terms."""
    pods = list(pods)
    workloads = list(workloads)
    workloads += controllers_of_pods(workloads, pods)
    bindings = list(bindings or ())
    vouched, candidates = _stack_candidates(workloads, bindings)
    refused = {
        ns: what for ns in sorted(candidates) if (what := foreign_contents(ns, workloads, pods))
    }
    return StackNamespaces(frozenset(vouched | (candidates - refused.keys())), refused)


def unvouched_stack_namespaces(
    workloads: Iterable[Workload], bindings: Iterable[RoleBinding] | None = None
) -> frozenset[str]:
    """The namespaces only images place (find_stack_namespaces): those whose pods must be read
    to know whether they hold anything beside the stack."""
    return frozenset(_stack_candidates(list(workloads), list(bindings or ()))[1])


def _stack_candidates(
    workloads: list[Workload], bindings: list[RoleBinding]
) -> tuple[set[str], set[str]]:
    """(namespaces a binding vouches for, namespaces only images place)."""
    bound = cluster_bound_namespaces(bindings)
    handing = {
        w.namespace
        for w in workloads
        if w.kind == "DaemonSet"
        and any(_hands_out_gpus(image) for image in w.images.values())
        and (bound is None or w.namespace in bound)
    }
    operators = (
        operator_namespaces(workloads, bindings)
        | network_operator_namespaces(workloads, bindings)
        | kubevirt_namespaces(workloads, bindings)
        | vendor_stack_namespaces(workloads, bindings)  # AMD's, named as NVIDIA's
    )
    found = operators | handing | _standalone(workloads, bindings)
    # Only a ClusterRoleBinding vouches: a namespace's own RoleBinding (the dcgm-exporter
    # chart's) is anyone's who may edit the namespace, as its images are.
    vouched = found & (bound or set())
    return set(vouched), set(found - vouched)


# NVIDIA's node agents that hand out no GPU but are deployed by their own charts outside the
# operator (dcgm-exporter in e.g. `gpu-monitoring`, MIG Manager, the older standalone GPU
# Feature Discovery image), by the last segment of their image repository.
STANDALONE_IMAGES = frozenset({"dcgm-exporter", "k8s-mig-manager", "gpu-feature-discovery"})


def _standalone(workloads: list[Workload], bindings: list[RoleBinding]) -> set[str]:
    """Namespaces of a DaemonSet running one of STANDALONE_IMAGES from NVIDIA's registry
    (nvcr.io/nvidia/...), where its chart's RBAC is there: a ClusterRoleBinding, or a
    RoleBinding in the namespace naming one of its service accounts (dcgm-exporter's chart
    always binds its `dcgm-exporter-read-cm` Role so, and a ClusterRole only with pod labels
    on), or where the snapshot read no ClusterRoleBinding. Without a ClusterRoleBinding it is
    the stack's only if it holds nothing else (find_stack_namespaces). A tenant's namespace
    stays the tenant's (platform_namespaces drops it whatever says so)."""
    cluster = cluster_bound_namespaces(bindings)
    local = _locally_bound(bindings)
    return {
        w.namespace
        for w in workloads
        if w.kind == "DaemonSet"
        and any(_nvidia_standalone(image) for image in w.images.values())
        and (cluster is None or w.namespace in cluster | local)
    }


def _locally_bound(bindings: Iterable[RoleBinding]) -> set[str]:
    """Namespaces with a RoleBinding naming one of their own service accounts."""
    return {
        b.namespace
        for b in bindings
        if b.kind == "RoleBinding"
        and b.namespace
        and any(
            s.kind == "ServiceAccount" and s.namespace in (None, b.namespace) for s in b.subjects
        )
    }


def _nvidia_standalone(image: str) -> bool:
    repository, _ = image_version(image)
    return repository.startswith("nvcr.io/nvidia/") and repository_name(image) in STANDALONE_IMAGES


def _hands_out_gpus(image: str) -> bool:
    # The NVIDIA DRA driver (images.COMPONENTS names its images, old and new) or the plugin.
    return component_of(image) in ("dra_driver", "device_plugin")


def refused_warnings(
    refused: Mapping[str, list[str]],
    workloads: Iterable[Workload],
    platform: Collection[str],
    claimed: Collection[str],
) -> list[str]:
    """Say which namespaces the GPU stack's images did not make the platform's, and why: those
    that hold more than the stack (find_stack_namespaces), those where only a Deployment
    runs the device plugin (never the stack's: its charts run it as a DaemonSet), and those of
    a device-plugin or DRA-driver DaemonSet (NVIDIA's or another vendor's) that no
    ClusterRoleBinding read vouches for. They are
    judged as unclassified now, which their owner should hear about; one the platform's by
    other means, or a tenant's (`claimed`), needs no word."""
    found = [
        f"namespace {namespace} runs the GPU stack's images, but no ClusterRoleBinding read "
        "names its service accounts, and it holds more than the GPU stack: "
        f"{'; '.join(what[:MAX_LISTED])}{' ...' if len(what) > MAX_LISTED else ''}. It is "
        f"not taken as a platform namespace: {JUDGED_AS} (if it is the platform's, move the "
        "rest out of it, or label it "
        "gpuposture.io/platform=true or list it in GPUPOSTURE_PLATFORM_NAMESPACES, which makes "
        "all it holds the platform's, unjudged)"
        for namespace, what in sorted(refused.items())
        if namespace not in platform and namespace not in claimed
    ]
    found += [
        f"Deployment {w.namespace}/{w.name} runs the NVIDIA device plugin's image, which its "
        "charts run as a DaemonSet (one per node), so it does not make its namespace a GPU-stack "
        f"namespace: {UNCLASSIFIED_NOTE}"
        for w in workloads
        if w.kind == "Deployment"
        and w.namespace not in platform
        and w.namespace not in claimed
        and any(component_of(i) == "device_plugin" for i in w.images.values())
    ]
    # NVIDIA's DRA driver or device plugin DaemonSet whose namespace nothing placed (RBAC
    # read, no ClusterRoleBinding names it, and it holds nothing else that `refused` says).
    found += [
        f"DaemonSet {w.namespace}/{w.name} runs the NVIDIA {_nvidia_role(w)}, but no "
        f"ClusterRoleBinding read names its namespace's service accounts: {UNCLASSIFIED_NOTE}"
        for w in workloads
        if w.kind == "DaemonSet"
        and w.namespace not in platform
        and w.namespace not in claimed
        and w.namespace not in refused
        and any(_hands_out_gpus(i) for i in w.images.values())
    ]
    found += [
        f"DaemonSet {w.namespace}/{w.name} runs {_vendor(w)}'s {handing_role(w)}, but "
        f"no ClusterRoleBinding read names its namespace's service accounts: {UNCLASSIFIED_NOTE}"
        for w in vendor_plugin_daemonsets(workloads)
        if w.namespace not in platform and w.namespace not in claimed
    ]
    return found


def _nvidia_role(workload: Workload) -> str:
    components = {component_of(i) for i in workload.images.values()}
    return "DRA driver" if "dra_driver" in components else "device plugin"


def _vendor(workload: Workload) -> str:
    vendors = sorted({v for i in workload.images.values() if (v := other_vendor(i))})
    return vendors[0] if vendors else "another vendor"


MAX_LISTED = 5  # what else a refused namespace holds: the first few say it
# Not "an unclassified namespace's": the unclassified party's slug is a word a tenant viewer's
# redaction hides (it is another party), which left "judged as an (another tenant)
# namespace's" on their page. The setting's name is one word the redaction reads as a whole.
JUDGED_AS = (
    "its pods are judged as those of a namespace no tenant claims, under "
    "GPUPOSTURE_UNCLASSIFIED_CLASS"
)
UNCLASSIFIED_NOTE = (
    f"{JUDGED_AS} (label it gpuposture.io/platform=true or list it in "
    "GPUPOSTURE_PLATFORM_NAMESPACES if it is the platform's)"
)
