"""What runs code in a namespace, and what mints a service account's credentials there: the
tables behind the assumed-identity paths of rbac_escalation. PURE.

Running code:
- core: creating pods, or the controllers that make them, or changing those controllers;
  `create` on `pods/exec` and `pods/attach`; `update`/`patch` on `pods/ephemeralcontainers`;
- `get` on `pods/exec` and `pods/attach`: the API server authorises a WebSocket upgrade (an
  HTTP GET) as `get`, so before Kubernetes 1.35 `get` alone opens an exec session. From 1.35
  the `AuthorizePodWebsocketUpgradeCreatePermission` gate (beta, on by default; KEP-4006,
  kubernetes/kubernetes#134577) also asks for `create`. `pods/portforward` reaches a pod's
  ports, not its identity: it is not counted;
- custom resources whose controller makes pods in the resource's namespace from a pod
  template or a `serviceAccountName` the author writes: Argo Workflows (`spec.serviceAccountName`
  of a Workflow, a CronWorkflow's workflow spec), Tekton (a TaskRun's `serviceAccountName`, a
  PipelineRun's `taskRunTemplate.serviceAccountName`), the Spark operator
  (`spec.driver.serviceAccount`), Kubeflow training jobs (replica pod templates) and TrainJob
  (`podTemplateOverrides`), KubeRay (head and worker pod templates), JobSet (job templates) and
  LeaderWorkerSet (leader and worker templates). A WorkflowTemplate alone runs nothing (running
  it creates a Workflow, which needs `create` on workflows). A right on such a resource counts
  whether or not the snapshot shows its controller running (the role suggests it is installed;
  it may run elsewhere or under a mirrored image); the path says when it was not seen.

Minting credentials: `create` on `serviceaccounts/token`; or `create` on `secrets` with any way
to read a Secret back (`get`, `list` or `watch`): a `kubernetes.io/service-account-token` Secret
annotated `kubernetes.io/service-account.name` is filled with a long-lived token by the token
controller, for any service account of its namespace (Kubernetes docs, "Manually create a
long-lived API token for a ServiceAccount"). Reading Secrets without creating them reaches only
the token Secrets that already exist; the snapshot never reads Secrets, and none are made
without being asked for since Kubernetes 1.24, so reading alone is not counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from inventory.rbac import ANY, SA_GROUP_PREFIX
from inventory.snapshot import ClusterSnapshot
from posture.rules.k8s.rbac_eval import Grant
from posture.rules.k8s.rbac_kubelet import (
    KUBELET,
    NodePods,
    is_proxy_rule,
    proxied_pods,
    root_paths,
)

IMPERSONATED = {"User": "users", "Group": "groups", "ServiceAccount": "serviceaccounts"}
ANY_SA = "*"  # an identity key's name: every service account of its namespace
# (kind, namespace or "", name): "User", "Group", "ServiceAccount", or a node's kubelet (KUBELET,
# "", node name), which holds what rbac_kubelet.kubelet_grant says, not what a binding does.
Identity = tuple[str, str, str]
WRITES = ("create", "update", "patch")
RUN = "run pods"
# (verbs, API group, resource, what the path says the holder may do).
CORE_RUNS_CODE: tuple[tuple[tuple[str, ...], str, str, str], ...] = (
    (("create",), "", "pods", RUN),
    (("create",), "", "pods/exec", RUN),
    (("create",), "", "pods/attach", RUN),
    (("update", "patch"), "", "pods/ephemeralcontainers", RUN),
    (WRITES, "", "replicationcontrollers", RUN),
    *(
        (WRITES, "apps", r, RUN)
        for r in ("deployments", "daemonsets", "statefulsets", "replicasets")
    ),
    (("create",), "batch", "jobs", RUN),
    (WRITES, "batch", "cronjobs", RUN),
)
# Custom resources whose controllers make pods under a service account their author names.
CUSTOM_RUNS_CODE: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("create",), "argoproj.io", "workflows"),
    (WRITES, "argoproj.io", "cronworkflows"),
    (("create",), "tekton.dev", "taskruns"),
    (("create",), "tekton.dev", "pipelineruns"),
    (("create",), "sparkoperator.k8s.io", "sparkapplications"),
    (WRITES, "sparkoperator.k8s.io", "scheduledsparkapplications"),
    *(
        (("create",), "kubeflow.org", r)
        for r in ("pytorchjobs", "tfjobs", "mpijobs", "xgboostjobs", "paddlejobs", "jaxjobs")
    ),
    (("create",), "trainer.kubeflow.org", "trainjobs"),
    (("create",), "ray.io", "rayclusters"),
    (("create",), "ray.io", "rayjobs"),
    (("create",), "ray.io", "rayservices"),
    (("create",), "jobset.x-k8s.io", "jobsets"),
    (WRITES, "leaderworkerset.x-k8s.io", "leaderworkersets"),
)
RUNS_CODE = (
    *CORE_RUNS_CODE,
    *((verbs, group, r, f"run pods through {r}.{group}") for verbs, group, r in CUSTOM_RUNS_CODE),
)
# What each group's controller image is called (as its project publishes it): a path through a
# custom resource whose controller no workload of the snapshot runs says so.
CONTROLLER_IMAGES = {
    "argoproj.io": "workflow-controller",
    "tekton.dev": "tektoncd/pipeline",
    "sparkoperator.k8s.io": "spark-operator",
    "kubeflow.org": "training-operator",
    "trainer.kubeflow.org": "trainer-controller-manager",
    "ray.io": "kuberay",
    "jobset.x-k8s.io": "/jobset",
    "leaderworkerset.x-k8s.io": "/lws",
}
UNSEEN_CONTROLLER = " (its controller was not seen running)"
EXEC_BY_GET = (
    (("get",), "", "pods/exec", "exec into pods with get on pods/exec"),
    (("get",), "", "pods/attach", "attach to pods with get on pods/attach"),
)
WEBSOCKET_FIX = (1, 35)  # the first release that asks for `create` on a WebSocket exec
SKEW = 3  # a kubelet may be up to three minor releases older than the API server, never newer
SECRET_READS = ("get", "list", "watch")

_VERSION = re.compile(r"v?(\d+)\.(\d+)")


def _minor(version: str | None) -> tuple[int, int] | None:
    found = _VERSION.match(version or "")
    return (int(found[1]), int(found[2])) if found else None


def exec_by_get(snapshot: ClusterSnapshot) -> str | None:
    """The condition a `get pods/exec` path states, or None when the API server asks for
    `create` (it runs 1.35 or later: some kubelet does). The snapshot holds kubelet versions
    only; the API server is at least the newest and at most three releases past the oldest."""
    versions = sorted(v for n in snapshot.nodes if (v := _minor(n.kubelet_version)) is not None)
    if versions and versions[-1] >= WEBSOCKET_FIX:
        return None
    if versions and (versions[0][0], versions[0][1] + SKEW) < WEBSOCKET_FIX:
        return "(WebSocket, before Kubernetes 1.35)"
    known = (
        f"the API server's version is not read, its nodes run kubelet {versions[-1][0]}."
        f"{versions[-1][1]}"
        if versions
        else "the cluster's version is unknown"
    )
    return f"(WebSocket, before Kubernetes 1.35; {known})"


def runs_code_table(snapshot: ClusterSnapshot) -> tuple[tuple[tuple[str, ...], str, str, str], ...]:
    """RUNS_CODE, and `get` on exec/attach where the cluster's version lets it open a session."""
    images = [i.lower() for w in snapshot.workloads for i in w.images.values()]
    unseen = {g for g, name in CONTROLLER_IMAGES.items() if not any(name in i for i in images)}
    runs = tuple(
        (verbs, group, r, f"{does}{UNSEEN_CONTROLLER}" if group in unseen else does)
        for verbs, group, r, does in RUNS_CODE
    )
    via = exec_by_get(snapshot)
    if via is None:
        return runs
    return (
        *runs,
        *((verbs, group, r, f"{does} {via}") for verbs, group, r, does in EXEC_BY_GET),
    )


