"""Which GPU nodes a DRIFT-002 change reaches, and how that is known (the finding's evidence).

A changed device plugin, toolkit or exporter DaemonSet changes the isolation boundary on the
nodes it runs on, so its finding affects the tenants there (as a STACK finding on those nodes
does). A cluster-wide controller (the GPU Operator Deployment, the DRA driver's controller)
and the ClusterPolicy run no pod on a GPU node themselves: they reach the nodes their operand
DaemonSets run on, the GPU-stack DaemonSets in the controller's namespace.

Read from the snapshot being judged: a DaemonSet's pods there, else its nodeSelector,
affinity and tolerations matched against the GPU nodes (inventory.placement). Only GPU nodes
count: a DaemonSet's pod on a CPU node reaches no GPU.
"""

from __future__ import annotations

from collections.abc import Iterable

from inventory.drift import DriftChange, is_gpu_component
from inventory.placement import workload_fit
from inventory.snapshot import Node, Workload
from inventory.sources.images import component_of
from posture.inputs import PostureInputs

NodesReached = tuple[list[str], str]  # node names, sorted; the basis, in words


def component_nodes(inputs: PostureInputs, change: DriftChange) -> NodesReached:
    """The GPU nodes a DRIFT-002 change reaches in the snapshot judged, and how that is known."""
    if change.subject_kind == "ClusterPolicy":
        namespaces = sorted(_operator_namespaces(inputs))
        if not namespaces:
            return [], "no GPU Operator Deployment in the snapshot: its operands are not known"
        return _operands(
            inputs, namespaces, f"ClusterPolicy {change.subject_name} configures the GPU Operator"
        )
    if change.subject_kind != "DaemonSet":
        return _operands(
            inputs, [change.subject_namespace], f"{_ref(change)} is a cluster-wide controller"
        )
    workload = _workload(inputs, change)
    if workload is None:
        nodes = _pod_nodes(inputs, change.subject_namespace, change.subject_name)
        if nodes:
            return nodes, f"{_ref(change)} is gone; its pods still run on these nodes"
        return [], f"{_ref(change)} is no longer in the snapshot: the nodes it ran on are not known"
    return _daemonset_nodes(inputs, workload)


def _operands(inputs: PostureInputs, namespaces: list[str], what: str) -> NodesReached:
    """The nodes of the GPU-stack DaemonSets in the controller's namespaces; `what` says what
    the changed object is."""
    daemonsets = [
        w
        for w in inputs.snapshot.workloads
        if w.kind == "DaemonSet" and w.namespace in namespaces and is_gpu_component(w)
    ]
    where = ", ".join(namespaces)
    if not daemonsets:
        return [], (
            f"{what}; no GPU-stack DaemonSet (its operands) in namespace {where} is in the "
            "snapshot, so the GPU nodes it manages are not known"
        )
    nodes = sorted({n for ds in daemonsets for n in _daemonset_nodes(inputs, ds)[0]})
    names = ", ".join(sorted(ds.name for ds in daemonsets))
    return nodes, (
        f"{what}: the GPU nodes it manages are those its operand DaemonSets in namespace "
        f"{where} run on ({names})"
    )


def _daemonset_nodes(inputs: PostureInputs, ds: Workload) -> NodesReached:
    ref = f"DaemonSet {ds.namespace}/{ds.name}"
    nodes = _pod_nodes(inputs, ds.namespace, ds.name)
    if nodes:
        return nodes, f"the GPU nodes {ref} runs a pod on"
    fitting = [
        n.name
        for n in _gpu_nodes(inputs)
        if workload_fit(n.name, n.labels, n.taints, ds).fits is True
    ]
    if fitting:
        return sorted(fitting), (
            f"no pod of {ref} in the snapshot: the GPU nodes its nodeSelector, affinity and "
            "tolerations admit"
        )
    return [], f"no pod of {ref} in the snapshot and no GPU node its placement admits"


def _pod_nodes(inputs: PostureInputs, namespace: str, name: str) -> list[str]:
    return sorted(_daemonset_pods(inputs).get((namespace, name), ()))


def _daemonset_pods(inputs: PostureInputs) -> dict[tuple[str, str], set[str]]:
    """(namespace, DaemonSet) -> the GPU nodes its active pods run on, once per evaluation."""
    key = ("drift_daemonset_pods",)
    if key not in inputs.memo:
        gpu = {n.name for n in _gpu_nodes(inputs)}
        found: dict[tuple[str, str], set[str]] = {}
        for pod in inputs.snapshot.pods:
            if pod.is_active and pod.owner_kind == "DaemonSet" and pod.node_name in gpu:
                found.setdefault((pod.namespace, pod.owner_name or ""), set()).add(pod.node_name)
        inputs.memo[key] = found
    return inputs.memo[key]  # type: ignore[return-value]  # memo[key] holds what this function stored under it


def _gpu_nodes(inputs: PostureInputs) -> Iterable[Node]:
    return (n for n in inputs.snapshot.nodes if n.is_gpu_node)


def _operator_namespaces(inputs: PostureInputs) -> set[str]:
    return {
        w.namespace
        for w in inputs.snapshot.workloads
        if w.kind != "DaemonSet"
        and any(component_of(image) == "gpu_operator" for image in w.images.values())
    }


def _workload(inputs: PostureInputs, change: DriftChange) -> Workload | None:
    key = (change.subject_kind, change.subject_namespace, change.subject_name)
    return next(
        (w for w in inputs.snapshot.workloads if (w.kind, w.namespace, w.name) == key), None
    )


def _ref(change: DriftChange) -> str:
    return f"{change.subject_kind} {change.subject_namespace}/{change.subject_name}"
