"""Builders for the demo's Pods (and their containers) and the other namespaced or cluster objects:
Namespaces, ConfigMaps, quotas, Services, RBAC and Deployments.

Pure Python: no Django, no network.
"""

from __future__ import annotations

from demo.k8s_base import Ids, Obj, meta, obj

# --- Pods ------------------------------------------------------------------------------------

HARDENED_CONTAINER: Obj = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "readOnlyRootFilesystem": True,
    "runAsNonRoot": True,
    "runAsUser": 10001,
    "seccompProfile": {"type": "RuntimeDefault"},
}
HARDENED_POD: Obj = {
    "fsGroup": 10001,
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}


def container(
    name: str,
    image: str,
    *,
    gpus: dict[str, int] | None = None,
    cpu: str = "",
    memory: str = "",
    security: Obj | None = None,
    env: list[Obj] | None = None,
    mounts: list[Obj] | None = None,
    ports: tuple[int, ...] = (),
    args: list[str] | None = None,
) -> Obj:
    c: Obj = {
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "name": name,
        "resources": {},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }
    quantities = {"cpu": cpu, "memory": memory} if cpu else {}
    # Extended resources print as strings; requests equal limits, as the scheduler demands.
    quantities.update({k: str(v) for k, v in (gpus or {}).items()})
    if quantities:
        c["resources"] = {"limits": dict(quantities), "requests": dict(quantities)}
    optional = {
        "securityContext": security,
        "env": env,
        "volumeMounts": mounts,
        "args": args,
        "ports": [{"containerPort": p, "protocol": "TCP"} for p in ports],
    }
    c.update({k: v for k, v in optional.items() if v})
    return c


def _container_status(ids: Ids, c: Obj, phase: str, started: str) -> Obj:
    image = c["image"]
    image_id = image
    if "@sha256:" not in image:  # the runtime records the digest the tag resolved to
        image_id = f"{image.rpartition(':')[0]}@sha256:{ids.digest(image)}"
    state: Obj = {"running": {"startedAt": started}}
    if phase == "Succeeded":
        done = {"exitCode": 0, "finishedAt": started, "reason": "Completed", "startedAt": started}
        state = {"terminated": done}
    return {
        "containerID": f"containerd://{ids.hex(64)}",
        "image": image,
        "imageID": image_id,
        "lastState": {},
        "name": c["name"],
        "ready": phase == "Running",
        "restartCount": 0,
        "started": phase == "Running",
        "state": state,
    }


def pod(
    ids: Ids,
    name: str,
    namespace: str,
    *,
    node: str | None,
    containers: list[Obj],
    phase: str = "Running",
    owner: tuple[str, str, str] | None = None,
    labels: dict[str, str] | None = None,
    volumes: list[Obj] | None = None,
    tolerations: list[Obj] | None = None,
    node_selector: dict[str, str] | None = None,
    service_account: str = "default",
    pod_security: Obj | None = None,
    host_ipc: bool = False,
    restart_policy: str = "Always",
    priority_class: str | None = None,
) -> Obj:
    # Every pod also gets the tolerations of the DefaultTolerationSeconds admission plugin.
    defaults = [
        {
            "effect": "NoExecute",
            "key": f"node.kubernetes.io/{k}",
            "operator": "Exists",
            "tolerationSeconds": 300,
        }
        for k in ("not-ready", "unreachable")
    ]
    spec: Obj = {
        "containers": containers,
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "priority": 2000001000 if priority_class else 0,
        "restartPolicy": restart_policy,
        "schedulerName": "default-scheduler",
        "securityContext": pod_security or {},
        "serviceAccount": service_account,
        "serviceAccountName": service_account,
        "terminationGracePeriodSeconds": 30,
        "tolerations": [*(tolerations or []), *defaults],
    }
    optional = {
        "nodeName": node,
        "nodeSelector": node_selector,
        "volumes": volumes,
        "hostIPC": host_ipc,
        "priorityClassName": priority_class,
    }
    spec.update({k: v for k, v in optional.items() if v})
    started = ids.ago(1, 24 * 20)
    qos = "Guaranteed" if any(c["resources"] for c in containers) else "BestEffort"
    status: Obj = {"phase": phase, "qosClass": qos}
    if node:
        status.update(hostIP=ids.node_ip(node), podIP=ids.pod_ip(), startTime=started)
        status["containerStatuses"] = [
            _container_status(ids, c, phase, started) for c in containers
        ]
        ready = "True" if phase == "Running" else "False"
        status["conditions"] = [
            {"lastTransitionTime": started, "status": "True", "type": "PodScheduled"},
            {"lastTransitionTime": started, "status": ready, "type": "Ready"},
        ]
    else:  # still waiting for room: the scheduler says why
        message = "0/7 nodes are available: 7 Insufficient nvidia.com/gpu."
        status["conditions"] = [
            {
                "lastTransitionTime": started,
                "message": message,
                "reason": "Unschedulable",
                "status": "False",
                "type": "PodScheduled",
            }
        ]
    m = meta(ids, "Pod", name, namespace, labels=labels, owner=owner, created=started)
    return obj("v1", "Pod", m, spec=spec, status=status)


def toleration(key: str, value: str | None, effect: str) -> Obj:
    if value is None:
        return {"effect": effect, "key": key, "operator": "Exists"}
    return {"effect": effect, "key": key, "operator": "Equal", "value": value}


