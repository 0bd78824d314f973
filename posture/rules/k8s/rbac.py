"""K8S-003..005: what tenants may do to the GPU control plane through RBAC.

The checks over the PURE evaluator in posture/rules/k8s/rbac_eval.py, which follows the API
server's RBAC authorizer: a ClusterRoleBinding grants cluster-wide, a RoleBinding only in its own
namespace (even when it refers to a ClusterRole), `*` matches any verb, group or resource, and a
rule with `resourceNames` grants on those names only (never on create or on a whole collection).
K8S-003/-004 name the objects they guard; their findings are drawn by rbac_writes."""

from __future__ import annotations

from collections.abc import Iterator

from inventory.drift import is_gpu_component
from inventory.rbac import (
    ALL_AUTHENTICATED,
    ALL_SERVICE_ACCOUNTS,
    ANY,
    SA_GROUP_PREFIX,
    SA_USER_PREFIX,
    role_rules,
    service_account_namespace,
)
from inventory.rbac import binding_order as _binding_order
from inventory.rbac import ref as _ref
from inventory.rbac import subject_label as _subject_label
from inventory.snapshot import ClusterSnapshot
from posture.inputs import PostureInputs
from posture.rules.k8s.rbac_eval import (
    RBAC_KINDS,
    Grant,
    can,
    effective_permissions,
    subject_of_tenant,
    tenant_namespaces,
)
from posture.rules.k8s.rbac_gpu_targets import (
    OPERATOR_GROUP,
    OPERATOR_RESOURCE,
    SHARING_CONFIGMAP_PURPOSES,
    UNSEEN_CONFIG,
    gpu_config_targets,
    k8s004_targets,
)
from posture.rules.k8s.rbac_targets import Target
from posture.rules.k8s.rbac_writes import write_findings
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import binding_draft

NODE_WRITE_VERBS = ("patch", "update")
EDIT_VERBS = ("create", "update", "patch", "delete", "deletecollection")


@check(
    id="K8S-003",
    needs=RBAC_KINDS,
    title="A tenant principal may patch or update nodes",
    severity="high",
    scope="tenant",
    rationale=(
        "GPU pools are kept apart by node labels and taints. Whoever may patch or update Node "
        "objects can relabel a node into another tenant's pool, remove the taint that keeps "
        "other classes off it, or set `nvidia.com/mig.config` and the device-plugin config "
        "label to repartition its GPUs: a tenant with that right decides where every other "
        "tenant's pods land and how their GPUs are shared. The right counts however it is "
        "reached: directly, or by taking an identity that holds it (impersonation, a "
        "service-account token or a legacy token Secret, running pods, exec or a workflow, "
        "training or Ray job in another namespace, in turn along a chain) or by bind/escalate; "
        "the evidence names the path. `get` or `create` on `nodes/proxy` (cluster-wide, on every "
        "node or those its resourceNames list) is such a path: the kubelet API it reaches runs "
        "commands in any pod of the node through `/exec`, `/run` and `/attach` (a WebSocket "
        "exec needs only `get`), so it takes each pod's service account, and in a GPU "
        "Operator namespace the operator's privileged pods and accounts. Exec into any "
        "privileged pod of the node (one with a privileged container or one adding "
        "`SYS_ADMIN`: kube-proxy, the CNI, a device plugin, GPU Operator or not) is root on "
        "the node, and root holds the kubelet's credentials, which may relabel that node "
        "(NodeRestriction keeps from it its taints and the `kubernetes.io` labels beyond the "
        "kubelet's own, `node-restriction.kubernetes.io/` among them; not "
        "`nvidia.com/mig.config`, the "
        "device-plugin config label or a pool label of the platform's own domain): the path "
        "names the pod and the node. The tenant's own pods and pods that have ended are not "
        "counted. The kubelet's read-only subresources (`nodes/log`, `nodes/metrics`, "
        "`nodes/stats`) run nothing."
    ),
    remediation=(
        "Remove the binding in the evidence, or bind the tenant to a ClusterRole that only "
        "reads nodes (`get`, `list`, `watch`); an agent that reads kubelet metrics or logs gets "
        "`nodes/metrics`, `nodes/stats` or `nodes/log`, never `nodes/proxy`. Node labels and "
        "taints belong to the platform team's automation (node-pool configuration); if a "
        "tenant needs to steer scheduling, "
        "give it nodeSelectors and tolerations the admission policy allows, never node writes."
    ),
    mappings=("SP800-53:AC-6",),
)
def tenant_may_patch_nodes(inputs: PostureInputs) -> Iterator[FindingDraft]:
    # A rule without resourceNames reaches every node; one with them, only the nodes named.
    # The status subresource counts too: a status update keeps only the spec (so the taints)
    # from the old object, and takes the labels it is sent.
    targets = []
    for resource, every, one in (
        ("nodes", "all nodes", "node"),
        ("nodes/status", "labels of all nodes", "node labels"),
    ):
        targets.append(Target("Node", "", resource, None, None, every))
        targets += [
            Target("Node", "", resource, None, n.name, one)
            for n in sorted(inputs.snapshot.nodes, key=lambda n: n.name)
        ]
    yield from write_findings("K8S-003", inputs, targets, NODE_WRITE_VERBS)


