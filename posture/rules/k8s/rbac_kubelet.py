"""Running code through the kubelet API: `nodes/proxy`, a path of rbac_paths. PURE.

`nodes/proxy` (Node is cluster-scoped: only a ClusterRoleBinding grants it) reaches the kubelet
API of each node it covers (every node, or those its resourceNames list), through the API
server's node proxy or the kubelet's port directly. The kubelet authorises each request as a
subresource of the node by its path: `/stats` is `nodes/stats`, `/metrics` `nodes/metrics`,
`/logs` `nodes/log`, `/spec` `nodes/spec` (and, from KEP-2862, `/healthz`, `/pods`, `/configz`
their own), everything else `nodes/proxy`: `/exec`, `/run` and `/attach` run commands in any
container of any pod on the node (Kubernetes docs, "Kubelet authentication/authorization" and
"RBAC good practices"). The verb is the HTTP method's: POST is `create`, and GET is `get`, which
is enough for a WebSocket exec upgrade; unlike pods/exec no release asks for more. So `get` or
`create` on `nodes/proxy` runs code as every pod of those nodes: its service account, and in a
GPU Operator namespace the stack's privileged pods with the operator's accounts (a total path,
as running code there by any other way). The read-only subresources run nothing.

Every real node runs privileged pods of its own (kube-proxy, the CNI, a device plugin), with or
without the GPU Operator: exec into a privileged container (or one that adds SYS_ADMIN) is root
on the node, and root holds the kubelet's credentials. Under NodeRestriction the kubelet may still
patch its own Node object: not its taints, nor labels under `kubernetes.io` or `k8s.io` beyond
the kubelet's own (`node-restriction.kubernetes.io/` among them), but `nvidia.com/mig.config`,
the device-plugin config label and a pool label of the platform's own domain (what K8S-003
guards; plugin/pkg/admission/noderestriction). So a node running such a pod is a path to
relabelling that node (kubelet_grant), and nothing more: the kubelet writes no ConfigMap or
ClusterPolicy.
"""

from __future__ import annotations

from inventory.snapshot import ClusterSnapshot, PolicyRule
from inventory.snapshot.pods import TEMPLATE_PHASE, Container, Pod
from posture.rules.k8s.rbac_eval import Grant

PROXY = "nodes/proxy"
PROXY_VERBS = ("get", "create")
# A pod that has ended runs no process to exec into; a template is no pod at all.
ENDED = ("Succeeded", "Failed", TEMPLATE_PHASE)

# Added capabilities that make a container root on its node: SYS_ADMIN (mount, cgroup and
# namespace escapes), and ALL, which includes it.
ROOT_CAPABILITIES = ("SYS_ADMIN", "ALL")
KUBELET = "Node"  # the identity kind of a node's kubelet (rbac_paths.Identity)

# One pod a node runs: (namespace, pod name, service account, whether exec into it is root on
# the node).
PodOnNode = tuple[str, str, str, bool]
NodePods = tuple[tuple[str, tuple[PodOnNode, ...]], ...]


def node_pods(snapshot: ClusterSnapshot) -> NodePods:
    """Each node's pods (those bound to it that have not ended), by node name, sorted."""
    runtimes = {n.name: n.container_runtime or "" for n in snapshot.nodes}
    found: dict[str, list[PodOnNode]] = {}
    for pod in snapshot.pods:
        if pod.node_name and pod.phase not in ENDED:
            root = root_on_node(pod, runtimes.get(pod.node_name, ""))
            found.setdefault(pod.node_name, []).append(
                (pod.namespace, pod.name, pod.service_account or "default", root)
            )
    return tuple((node, tuple(sorted(pods))) for node, pods in sorted(found.items()))


def root_on_node(pod: Pod, runtime: str) -> bool:
    """Whether a command exec'd into one of the pod's running containers is root on the node:
    a privileged container (or a Windows HostProcess one), or one adding SYS_ADMIN or ALL where
    they hold on the host (not in the pod's own user namespace; a CAP_-prefixed name only
    outside containerd, which ignores it). A plain init container has finished by then."""
    running = [c for c in pod.containers if not c.init or c.sidecar or c.ephemeral]
    return any(_root_container(c, runtime, pod.host_users is False) for c in running)


def _root_container(container: Container, runtime: str, own_user_namespace: bool) -> bool:
    if container.privileged or container.host_process:
        return True
    if own_user_namespace:
        return False  # its capabilities are not valid on the host
    ignored = runtime.startswith("containerd://")
    return any(
        name.strip().upper().removeprefix("CAP_") in ROOT_CAPABILITIES
        and not (ignored and i in container.capabilities_add_prefixed)
        for i, name in enumerate(container.capabilities_add)
    )


def proxy_verbs(grant: Grant, node: str) -> tuple[str, ...]:
    """The verbs of PROXY_VERBS the grant allows on `node`'s nodes/proxy (cluster-scoped: a
    RoleBinding's grant allows none)."""
    return tuple(v for v in PROXY_VERBS if grant.allows(v, "", PROXY, None, node))


def proxied_pods(grant: Grant, pods: NodePods) -> list[tuple[str, str, PodOnNode]]:
    """(how, node, pod) for each pod the grant may exec into through the kubelet API; `how`
    names the rule's verbs ("exec through the kubelet API (get on nodes/proxy)")."""
    if not any(r == PROXY or r == "*" or r == "*/proxy" for r in grant.rule.resources):
        return []  # a cheap first look: no rule names it otherwise
    # Without resourceNames the node's name decides nothing: ask once, not once per node.
    every = None if grant.rule.resource_names else proxy_verbs(grant, "")
    found = []
    for node, on_node in pods:
        verbs = proxy_verbs(grant, node) if every is None else every
        if not verbs:
            continue
        how = f"exec through the kubelet API ({', '.join(verbs)} on {PROXY})"
        found += [(how, node, pod) for pod in on_node]
    return found


def root_paths(grant: Grant, pods: NodePods, own: set[str]) -> list[tuple[str, str]]:
    """(how, node) for each node where the grant execs into a privileged pod outside `own` (the
    holder's namespaces): root there, and so the kubelet's credentials. The first such pod
    (sorted) is named."""
    found: dict[str, str] = {}
    for how, node, (namespace, pod, _account, root) in proxied_pods(grant, pods):
        if root and namespace not in own and node not in found:
            found[node] = (
                f"may run as root on node {node} through privileged pod {namespace}/{pod} "
                f"({how}): the kubelet's credentials relabel node {node}"
            )
    return [(how, node) for node, how in found.items()]


def kubelet_grant(node: str) -> Grant:
    """What a node's kubelet may write that K8S-003 guards: its own Node object and its status
    (the Node authorizer and NodeRestriction grant it, not RBAC: no binding names it)."""
    rule = PolicyRule(
        api_groups=("",),
        resources=("nodes", "nodes/status"),
        verbs=("patch", "update"),
        resource_names=(node,),
    )
    return Grant(
        subject=f"User:system:node:{node}",
        binding_kind="",
        binding_namespace=None,
        binding_name="",
        role_kind="",
        role_name="",
        rule=rule,
        scope=None,
    )


def is_proxy_rule(resource: str) -> bool:
    """A rule resource naming nodes/proxy (rbac_paths.may_assume's cheap first look)."""
    return resource == PROXY
