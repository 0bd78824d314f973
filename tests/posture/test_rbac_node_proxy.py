"""`nodes/proxy`: the kubelet API's exec, run and attach into any pod of the node, counted as an
escalation path of K8S-003/-004 (GET alone opens a WebSocket exec); exec into a privileged pod
is root on its node, whose kubelet relabels the node (K8S-003 only), GPU Operator or not; the
kubelet's read-only subresources and a RoleBinding (Node is cluster-scoped) reach nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from posture.rules.registry import run_checks
from tests.posture.builders import container, gpu_node, pod
from tests.posture.test_rules_rbac import (
    DEVS,
    OPS,
    cluster_role,
    crb,
    rb,
    rule,
    sa,
    world,
)

NODE_PATCH = cluster_role("node-labeler", rule(verbs=("patch",)))
# A service account elsewhere that may relabel every node, running on the CPU node only.
DEPLOYER = crb("deployer-nodes", "node-labeler", sa("tools", "deployer"))
PODS = (
    pod(OPS, "nvidia-device-plugin-x1", node="gpu-1", service_account="nvidia-device-plugin"),
    pod("tools", "deployer-7f", node="cpu-1", service_account="deployer"),
    pod("alpha", "train-0", node="cpu-1"),
)
OPERATOR_PATH = (
    "may exec through the kubelet API ({verbs} on nodes/proxy) into pod "
    f"{OPS}/nvidia-device-plugin-x1 on node gpu-1 in GPU Operator namespace {OPS} "
    "(privileged, as its accounts)"
)


def _drafts(*tenant_rules, binding=None, pods=PODS, operator=True, roles=(), bindings=()):
    roles = [NODE_PATCH, cluster_role("r", *tenant_rules), *roles]
    bindings = [DEPLOYER, binding or crb("b", "r", DEVS), *bindings]
    inputs = world(roles, bindings, pods=pods)
    nodes = (
        gpu_node("gpu-1", container_runtime="containerd://1.7.13"),
        gpu_node("cpu-1", container_runtime="cri-o://1.30.4"),
    )
    # Without the GPU Operator: none of its namespaces, none of its privileged pods.
    workloads = inputs.snapshot.workloads if operator else ()
    snapshot = replace(inputs.snapshot, nodes=nodes, workloads=workloads)
    inputs = replace(inputs, snapshot=snapshot)
    found = run_checks(inputs, only=["K8S-003", "K8S-004"])
    return {d.check_id: d for d in found if d.subject_name == "b"}


@pytest.mark.parametrize(
    ("verbs", "said"), [(("get",), "get"), (("create",), "create"), (("*",), "get, create")]
)
def test_nodes_proxy_on_every_node_execs_into_the_gpu_stack_a_total_path(verbs, said):
    found = _drafts(rule(resources=("nodes/proxy",), verbs=verbs))
    assert set(found) == {"K8S-003", "K8S-004"}
    for draft in found.values():
        assert OPERATOR_PATH.format(verbs=said) in draft.evidence["escalation"]


def test_nodes_proxy_names_the_pod_and_account_it_takes_on_a_node_it_names():
    # Only the CPU node: no stack pod there, but a pod running as an account that patches nodes.
    found = _drafts(rule(resources=("nodes/proxy",), verbs=("get",), names=("cpu-1",)))
    assert set(found) == {"K8S-003"}  # the deployer writes nodes, not the GPU configuration
    assert found["K8S-003"].evidence["escalation"] == [
        "may exec through the kubelet API (get on nodes/proxy) into pod tools/deployer-7f on "
        "node cpu-1 as ServiceAccount tools/deployer"
    ]


@pytest.mark.parametrize(
    "tenant_rule",
    [
        # A node that runs nothing of another namespace's (the tenant's own pods are its own).
        rule(resources=("nodes/proxy",), verbs=("get", "create"), names=("gpu-2",)),
        # Reading Node objects runs nothing.
        rule(resources=("nodes",), verbs=("get", "list", "watch")),
        # The kubelet's read-only endpoints have subresources of their own.
        rule(resources=("nodes/metrics", "nodes/stats", "nodes/log", "nodes/spec"), verbs=("*",)),
        # Neither verb the kubelet maps exec to.
        rule(resources=("nodes/proxy",), verbs=("list", "watch")),
    ],
)
def test_what_does_not_exec_through_the_kubelet_stays_quiet(tenant_rule):
    assert _drafts(tenant_rule) == {}


@pytest.mark.parametrize("namespace", ["tools", OPS])
def test_nodes_proxy_granted_by_a_rolebinding_grants_nothing(namespace):
    # Node is cluster-scoped: a RoleBinding never authorises a request on it.
    binding = rb(namespace, "b", "r", DEVS)
    assert _drafts(rule(resources=("nodes/proxy",), verbs=("get", "create")), binding=binding) == {}


def test_an_ended_pod_is_nothing_to_exec_into():
    ended = (
        pod(OPS, "nvidia-device-plugin-x1", node="gpu-1", phase="Succeeded"),
        pod("tools", "deployer-7f", node="cpu-1", service_account="deployer", phase="Failed"),
    )
    assert _drafts(rule(resources=("nodes/proxy",), verbs=("get",)), pods=ended) == {}


# --- root on the node through a privileged pod, with no GPU Operator -----------------------------

GET_PROXY = rule(resources=("nodes/proxy",), verbs=("get",))
# `CAP_SYS_ADMIN` as written: the snapshot keeps the bare name and where the prefix was.
CAP_SYS_ADMIN = container(capabilities_add=("SYS_ADMIN",), capabilities_add_prefixed=(0,))


def _system_pod(node="gpu-1", name="kube-proxy-x1", **fields):
    return pod("kube-system", name, node=node, service_account="kube-proxy", **fields)


def _root_path(node="gpu-1", pod_name="kube-system/kube-proxy-x1", verbs="get"):
    return (
        f"may run as root on node {node} through privileged pod {pod_name} (exec through the "
        f"kubelet API ({verbs} on nodes/proxy)): the kubelet's credentials relabel node {node}"
    )


@pytest.mark.parametrize(
    "root",
    [
        container(privileged=True),
        container(capabilities_add=("SYS_ADMIN",)),
        container(capabilities_add=("NET_ADMIN", "ALL")),
        # A native sidecar runs beside the app containers for the pod's life.
        container(init=True, sidecar=True, privileged=True),
    ],
)
def test_nodes_proxy_to_a_privileged_pod_is_root_and_the_kubelet_relabels_the_node(root):
    pods = (_system_pod(containers=(container("cni"), root)),)
    found = _drafts(GET_PROXY, pods=pods, operator=False)
    assert set(found) == {"K8S-003"}  # the kubelet writes no ConfigMap or ClusterPolicy
    draft = found["K8S-003"]
    assert draft.evidence["escalation"] == [_root_path()]
    assert [o["object"] for o in draft.evidence["objects"]] == [
        "Node gpu-1",
        "Node gpu-1 (status subresource)",
    ]


def test_the_root_path_names_each_node_with_a_privileged_pod_and_only_those():
    pods = (
        _system_pod("gpu-1", "kube-proxy-a", containers=(container(privileged=True),)),
        _system_pod("gpu-1", "kube-proxy-b", containers=(container(privileged=True),)),
        _system_pod("cpu-1", "calico-node-z", containers=(container(privileged=True),)),
    )
    found = _drafts(rule(resources=("nodes/proxy",), verbs=("create",)), pods=pods, operator=False)
    assert found["K8S-003"].evidence["escalation"] == [
        _root_path("cpu-1", "kube-system/calico-node-z", "create"),
        _root_path("gpu-1", "kube-system/kube-proxy-a", "create"),
    ]
    # Limited to one node by name: that node only.
    named = rule(resources=("nodes/proxy",), verbs=("get",), names=("cpu-1",))
    found = _drafts(named, pods=pods, operator=False)
    assert found["K8S-003"].evidence["escalation"] == [
        _root_path("cpu-1", "kube-system/calico-node-z")
    ]
    assert [o["object"] for o in found["K8S-003"].evidence["objects"]] == [
        "Node cpu-1",
        "Node cpu-1 (status subresource)",
    ]


def test_root_on_a_node_is_reached_along_a_chain():
    # The tenant may impersonate an account that holds nodes/proxy.
    proxy_reader = sa("tools", "proxy-reader")
    roles = [cluster_role("proxy", GET_PROXY)]
    bindings = [crb("proxy-readers", "proxy", proxy_reader)]
    impersonate = rule(
        resources=("serviceaccounts",), verbs=("impersonate",), names=("proxy-reader",)
    )
    pods = (_system_pod(containers=(container(privileged=True),)),)
    found = _drafts(impersonate, pods=pods, operator=False, roles=roles, bindings=bindings)
    assert found["K8S-003"].evidence["escalation"] == [
        f"may impersonate ServiceAccount tools/proxy-reader, which {_root_path()}"
    ]


@pytest.mark.parametrize(
    "pods",
    [
        # Nothing privileged on the node.
        (_system_pod(containers=(container(capabilities_add=("NET_ADMIN", "NET_RAW")),)),),
        # The tenant's own pod: exec into it needs no nodes/proxy.
        (pod("alpha", "train-0", containers=(container(privileged=True),)),),
        # Ended: no process to exec into.
        (_system_pod(containers=(container(privileged=True),), phase="Succeeded"),),
        # In its own user namespace SYS_ADMIN is not valid on the host.
        (_system_pod(containers=(container(capabilities_add=("SYS_ADMIN",)),), host_users=False),),
        # containerd ignores a CAP_-prefixed name (gpu-1 runs containerd).
        (_system_pod(containers=(CAP_SYS_ADMIN,)),),
        # A plain init container has finished before the pod runs.
        (_system_pod(containers=(container("setup", init=True, privileged=True), container())),),
    ],
)
def test_no_privileged_pod_to_exec_into_stays_quiet(pods):
    assert _drafts(GET_PROXY, pods=pods, operator=False) == {}


def test_cap_prefixed_sys_admin_counts_where_the_runtime_grants_it():
    # cpu-1 runs CRI-O, which grants CAP_SYS_ADMIN as written.
    pods = (_system_pod("cpu-1", "calico-node-z", containers=(CAP_SYS_ADMIN,)),)
    found = _drafts(GET_PROXY, pods=pods, operator=False)
    assert found["K8S-003"].evidence["escalation"] == [
        _root_path("cpu-1", "kube-system/calico-node-z")
    ]


@pytest.mark.parametrize(
    "tenant_rule",
    [
        # A node with no privileged pod, named.
        rule(resources=("nodes/proxy",), verbs=("get", "create"), names=("cpu-1",)),
        rule(resources=("nodes/metrics", "nodes/stats", "nodes/log"), verbs=("*",)),
    ],
)
def test_what_reaches_no_privileged_pod_through_exec_stays_quiet(tenant_rule):
    pods = (_system_pod(containers=(container(privileged=True),)),)
    assert _drafts(tenant_rule, pods=pods, operator=False) == {}


def test_a_rolebinding_to_nodes_proxy_reaches_no_privileged_pod():
    pods = (_system_pod(containers=(container(privileged=True),)),)
    binding = rb("kube-system", "b", "r", DEVS)
    assert _drafts(GET_PROXY, binding=binding, pods=pods, operator=False) == {}