@check(
    id="K8S-004",
    needs=(*RBAC_KINDS, "ConfigMap"),
    title="A tenant principal may edit the device-plugin or MIG configuration",
    severity="high",
    scope="tenant",
    rationale=(
        "The device-plugin ConfigMap decides whether GPUs are time-sliced or shared through "
        "MPS and into how many replicas; the mig-parted ConfigMap decides how GPUs are cut "
        "into MIG instances; the vGPU Device Manager's ConfigMap (the ClusterPolicy's "
        "`vgpuDeviceManager.config`) decides which vGPU types, and so how many VMs, each GPU "
        "of a vm-vgpu node is split into; the GPU Operator's ClusterPolicy points at them and "
        "controls the "
        "driver and toolkit on every GPU node, and its NVIDIADriver resources pick the driver "
        "image each node pool runs. A tenant that may write any of them can turn hardware "
        "isolation into time-slicing for every tenant on those nodes, or run code of its "
        "choosing as the driver. A ConfigMap that the device plugin (or its config-manager) or "
        "MIG Manager mounts or reads counts wherever that runs, even in a namespace not "
        "labelled as the platform's (the evidence's `why` names the workload); one in a "
        "tenant's own namespace does not. What the snapshot did not hold is stood in for and "
        "marked as not seen (`target_seen` false): with no sharing ConfigMap read but the GPU "
        "stack running, writes to ConfigMaps in the stack's namespace; with the GPU Operator "
        "running but no ClusterPolicy read, writes to `clusterpolicies.nvidia.com` and "
        "`nvidiadrivers.nvidia.com` by any name. With no GPU Operator seen either, a rule that "
        "names those resources (or NVIDIA's API group) is still reported, as low: they may "
        "not exist, but take effect wherever the operator is installed. Other vendors' "
        "operators are configured alike: AMD's GPU Operator by its DeviceConfig "
        "(`deviceconfigs.amd.com`: driver, device plugin and node labeller images, GPU "
        "partitioning) and Intel's Device Plugins Operator by GpuDevicePlugin "
        "(`gpudeviceplugins.deviceplugin.intel.com`: the plugin's image and `sharedDevNum`, "
        "how many pods time-share each card); NVIDIA's Network Operator by its NicClusterPolicy "
        "(`nicclusterpolicies.mellanox.com`: the DOCA/MOFED driver image loaded as kernel "
        "modules on every node it manages, and how many pods share each RDMA device; it acts "
        "on the one named `nic-cluster-policy`). "
        "gpuposture does not read them: where that "
        "operator is seen running, a write to any of them is reported, not seen; where not, "
        "a rule naming them is, as low."
    ),
    remediation=(
        "Remove the binding in the evidence, or narrow its role so that it no longer grants "
        "create/update/patch/delete/deletecollection on these ConfigMaps (in the GPU "
        "Operator's namespace, or wherever the device plugin or MIG Manager runs) or on "
        "`clusterpolicies.nvidia.com` and `nvidiadrivers.nvidia.com` (AMD's "
        "`deviceconfigs.amd.com`, Intel's `gpudeviceplugins.deviceplugin.intel.com`, the "
        "Network Operator's `nicclusterpolicies.mellanox.com`). "
        "Changes to GPU sharing "
        "go through a sharing request the platform team approves and applies; tenants keep "
        "read access at most."
    ),
    mappings=("SP800-53:AC-6", "SP800-53:CM-5"),
)
def tenant_may_edit_gpu_config(inputs: PostureInputs) -> Iterator[FindingDraft]:
    # With what the snapshot did not hold stood in for, and said (rbac_gpu_targets).
    yield from write_findings("K8S-004", inputs, k8s004_targets(inputs), EDIT_VERBS)


