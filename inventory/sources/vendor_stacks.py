"""The namespaces of other vendors' GPU stacks that carry NVIDIA's image names. PURE.

AMD's GPU Operator (`rocm/gpu-operator`) and device plugin (`rocm/k8s-device-plugin`) reuse the
names of NVIDIA's. They are never NVIDIA's components (images.component_of: their versions are
not judged by NVIDIA's bulletins), but they are the host stack of their own GPU nodes, as
privileged by design as NVIDIA's: their namespace as found is the platform's, placed by the same
evidence as the GPU Operator's (stack_operators.operator_deployment_namespaces: the operator's
image AND a ClusterRoleBinding naming the namespace or its operands beside it), and a plugin
DaemonSet's only where a ClusterRoleBinding names its namespace. A namespace's name never places
it, and a tenant's namespace stays the tenant's (tenants.mapping.platform_namespaces).
"""

from __future__ import annotations

from collections.abc import Iterable

from inventory.snapshot import RoleBinding, Workload
from inventory.sources.images import namesake
from inventory.sources.stack_operators import (
    cluster_bound_namespaces,
    operator_deployment_namespaces,
)


def vendor_stack_namespaces(
    workloads: Iterable[Workload], bindings: Iterable[RoleBinding] | None
) -> frozenset[str]:
    """Namespaces of another vendor's GPU Operator (with its RBAC or operands) or device-plugin
    DaemonSet (with its RBAC) whose images carry NVIDIA's names."""
    workloads = list(workloads)
    bindings = list(bindings or ())
    operator = operator_deployment_namespaces(
        workloads,
        bindings,
        is_operator=lambda image: namesake(image) == "gpu_operator",
        is_operand=lambda image: namesake(image) not in (None, "gpu_operator"),
    )
    bound = cluster_bound_namespaces(bindings) or set()
    plugins = {
        w.namespace
        for w in workloads
        if w.kind == "DaemonSet"
        and w.namespace in bound
        and any(namesake(image) == "device_plugin" for image in w.images.values())
    }
    return operator | plugins
