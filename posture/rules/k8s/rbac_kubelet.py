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
"""

from __future__ import annotations

from inventory.snapshot import ClusterSnapshot
from inventory.snapshot.pods import TEMPLATE_PHASE
from posture.rules.k8s.rbac_eval import Grant

PROXY = "nodes/proxy"
PROXY_VERBS = ("get", "create")
# A pod that has ended runs no process to exec into; a template is no pod at all.
ENDED = ("Succeeded", "Failed", TEMPLATE_PHASE)

# One pod a node runs: (namespace, pod name, service account).
PodOnNode = tuple[str, str, str]
NodePods = tuple[tuple[str, tuple[PodOnNode, ...]], ...]


def node_pods(snapshot: ClusterSnapshot) -> NodePods:
    """Each node's pods (those bound to it that have not ended), by node name, sorted."""
    found: dict[str, list[PodOnNode]] = {}
    for pod in snapshot.pods:
        if pod.node_name and pod.phase not in ENDED:
            found.setdefault(pod.node_name, []).append(
                (pod.namespace, pod.name, pod.service_account or "default")
            )
    return tuple((node, tuple(sorted(pods))) for node, pods in sorted(found.items()))


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


def is_proxy_rule(resource: str) -> bool:
    """A rule resource naming nodes/proxy (rbac_paths.may_assume's cheap first look)."""
    return resource == PROXY