def host_path(name: str, path: str) -> Obj:
    return {"hostPath": {"path": path, "type": ""}, "name": name}


# --- Other objects ---------------------------------------------------------------------------


def namespace(ids: Ids, name: str, labels: dict[str, str] | None = None) -> Obj:
    m = meta(ids, "Namespace", name, labels={"kubernetes.io/metadata.name": name, **(labels or {})})
    spec, status = {"finalizers": ["kubernetes"]}, {"phase": "Active"}
    return obj("v1", "Namespace", m, spec=spec, status=status)


def configmap(ids: Ids, name: str, ns: str, data: dict[str, str]) -> Obj:
    return obj("v1", "ConfigMap", meta(ids, "ConfigMap", name, ns), data=data)


def resource_quota(ids: Ids, ns: str, hard: dict[str, str], used: dict[str, str]) -> Obj:
    m = meta(ids, "ResourceQuota", "gpu-quota", ns)
    return obj("v1", "ResourceQuota", m, spec={"hard": hard}, status={"hard": hard, "used": used})


def service(ids: Ids, ns: str, name: str, app: str, port: int, node_port: int = 0) -> Obj:
    ip = f"10.96.{ids.pod_ip().split('.', 2)[2]}"
    ports: Obj = {"port": port, "protocol": "TCP", "targetPort": port}
    spec: Obj = {
        "clusterIP": ip,
        "clusterIPs": [ip],
        "ports": [ports],
        "selector": {"app": app},
        "sessionAffinity": "None",
        "type": "NodePort" if node_port else "ClusterIP",
    }
    if node_port:
        ports["nodePort"] = node_port
        spec["externalTrafficPolicy"] = "Cluster"
    m = meta(ids, "Service", name, ns)
    return obj("v1", "Service", m, spec=spec, status={"loadBalancer": {}})


def rule(groups: list[str], resources: list[str], verbs: list[str]) -> Obj:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def role(ids: Ids, name: str, rules: list[Obj], ns: str | None = None) -> Obj:
    kind = "Role" if ns else "ClusterRole"
    return obj("rbac.authorization.k8s.io/v1", kind, meta(ids, kind, name, ns), rules=rules)


def binding(ids: Ids, name: str, cluster_role: str, subject: str, ns: str | None = None) -> Obj:
    """subject: "Group:NAME", "User:NAME" or "ServiceAccount:NAMESPACE/NAME"."""
    kind = "RoleBinding" if ns else "ClusterRoleBinding"
    skind, sname = subject.split(":", 1)
    sub = {"apiGroup": "rbac.authorization.k8s.io", "kind": skind, "name": sname}
    if skind == "ServiceAccount":
        sub = {"kind": skind, "name": sname.split("/")[1], "namespace": sname.split("/")[0]}
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role}
    m = meta(ids, kind, name, ns)
    return obj("rbac.authorization.k8s.io/v1", kind, m, roleRef=ref, subjects=[sub])


def system_roles(ids: Ids) -> list[Obj]:
    """kube-system's Role and RoleBinding every cluster has (kubeadm, EKS, GKE and AKS alike):
    the reader of the extension-apiserver-authentication ConfigMap, bound to the scheduler and
    the controller manager. An export holding no Role is one that did not export them."""
    name, ns = "extension-apiserver-authentication-reader", "kube-system"
    only = {"resourceNames": ["extension-apiserver-authentication"]}
    reader = role(ids, name, [{**rule([""], ["configmaps"], ["get", "list", "watch"]), **only}], ns)
    users = ("system:kube-controller-manager", "system:kube-scheduler")
    subjects = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": u} for u in users]
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}
    m = meta(ids, "RoleBinding", f"system::{name}", ns)
    bound = obj("rbac.authorization.k8s.io/v1", "RoleBinding", m, roleRef=ref, subjects=subjects)
    return [reader, bound]


def deployment(ids: Ids, name: str, ns: str, image: str) -> Obj:
    template = {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [container(name, image)]},
    }
    spec = {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": template}
    status = {"availableReplicas": 1, "readyReplicas": 1, "replicas": 1, "updatedReplicas": 1}
    m = meta(ids, "Deployment", name, ns, labels={"app": name})
    return obj("apps/v1", "Deployment", m, spec=spec, status=status)


def controller(
    ids: Ids,
    kind: str,
    name: str,
    ns: str,
    *,
    labels: dict[str, str],
    owner: tuple[str, str, str] | None = None,
    replicas: int = 1,
) -> Obj:
    """A ReplicaSet, Job or CronJob between a tenant's pods and its workload, as the API lists
    it (the template is the pods', so it is left out: only the owner chain is read)."""
    api = "apps/v1" if kind == "ReplicaSet" else "batch/v1"
    spec: Obj = {
        "ReplicaSet": {"replicas": replicas, "selector": {"matchLabels": labels}},
        "Job": {"completions": replicas, "parallelism": replicas, "backoffLimit": 6},
        "CronJob": {"schedule": "0 2 * * *", "concurrencyPolicy": "Forbid"},
    }[kind]
    m = meta(ids, kind, name, ns, labels=labels, owner=owner)
    return obj(api, kind, m, spec=spec, status={})


def kubectl_list(items: list[Obj]) -> Obj:
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