@dataclass(frozen=True)
class World:
    """What every assumption path asks about the cluster, once per evaluation."""

    runs: tuple[tuple[tuple[str, ...], str, str, str], ...]  # rbac_paths.runs_code_table
    namespaces: tuple[str, ...]  # where identities live, and the operator's
    operator_ns: frozenset[str]
    node_pods: NodePods = ()  # rbac_kubelet.node_pods: what nodes/proxy execs into


def names(grant: Grant) -> tuple[str | None, ...]:
    """Object names to ask about: any (None) or each name the rule is limited to."""
    return grant.rule.resource_names or (None,)


def steps(
    grant: Grant,
    grants: list[Grant],
    candidates: Iterable[Identity],
    world: World,
    own: set[str],
    itself: set[Identity],
) -> Iterator[tuple[str, Identity | None]]:
    """(how, identity) for each identity of `candidates` the grant lets its holder take
    (`grants`: all the holder's, for a second rule a path needs); identity None: a total path.
    `own`: namespaces whose service accounts are the holder's already; `itself`: its own
    identities."""
    via = _runs_code(grant, grant.scope, world.runs)
    runs_in: set[str] = set()
    if via is not None:
        runs_in = (set(world.namespaces) if grant.scope is None else {grant.scope}) - own
    for ns in sorted(runs_in & world.operator_ns):
        yield (
            f"may {via} in GPU Operator namespace {ns} (privileged, as its accounts)",
            None,
        )
    kubelet = _kubelet_paths(grant, world, own)
    for ns in sorted(kubelet.keys() & world.operator_ns):
        yield (
            f"may {kubelet[ns][None]} in GPU Operator namespace {ns} (privileged, as its accounts)",
            None,
        )
    # Root on a node through a privileged pod: its kubelet's identity (rbac_escalation).
    for how, node in root_paths(grant, world.node_pods, own):
        yield how, (KUBELET, "", node)
    verbs, resources = set(grant.rule.verbs), set(grant.rule.resources)
    impersonates = bool(verbs & {ANY, "impersonate"})
    tokens = bool(verbs & {ANY, "create"} and resources & {ANY, "*/token", "serviceaccounts/token"})
    mints = _token_secrets(grant, grants, world) - own
    if not (runs_in or kubelet or impersonates or tokens or mints):
        return
    for identity in candidates:
        if identity in itself:
            continue
        kind, namespace, name = identity
        if kind == "ServiceAccount" and namespace in runs_in:
            verb = f"may {via} in namespace {namespace} as"
        elif kind == "ServiceAccount" and (pod := _kubelet_path(kubelet, namespace, name)):
            verb = f"may {pod} as"
        elif impersonates and _impersonates(grant, identity):
            verb = "may impersonate"
        elif tokens and name != ANY_SA and _token_for(grant, identity):
            verb = "may create a token for"
        elif kind == "ServiceAccount" and namespace in mints:
            # Any account's name will do: the group's rights come with each.
            verb = "may create a service-account token Secret (and read it) for"
        else:
            continue
        yield f"{verb} {label(identity)}", identity


