"""Whether the GPU Operator seen in the cluster manages a given GPU node. PURE.

An Operator Deployment somewhere in the cluster does not make it every GPU node's: on AKS and
EKS a pool may run the cloud's own driver and device plugin (AKS's `gpu-resources` DaemonSet)
beside a pool the Operator manages, its operands kept off by a taint they do not tolerate. The
Operator acts on a node only through its operands, the DaemonSets it creates in its own
namespace (driver, container toolkit, device plugin, GPU Feature Discovery, DCGM exporter, MIG
manager; on nodes whose GPUs go to VMs the sandbox device plugin and validator, VFIO, vGPU, Kata
and CC managers), each selecting the nodes it labels `nvidia.com/gpu.deploy.<operand>=true`. So
it manages a node where one of them has a pod there or would run there (inventory.placement);
where the snapshot holds none of their specs, the node's deploy labels say it; where neither
says, it is taken to manage the node, as before: nothing read says it does not. Where it does
not, its version is not the node's and its bulletin rows are not the node's exposures (DESIGN
§7/§8: a component not deployed on the node is not installed there).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from inventory.placement import workload_fit
from inventory.snapshot import Pod, Taint, Workload
from inventory.sources.images import SANDBOX_OPERANDS, component_of

# The components the Operator deploys as DaemonSets on the nodes it manages.
OPERANDS = frozenset(
    {"driver", "container_toolkit", "device_plugin", "dcgm_exporter", "mig_manager"}
)
DEPLOY_PREFIX = "nvidia.com/gpu.deploy."
# In every reason the node gives for the Operator not being installed there while it runs in
# the cluster (stack_managers tells the two apart by it).
NOT_MANAGED = "does not manage this node"


def operator_absent(
    operator: str,
    node_name: str,
    labels: Mapping[str, str],
    taints: Iterable[Taint],
    pods_on_node: Iterable[Pod],
    daemonsets: Sequence[Workload],
) -> str | None:
    """Why the GPU Operator (`operator`: where it was seen, StackFacts.operator) does not manage
    the node; None where it does, or where nothing read says it does not."""
    namespace = _namespace(operator)
    operands = [ds for ds in daemonsets if _is_operand(ds, namespace)]
    if _operand_pod_here(pods_on_node, operands, namespace):
        return None
    if operands:
        taints = tuple(taints)
        fits = [(ds, workload_fit(node_name, labels, taints, ds)) for ds in operands]
        if any(fit.fits is not False for _, fit in fits):
            return None  # it runs here, or may (an affinity gpuposture cannot evaluate)
        reasons = "; ".join(
            f"DaemonSet {ds.namespace}/{ds.name}: {fit.why}"
            for ds, fit in sorted(fits, key=lambda f: (f[0].namespace, f[0].name))
        )
        return (
            f"the GPU Operator ({operator}) {NOT_MANAGED}: none of its operand "
            f"DaemonSets runs here ({reasons})"
        )
    deploy = {k: v for k, v in labels.items() if k.startswith(DEPLOY_PREFIX)}
    if not deploy or any(v.strip().lower() != "false" for v in deploy.values()):
        return None
    shown = ", ".join(f"{k}={v}" for k, v in sorted(deploy.items()))
    return (
        f"the GPU Operator ({operator}) {NOT_MANAGED}: the node's labels turn "
        f"every operand off ({shown})"
    )


def _namespace(operator: str) -> str | None:
    """The Operator's namespace where it was seen as a Deployment or pod ("Deployment ns/name");
    None where only its ClusterPolicy (cluster-scoped) was seen."""
    kind, _, where = operator.partition(" ")
    if kind not in ("Deployment", "pod") or "/" not in where:
        return None
    return where.partition("/")[0] or None


def _is_operand(ds: Workload, namespace: str | None) -> bool:
    """A DaemonSet the Operator made: one of its operands' images, in its namespace; with the
    namespace unknown, one that selects nodes by the Operator's deploy labels."""
    if ds.kind != "DaemonSet":
        return False
    # By image: GPU Feature Discovery runs the device plugin's, on the Operator's nodes alike;
    # the sandbox operands by name.
    by_image = any(component_of(image) in OPERANDS for image in ds.images.values())
    if not by_image and ds.name not in SANDBOX_OPERANDS:
        return False
    if namespace is not None:
        return ds.namespace == namespace
    return any(k.startswith(DEPLOY_PREFIX) for k in ds.node_selector)


def _operand_pod_here(
    pods: Iterable[Pod], operands: Sequence[Workload], namespace: str | None
) -> bool:
    names = {(ds.namespace, ds.name) for ds in operands}
    for pod in pods:
        if not pod.is_active or pod.owner_kind != "DaemonSet":
            continue
        if (pod.namespace, pod.owner_name) in names:
            return True
        # An operand whose DaemonSet spec the snapshot lacks: its pod in the Operator's namespace.
        if pod.namespace == namespace and (
            pod.owner_name in SANDBOX_OPERANDS
            or any(component_of(c.image) in OPERANDS for c in pod.containers)
        ):
            return True
    return False