def operator_namespaces(snapshot: ClusterSnapshot) -> set[str]:
    """Namespaces running GPU components (operator, device plugin, GFD, ...)."""
    return {w.namespace for w in snapshot.workloads if is_gpu_component(w)}


@check(
    id="K8S-005",
    # It reads RoleBindings only (as it always declared the cluster-wide kinds, kept).
    needs=("ClusterRole", "ClusterRoleBinding", "RoleBinding"),
    title="A GPU Operator service account is bound from outside its namespace",
    severity="medium",
    scope="tenant",
    rationale=(
        "The GPU Operator's service accounts run privileged pods on every GPU node and hold "
        "cluster-wide rights over nodes, DaemonSets and the ClusterPolicy. A RoleBinding in "
        "another namespace that names one of them is not part of the operator's install: it "
        "means the operator's identity is being reused for something else (a tenant job, a "
        "script holding its token), or that a namespace's admins are shaping what that "
        "identity may do. Either way the most powerful GPU identity is no longer only the "
        "operator's."
    ),
    remediation=(
        "Delete the RoleBinding in the evidence. Whatever needs these rights in that namespace "
        "gets its own service account there, bound to a role with only what it needs; the "
        "operator's service accounts keep only the bindings its chart or OLM bundle creates."
    ),
    mappings=("SP800-53:AC-6",),
)
def operator_account_bound_elsewhere(inputs: PostureInputs) -> Iterator[FindingDraft]:
    operator_ns = operator_namespaces(inputs.snapshot)
    for binding in sorted(inputs.snapshot.bindings, key=_binding_order):
        if binding.kind != "RoleBinding" or binding.namespace is None:
            continue
        named = [
            (s, ns)
            for s in binding.subjects
            if (ns := service_account_namespace(s)) in operator_ns and ns != binding.namespace
        ]
        if not named:
            continue
        tenant = inputs.tenant_of_namespace(binding.namespace)
        accounts = [_subject_label(s) for s, _ in named]
        yield binding_draft(
            "K8S-005",
            "RoleBinding",
            binding.namespace,
            binding.name,
            tenants=(tenant,),
            evidence={
                "binding": _ref("RoleBinding", binding.namespace, binding.name),
                "namespace_tenant": tenant.slug if tenant else None,
                "role": _ref(binding.role_kind, None, binding.role_name),
                "operator_identities": accounts,
                "operator_namespaces": sorted({ns for _, ns in named}),
                "all_subjects": [_subject_label(s) for s in binding.subjects],
            },
            title=(
                f"RoleBinding {binding.namespace}/{binding.name} binds GPU Operator identity "
                f"{', '.join(accounts)} outside its namespace"
            ),
        )


__all__ = [
    "ANY",
    "SA_GROUP_PREFIX",
    "SA_USER_PREFIX",
    "ALL_AUTHENTICATED",
    "ALL_SERVICE_ACCOUNTS",
    "Grant",
    "tenant_namespaces",
    "service_account_namespace",
    "subject_of_tenant",
    "role_rules",
    "effective_permissions",
    "can",
    "NODE_WRITE_VERBS",
    "EDIT_VERBS",
    "SHARING_CONFIGMAP_PURPOSES",
    "OPERATOR_GROUP",
    "OPERATOR_RESOURCE",
    "UNSEEN_CONFIG",
    "Target",
    "gpu_config_targets",
    "tenant_may_patch_nodes",
    "tenant_may_edit_gpu_config",
    "operator_namespaces",
    "operator_account_bound_elsewhere",
]