def _kubelet_paths(grant: Grant, world: World, own: set[str]) -> dict[str, dict[str | None, str]]:
    """The pods the grant execs into through the kubelet API (rbac_kubelet), outside the
    holder's own namespaces: by namespace, by service account, the first pod's path ("exec
    through the kubelet API (get on nodes/proxy) into pod NS/POD on node N"); under None, the
    namespace's first, which speaks for the namespace's service-account group."""
    found: dict[str, dict[str | None, str]] = {}
    for how, node, (namespace, pod, account, _root) in proxied_pods(grant, world.node_pods):
        if namespace in own:
            continue
        path = f"{how} into pod {namespace}/{pod} on node {node}"
        by_account = found.setdefault(namespace, {None: path})
        by_account.setdefault(account, path)
    return found


def _kubelet_path(kubelet: dict[str, dict[str | None, str]], namespace: str, name: str) -> str:
    """The kubelet path to an account (a pod running as it), or to the namespace's group
    (any pod there); "" for none."""
    in_namespace = kubelet.get(namespace, {})
    return in_namespace.get(None if name == ANY_SA else name, "")


def _token_secrets(grant: Grant, grants: list[Grant], world: World) -> set[str]:
    """Namespaces where the grant creates Secrets and some grant of the holder reads them back:
    a legacy token Secret there is filled with a token for the account it names."""
    if not (grant.rule.verbs and _allows_any(grant, ("create",), "secrets", grant.scope, (None,))):
        return set()
    where = set(world.namespaces) if grant.scope is None else {grant.scope}
    readers = [g for g in grants if any(v in (ANY, *SECRET_READS) for v in g.rule.verbs)]
    found = set()
    for ns in where:
        # The author picks the Secret's name: a reader limited to names may read its own.
        if any(_allows_any(r, SECRET_READS, "secrets", ns, names(r)) for r in readers):
            found.add(ns)
    return found


def _allows_any(
    grant: Grant,
    verbs: Iterable[str],
    resource: str,
    namespace: str | None,
    names: Iterable[str | None],
) -> bool:
    return any(grant.allows(v, "", resource, namespace, n) for v in verbs for n in names)


# Resources (and their subresources) some assumption path asks about.
ASSUMING = {
    *(r.partition("/")[0] for _, _, r, _ in RUNS_CODE),
    *IMPERSONATED.values(),
    "secrets",
}


def may_assume(grant: Grant) -> bool:
    """A cheap first look: the rule names a verb and a resource some path needs."""
    rule = grant.rule
    return any(
        v in (ANY, "create", "update", "patch", "impersonate", "get") for v in rule.verbs
    ) and any(
        r == ANY or r.startswith("*/") or r.partition("/")[0] in ASSUMING or is_proxy_rule(r)
        for r in rule.resources
    )


def _runs_code(
    grant: Grant, namespace: str | None, runs: tuple[tuple[tuple[str, ...], str, str, str], ...]
) -> str | None:
    """How the grant runs code in `namespace` ("run pods", ...), or None."""
    for verbs, group, resource, via in runs:
        for verb in verbs:
            if any(grant.allows(verb, group, resource, namespace, n) for n in names(grant)):
                return via
    return None


def _token_for(grant: Grant, identity: Identity) -> bool:
    kind, namespace, name = identity
    return kind == "ServiceAccount" and grant.allows(
        "create", "", "serviceaccounts/token", namespace, name
    )


def _impersonates(grant: Grant, identity: Identity) -> bool:
    kind, namespace, name = identity
    resource = IMPERSONATED.get(kind)
    if resource is None:
        return False
    if kind != "ServiceAccount":
        return grant.allows("impersonate", "", resource, None, name)
    asked: Iterable[str | None] = names(grant) if name == ANY_SA else (name,)
    return any(grant.allows("impersonate", "", resource, namespace, n) for n in asked)


def label(identity: Identity) -> str:
    kind, namespace, name = identity
    if kind == "ServiceAccount":
        if name == ANY_SA:
            return f"Group {SA_GROUP_PREFIX}{namespace}"
        return f"ServiceAccount {namespace}/{name}"
    return f"{kind} {name}"
