"""Builders for the raw Kubernetes objects of the demo world.

Each builder returns a dict shaped as `kubectl get -o json` prints the object, so the demo
snapshots go through exactly the parser a real cluster's snapshot goes through. Pure Python: no
Django, no network. Everything random comes from `Ids`, seeded per cluster, so a seed always
gives the same objects.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

Obj = dict[str, Any]

# The moment the demo snapshot was "taken"; fixed so the output never depends on the clock.
SNAPSHOT_AT = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)

GPU_OPERATOR_NS = "gpu-operator"
NVCR = "nvcr.io/nvidia"
GPU_OPERATOR = f"{NVCR}/gpu-operator:v24.9.2"
VALIDATOR = f"{NVCR}/cloud-native/gpu-operator-validator:v24.9.2"
DEVICE_PLUGIN = f"{NVCR}/k8s-device-plugin:v0.17.0"  # since v0.15 also the GFD image
DEVICE_PLUGIN_OLD = f"{NVCR}/k8s-device-plugin:v0.14.5"
GFD_OLD = f"{NVCR}/gpu-feature-discovery:v0.8.2"  # the standalone GFD paired with plugin v0.14
TOOLKIT = f"{NVCR}/k8s/container-toolkit:v1.17.4-ubuntu20.04"
TOOLKIT_OLD = f"{NVCR}/k8s/container-toolkit:v1.16.1-ubuntu20.04"
DCGM_EXPORTER = f"{NVCR}/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04"
MIG_MANAGER = f"{NVCR}/cloud-native/k8s-mig-manager:v0.10.0-ubuntu20.04"
NFD = "registry.k8s.io/nfd/node-feature-discovery:v0.16.6"

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # what Kubernetes uses in generated names
_CUDA_OF_BRANCH = {"535": "12.2", "550": "12.4", "570": "12.8"}
_CLUSTER_SCOPED = {"ClusterPolicy", "ClusterRole", "ClusterRoleBinding", "Namespace", "Node"}


def driver_image(version: str) -> str:
    return f"{NVCR}/driver:{version}-ubuntu22.04"


class Ids:
    """Seeded source of uids, digests, generated name suffixes, IPs and timestamps."""

    def __init__(self, seed: int, cluster: str) -> None:
        self.seed, self.cluster = seed, cluster
        self._rng = random.Random(f"{seed}:{cluster}")
        self._resource_version = 100_000 + self._rng.randrange(900_000)
        self._node_ips: dict[str, str] = {}

    def uid(self, key: str) -> str:
        # Derived from the object's identity, so owner references are computed, not looked up.
        digest = hashlib.sha256(f"{self.seed}:{self.cluster}:{key}".encode()).digest()
        return str(uuid.UUID(bytes=digest[:16], version=4))

    def digest(self, image: str) -> str:
        # The same image has the same digest in every cluster, as a registry would answer.
        return hashlib.sha256(f"{self.seed}:image:{image}".encode()).hexdigest()

    def pinned(self, image: str) -> str:
        """`repo:tag` -> `repo@sha256:...`: the tag dropped, as an admission policy would."""
        repo, _, _tag = image.rpartition(":")
        return f"{repo}@sha256:{self.digest(image)}"

    def suffix(self, length: int = 5, alphabet: str = _SUFFIX_ALPHABET) -> str:
        return "".join(self._rng.choice(alphabet) for _ in range(length))

    def hex(self, length: int = 10) -> str:
        return self.suffix(length, "0123456789abcdef")

    def resource_version(self) -> str:
        self._resource_version += self._rng.randrange(1, 400)
        return str(self._resource_version)

    def ago(self, low_hours: float, high_hours: float) -> str:
        moment = SNAPSHOT_AT - timedelta(hours=self._rng.uniform(low_hours, high_hours))
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    def node_ip(self, node_name: str) -> str:
        net = 20 if self.cluster.startswith("prod") else 40
        return self._node_ips.setdefault(node_name, f"10.{net}.0.{11 + len(self._node_ips)}")

    def pod_ip(self) -> str:
        return f"10.244.{self._rng.randrange(0, 64)}.{self._rng.randrange(2, 254)}"


def meta(
    ids: Ids,
    kind: str,
    name: str,
    namespace: str | None = None,
    *,
    labels: dict[str, str] | None = None,
    owner: tuple[str, str, str] | None = None,  # (apiVersion, kind, name)
    age_hours: tuple[float, float] = (24.0, 24.0 * 300),
    created: str | None = None,
) -> Obj:
    m: Obj = {"creationTimestamp": created or ids.ago(*age_hours), "name": name}
    m["resourceVersion"] = ids.resource_version()
    m["uid"] = ids.uid(f"{kind}/{namespace or ''}/{name}")
    if namespace:
        m["namespace"] = namespace
    if labels:
        m["labels"] = dict(labels)
    if owner:
        api, okind, oname = owner
        key = f"{okind}/{'' if okind in _CLUSTER_SCOPED else namespace}/{oname}"
        m["ownerReferences"] = [
            {"apiVersion": api, "blockOwnerDeletion": True, "controller": True, "kind": okind,
             "name": oname, "uid": ids.uid(key)}
        ]  # fmt: skip
    return m


def obj(api: str, kind: str, metadata: Obj, **rest: Any) -> Obj:
    return {"apiVersion": api, "kind": kind, "metadata": metadata, **rest}


# --- Nodes -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Host:
    os_image: str
    kernel: str
    runtime: str
    kubelet: str


@dataclass(frozen=True)
class GpuModel:
    product: str  # the GFD nvidia.com/gpu.product label
    memory_mib: int
    family: str
    compute: tuple[int, int]
    mig_capable: bool
    machine: str  # the server, as GFD's nvidia.com/gpu.machine names it
    cpu: int
    memory_gib: int


@dataclass(frozen=True)
class NodeSpec:
    name: str
    pool: str
    model: GpuModel | None = None  # None: a CPU-only node
    count: int = 0  # physical GPUs
    sharing: str = "none"  # GFD nvidia.com/gpu.sharing-strategy: none, time-slicing, mps
    replicas: int = 1
    plugin_config: str | None = None  # a key of the time-slicing-config ConfigMap
    mig_config: str | None = None  # the mig-parted profile; MIG-capable GPUs only
    mig_layout: dict[str, int] = field(default_factory=dict)  # MIG resources per GPU
    taints: tuple[tuple[str, str | None, str], ...] = ()  # (key, value, effect)
    driver: str = "550.90.07"
    driver_labels: str = "full"  # "full" (GFD >= 0.15), "legacy" (GFD 0.8), "none"
    toolkit_image: str = TOOLKIT
    legacy_plugin: bool = False  # a standalone plugin v0.14.5 + GFD v0.8.2, not the operator's
    host: Host | None = None  # overrides the cluster's usual host


def _driver_labels(n: NodeSpec) -> dict[str, str]:
    major, minor, rev = n.driver.split(".")
    cuda_major, cuda_minor = _CUDA_OF_BRANCH.get(major, "12.4").split(".")
    if n.driver_labels == "none":
        return {}
    if n.driver_labels == "legacy":
        p = "nvidia.com/cuda"
        return {f"{p}.driver.major": major, f"{p}.driver.minor": minor, f"{p}.driver.rev": rev,
                f"{p}.runtime.major": cuda_major, f"{p}.runtime.minor": cuda_minor}  # fmt: skip
    p = "nvidia.com/cuda.driver-version"
    r = "nvidia.com/cuda.runtime-version"
    return {f"{p}.full": n.driver, f"{p}.major": major, f"{p}.minor": minor, f"{p}.revision": rev,
            f"{r}.full": f"{cuda_major}.{cuda_minor}", f"{r}.major": cuda_major,
            f"{r}.minor": cuda_minor}  # fmt: skip


def gfd_labels(n: NodeSpec, mig_strategy: str) -> dict[str, str]:
    """The labels GPU Feature Discovery (and the GPU Operator) put on a GPU node."""
    assert n.model is not None
    m, g = n.model, "nvidia.com/gpu"
    labels = {
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "nvidia.com/gfd.timestamp": str(int(SNAPSHOT_AT.timestamp()) - 3600),
        f"{g}.compute.major": str(m.compute[0]),
        f"{g}.compute.minor": str(m.compute[1]),
        f"{g}.count": str(n.count),
        f"{g}.family": m.family,
        f"{g}.machine": m.machine,
        f"{g}.memory": str(m.memory_mib),
        f"{g}.mode": "compute",
        f"{g}.present": "true",
        # With time-slicing or MPS (renameByDefault false) GFD appends -SHARED to the product.
        f"{g}.product": m.product + ("-SHARED" if n.sharing != "none" else ""),
        f"{g}.replicas": str(n.replicas),
        "nvidia.com/mig.capable": str(m.mig_capable).lower(),
        "nvidia.com/mig.strategy": mig_strategy,
        "nvidia.com/mps.capable": str(n.sharing == "mps").lower(),
        **_driver_labels(n),
    }
    if n.legacy_plugin:  # the operator is told to keep its own plugin and GFD off this node
        labels[f"{g}.deploy.device-plugin"] = "false"
        labels[f"{g}.deploy.gpu-feature-discovery"] = "false"
    else:  # the sharing-strategy label arrived with GFD in plugin v0.15
        labels[f"{g}.sharing-strategy"] = n.sharing
        for part in (
            "container-toolkit",
            "dcgm-exporter",
            "device-plugin",
            "gpu-feature-discovery",
        ):
            labels[f"{g}.deploy.{part}"] = "true"
    if n.plugin_config:
        labels["nvidia.com/device-plugin.config"] = n.plugin_config
    if m.mig_capable:
        labels[f"{g}.deploy.mig-manager"] = "true"
        labels["nvidia.com/mig.config"] = n.mig_config or "all-disabled"
        labels["nvidia.com/mig.config.state"] = "success"
        for resource, per_gpu in n.mig_layout.items():
            profile = resource.removeprefix("nvidia.com/mig-")
            labels[f"nvidia.com/mig-{profile}.count"] = str(per_gpu * n.count)
            labels[f"nvidia.com/mig-{profile}.slices.gi"] = profile.split("g.")[0]
    return labels


def gpu_capacity(n: NodeSpec) -> dict[str, str]:
    if n.mig_layout:  # mixed strategy: the whole GPUs disappear behind their MIG resources
        return {"nvidia.com/gpu": "0", **{k: str(v * n.count) for k, v in n.mig_layout.items()}}
    return {"nvidia.com/gpu": str(n.count * n.replicas)}  # time-slicing and MPS multiply


def node(ids: Ids, n: NodeSpec, host: Host, *, mig_strategy: str, zone: str | None) -> Obj:
    cpu, mem_gib = (n.model.cpu, n.model.memory_gib) if n.model else (64, 256)
    host = n.host or host
    labels = {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
              "gpuposture.io/pool": n.pool, "kubernetes.io/arch": "amd64",
              "kubernetes.io/hostname": n.name, "kubernetes.io/os": "linux"}  # fmt: skip
    if zone:
        labels["topology.kubernetes.io/region"] = zone[:-1]
        labels["topology.kubernetes.io/zone"] = zone
    capacity = {"cpu": str(cpu), "ephemeral-storage": "1869170768Ki", "hugepages-1Gi": "0",
                "hugepages-2Mi": "0", "memory": f"{mem_gib * 1024**2}Ki",
                "pods": "110"}  # fmt: skip
    if n.model:
        labels.update(gfd_labels(n, mig_strategy))
        capacity.update(gpu_capacity(n))
    # The kubelet reserves some CPU and memory for the system; GPUs are never reserved.
    allocatable = {**capacity, "cpu": f"{cpu * 1000 - 500}m",
                   "memory": f"{(mem_gib - 2) * 1024**2}Ki"}  # fmt: skip
    ip = ids.node_ip(n.name)
    spec: Obj = {"podCIDR": f"10.244.{ip.rsplit('.', 1)[1]}.0/24"}
    spec["podCIDRs"] = [spec["podCIDR"]]
    if zone:
        spec["providerID"] = f"nimbus://{zone}/{ids.uid('vm/' + n.name)}"  # the GPU cloud's VM id
    if n.taints:
        spec["taints"] = [
            {k: v for k, v in (("effect", effect), ("key", key), ("value", value)) if v}
            for key, value, effect in n.taints
        ]
    since = ids.ago(24, 24 * 30)
    conditions = [{"lastTransitionTime": since, "reason": f"Kubelet{reason}", "status": status,
                   "type": kind}
                  for kind, status, reason in (("MemoryPressure", "False", "HasSufficientMemory"),
                                               ("DiskPressure", "False", "HasNoDiskPressure"),
                                               ("Ready", "True", "Ready"))]  # fmt: skip
    node_info = {
        "architecture": "amd64", "bootID": ids.uid("boot/" + n.name),
        "containerRuntimeVersion": host.runtime, "kernelVersion": host.kernel,
        "kubeProxyVersion": host.kubelet, "kubeletVersion": host.kubelet,
        "machineID": ids.uid("machine/" + n.name).replace("-", ""), "operatingSystem": "linux",
        "osImage": host.os_image, "systemUUID": ids.uid("system/" + n.name).upper(),
    }  # fmt: skip
    status = {
        "addresses": [{"address": ip, "type": "InternalIP"},
                      {"address": n.name, "type": "Hostname"}],
        "allocatable": allocatable, "capacity": capacity, "conditions": conditions,
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}, "nodeInfo": node_info,
    }  # fmt: skip
    m = meta(ids, "Node", n.name, labels=labels, age_hours=(24 * 30, 24 * 500))
    return obj("v1", "Node", m, spec=spec, status=status)


# --- Pods ------------------------------------------------------------------------------------

HARDENED_CONTAINER: Obj = {
    "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
    "readOnlyRootFilesystem": True, "runAsNonRoot": True, "runAsUser": 10001,
    "seccompProfile": {"type": "RuntimeDefault"},
}  # fmt: skip
HARDENED_POD: Obj = {"fsGroup": 10001, "runAsNonRoot": True,
                     "seccompProfile": {"type": "RuntimeDefault"}}  # fmt: skip


def container(name: str, image: str, *, gpus: dict[str, int] | None = None, cpu: str = "",
              memory: str = "", security: Obj | None = None, env: list[Obj] | None = None,
              mounts: list[Obj] | None = None, ports: tuple[int, ...] = (),
              args: list[str] | None = None) -> Obj:  # fmt: skip
    c: Obj = {"image": image, "imagePullPolicy": "IfNotPresent", "name": name, "resources": {},
              "terminationMessagePath": "/dev/termination-log",
              "terminationMessagePolicy": "File"}  # fmt: skip
    quantities = {"cpu": cpu, "memory": memory} if cpu else {}
    # Extended resources print as strings; requests equal limits, as the scheduler demands.
    quantities.update({k: str(v) for k, v in (gpus or {}).items()})
    if quantities:
        c["resources"] = {"limits": dict(quantities), "requests": dict(quantities)}
    optional = {"securityContext": security, "env": env, "volumeMounts": mounts, "args": args,
                "ports": [{"containerPort": p, "protocol": "TCP"} for p in ports]}  # fmt: skip
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
    return {"containerID": f"containerd://{ids.hex(64)}", "image": image, "imageID": image_id,
            "lastState": {}, "name": c["name"], "ready": phase == "Running", "restartCount": 0,
            "started": phase == "Running", "state": state}  # fmt: skip


def pod(ids: Ids, name: str, namespace: str, *, node: str | None, containers: list[Obj],
        phase: str = "Running", owner: tuple[str, str, str] | None = None,
        labels: dict[str, str] | None = None, volumes: list[Obj] | None = None,
        tolerations: list[Obj] | None = None, node_selector: dict[str, str] | None = None,
        service_account: str = "default", pod_security: Obj | None = None,
        host_ipc: bool = False, restart_policy: str = "Always",
        priority_class: str | None = None) -> Obj:  # fmt: skip
    # Every pod also gets the tolerations of the DefaultTolerationSeconds admission plugin.
    defaults = [{"effect": "NoExecute", "key": f"node.kubernetes.io/{k}", "operator": "Exists",
                 "tolerationSeconds": 300} for k in ("not-ready", "unreachable")]  # fmt: skip
    spec: Obj = {
        "containers": containers, "dnsPolicy": "ClusterFirst", "enableServiceLinks": True,
        "priority": 2000001000 if priority_class else 0, "restartPolicy": restart_policy,
        "schedulerName": "default-scheduler", "securityContext": pod_security or {},
        "serviceAccount": service_account, "serviceAccountName": service_account,
        "terminationGracePeriodSeconds": 30, "tolerations": [*(tolerations or []), *defaults],
    }  # fmt: skip
    optional = {"nodeName": node, "nodeSelector": node_selector, "volumes": volumes,
                "hostIPC": host_ipc, "priorityClassName": priority_class}  # fmt: skip
    spec.update({k: v for k, v in optional.items() if v})
    started = ids.ago(1, 24 * 20)
    qos = "Guaranteed" if any(c["resources"] for c in containers) else "BestEffort"
    status: Obj = {"phase": phase, "qosClass": qos}
    if node:
        status.update(hostIP=ids.node_ip(node), podIP=ids.pod_ip(), startTime=started)
        status["containerStatuses"] = [_container_status(ids, c, phase, started)
                                       for c in containers]  # fmt: skip
        ready = "True" if phase == "Running" else "False"
        status["conditions"] = [
            {"lastTransitionTime": started, "status": "True", "type": "PodScheduled"},
            {"lastTransitionTime": started, "status": ready, "type": "Ready"},
        ]
    else:  # still waiting for room: the scheduler says why
        message = "0/7 nodes are available: 7 Insufficient nvidia.com/gpu."
        status["conditions"] = [{"lastTransitionTime": started, "message": message,
                                 "reason": "Unschedulable", "status": "False",
                                 "type": "PodScheduled"}]  # fmt: skip
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
    spec: Obj = {"clusterIP": ip, "clusterIPs": [ip], "ports": [ports], "selector": {"app": app},
                 "sessionAffinity": "None",
                 "type": "NodePort" if node_port else "ClusterIP"}  # fmt: skip
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


def deployment(ids: Ids, name: str, ns: str, image: str) -> Obj:
    template = {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [container(name, image)]}}  # fmt: skip
    spec = {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": template}
    status = {"availableReplicas": 1, "readyReplicas": 1, "replicas": 1, "updatedReplicas": 1}
    m = meta(ids, "Deployment", name, ns, labels={"app": name})
    return obj("apps/v1", "Deployment", m, spec=spec, status=status)


def kubectl_list(items: list[Obj]) -> Obj:
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


# --- The GPU Operator and other per-node platform components ----------------------------------


@dataclass(frozen=True)
class DaemonSetSpec:
    name: str
    container: str
    image: str  # the template's; a pod may still run an older one (OnDelete updates)
    namespace: str = GPU_OPERATOR_NS
    privileged: bool = True  # platform components legitimately are; tenant pods never
    host_paths: tuple[str, ...] = ()


# fmt: off
DS_TOOLKIT = DaemonSetSpec("nvidia-container-toolkit-daemonset", "nvidia-container-toolkit-ctr",
                           TOOLKIT, host_paths=("/run/nvidia", "/usr/local/nvidia"))
DS_PLUGIN = DaemonSetSpec("nvidia-device-plugin-daemonset", "nvidia-device-plugin", DEVICE_PLUGIN,
                          host_paths=("/var/lib/kubelet/device-plugins", "/dev"))
DS_GFD = DaemonSetSpec("gpu-feature-discovery", "gpu-feature-discovery", DEVICE_PLUGIN)
DS_DCGM = DaemonSetSpec("nvidia-dcgm-exporter", "nvidia-dcgm-exporter", DCGM_EXPORTER,
                        host_paths=("/var/lib/kubelet/pod-resources",))
DS_VALIDATOR = DaemonSetSpec("nvidia-operator-validator", "nvidia-operator-validator", VALIDATOR)
DS_MIG = DaemonSetSpec("nvidia-mig-manager", "nvidia-mig-manager", MIG_MANAGER,
                       host_paths=("/sys",))
DS_MPS = DaemonSetSpec("nvidia-device-plugin-mps-control-daemon", "mps-control-daemon-ctr",
                       DEVICE_PLUGIN)
DS_NFD = DaemonSetSpec("gpu-operator-node-feature-discovery-worker", "worker", NFD,
                       privileged=False)
# The legacy T4 pool keeps a standalone plugin (helm chart 0.14.5) the operator does not manage.
DS_LEGACY_PLUGIN = DaemonSetSpec("nvidia-device-plugin-legacy-t4", "nvidia-device-plugin-ctr",
                                 DEVICE_PLUGIN_OLD, "kube-system",
                                 host_paths=("/var/lib/kubelet/device-plugins",))
DS_LEGACY_GFD = DaemonSetSpec("gpu-feature-discovery-legacy-t4", "gpu-feature-discovery",
                              GFD_OLD, "kube-system")
# fmt: on


def driver_daemonset(version: str) -> DaemonSetSpec:
    # One DaemonSet per NVIDIADriver resource, named the way the operator names them.
    short = hashlib.sha256(version.encode()).hexdigest()[:10]
    return DaemonSetSpec(f"nvidia-gpu-driver-ubuntu22.04-{short}", "nvidia-driver-ctr",
                         driver_image(version), host_paths=("/run/nvidia", "/var/log"))  # fmt: skip


class Platform:
    """The platform's own workloads: DaemonSet pods placed node by node (then the DaemonSets
    that own them), Deployments and one-shot pods. Never tenant workloads."""

    def __init__(self, ids: Ids) -> None:
        self.ids = ids
        self.pods: list[Obj] = []
        self.others: list[Obj] = []
        self._sets: dict[str, DaemonSetSpec] = {}

    def place(self, ds: DaemonSetSpec, node_name: str, image: str | None = None) -> None:
        self._sets.setdefault(ds.name, ds)
        image = image or ds.image
        mounts = [{"mountPath": p, "name": f"host-{i}"} for i, p in enumerate(ds.host_paths)]
        security = {"privileged": True} if ds.privileged else None
        ctr = container(ds.container, image, security=security, mounts=mounts)
        labels = {"app": ds.name, "controller-revision-hash": self.ids.digest(image)[:10]}
        self.pods.append(pod(
            self.ids, f"{ds.name}-{self.ids.suffix()}", ds.namespace, node=node_name,
            containers=[ctr], owner=("apps/v1", "DaemonSet", ds.name), labels=labels,
            volumes=[host_path(f"host-{i}", p) for i, p in enumerate(ds.host_paths)],
            tolerations=[{"operator": "Exists"}], service_account=ds.name,
            priority_class="system-node-critical",
        ))  # fmt: skip

    def deploy(self, name: str, ns: str, image: str, node_name: str) -> None:
        """A one-replica Deployment (the operator itself, CoreDNS) and its pod."""
        self.others.append(deployment(self.ids, name, ns, image))
        rs = f"{name}-{self.ids.hex(10)}"
        owner = ("apps/v1", "ReplicaSet", rs)
        ctr = container(name, image)
        self.pods.append(pod(self.ids, f"{rs}-{self.ids.suffix()}", ns, node=node_name,
                             containers=[ctr], owner=owner, labels={"app": name}))  # fmt: skip

    def one_shot(self, node_name: str) -> None:
        """The operator's CUDA validation pod: done once per node, left as Succeeded."""
        ctr = container("cuda-validation", VALIDATOR)
        owner = ("nvidia.com/v1", "ClusterPolicy", "cluster-policy")
        self.pods.append(pod(self.ids, f"nvidia-cuda-validator-{self.ids.suffix()}",
                             GPU_OPERATOR_NS, node=node_name, containers=[ctr], owner=owner,
                             phase="Succeeded", restart_policy="OnFailure"))  # fmt: skip

    def objects(self) -> list[Obj]:
        return self.daemonsets() + self.others + self.pods

    def daemonsets(self) -> list[Obj]:
        out = []
        for ds in self._sets.values():
            owned = [p for p in self.pods if _owned_by(p, "DaemonSet", ds.name)]
            n = len(owned)
            updated = sum(p["spec"]["containers"][0]["image"] == ds.image for p in owned)
            template = {"metadata": {"labels": {"app": ds.name}},
                        "spec": {"containers": [container(ds.container, ds.image)],
                                 "serviceAccountName": ds.name,
                                 "tolerations": [{"operator": "Exists"}]}}  # fmt: skip
            # The operator's DaemonSets update OnDelete (its ClusterPolicy says so): a pod is
            # replaced only when someone deletes it, so an old image can linger on a node.
            update = "OnDelete" if ds.namespace == GPU_OPERATOR_NS else "RollingUpdate"
            spec = {"selector": {"matchLabels": {"app": ds.name}}, "template": template,
                    "updateStrategy": {"type": update}}  # fmt: skip
            status = {"currentNumberScheduled": n, "desiredNumberScheduled": n,
                      "numberAvailable": n, "numberMisscheduled": 0, "numberReady": n,
                      "observedGeneration": 3, "updatedNumberScheduled": updated}  # fmt: skip
            m = meta(self.ids, "DaemonSet", ds.name, ds.namespace, labels={"app": ds.name})
            out.append(obj("apps/v1", "DaemonSet", m, spec=spec, status=status))
        return out


def _owned_by(o: Obj, kind: str, name: str) -> bool:
    refs = o["metadata"].get("ownerReferences", [])
    return any(r["kind"] == kind and r["name"] == name for r in refs)


def gpu_operator_pods(platform: Platform, n: NodeSpec, *, driver_managed: bool) -> None:
    """The per-node pods of the GPU Operator (or of the legacy standalone plugin) on a GPU node."""
    platform.place(DS_TOOLKIT, n.name, n.toolkit_image)
    for ds in (DS_LEGACY_PLUGIN, DS_LEGACY_GFD) if n.legacy_plugin else (DS_PLUGIN, DS_GFD):
        platform.place(ds, n.name)
    platform.place(DS_DCGM, n.name)
    platform.place(DS_VALIDATOR, n.name)
    if n.model and n.model.mig_capable:
        platform.place(DS_MIG, n.name)
    if n.sharing == "mps":
        platform.place(DS_MPS, n.name)
    if driver_managed:
        platform.place(driver_daemonset(n.driver), n.name)
