"""The raw Kubernetes objects of bench/world.py: GPU Operator and tenant pods, the platform's
objects, and the data blobs they carry. Built with demo/k8s.py, shaped as kubectl prints them."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from demo import k8s
from demo.k8s import Obj

GPU, MIG_1G = "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"
TS_KEYS = {"ts-4": False, "ts-4-strict": True}  # key -> failRequestsGreaterThanOne
OPERATOR_SETS = (k8s.DS_PLUGIN, k8s.DS_TOOLKIT, k8s.DS_DCGM)


@dataclass(frozen=True)
class Slot:
    """Where a tenant pod runs and what it asks for."""

    node: str | None  # None: no free GPU in its pool, the pod is Pending
    resource: str  # nvidia.com/gpu or a MIG resource
    taint: str | None  # the trust class its pool is tainted for
    pool: str


def operator_pod(ids: k8s.Ids, ds: k8s.DaemonSetSpec, node: str, image: str) -> Obj:
    mounts = [{"mountPath": p, "name": f"host-{i}"} for i, p in enumerate(ds.host_paths)]
    ctr = k8s.container(ds.container, image, security={"privileged": True}, mounts=mounts)
    labels = {"app": ds.name, "controller-revision-hash": ids.digest(ds.image)[:10]}
    return k8s.pod(
        ids,
        f"{ds.name}-{ids.suffix()}",
        ds.namespace,
        node=node,
        containers=[ctr],
        owner=("apps/v1", "DaemonSet", ds.name),
        labels=labels,
        volumes=[k8s.host_path(f"host-{i}", p) for i, p in enumerate(ds.host_paths)],
        tolerations=[{"operator": "Exists"}],
        service_account=ds.name,
        priority_class="system-node-critical",
    )


def tenant_pod(
    ids: k8s.Ids,
    rng: random.Random,
    names: tuple[str, str, str],
    slot: Slot,
    changed: bool,
    number: int,
) -> Obj:
    """One replica of a tenant app (namespace, app, ReplicaSet names) on its slot."""
    ns, app, rs = names
    node = slot.node
    risk = rng.random()
    security, volumes, mounts, env = _risks(risk)
    image = app_image(app)
    phase = "Running" if node else "Pending"
    if changed and number % 2 == 1 and node:
        phase = "Succeeded"
    elif changed:
        image = bumped(image)
    ctr = k8s.container(
        "main",
        image,
        gpus={slot.resource: 1},
        cpu="8",
        memory="64Gi",
        security=security,
        env=env,
        mounts=mounts,
        ports=(8000,),
        args=["--model", "/models/current", "--port", "8000"],
    )
    tolerations = [k8s.toleration("nvidia.com/gpu", None, "NoSchedule")]
    if slot.taint:
        tolerations.append(k8s.toleration("gpuposture.io/trust-class", slot.taint, "NoSchedule"))
    return k8s.pod(
        ids,
        f"{rs}-{ids.suffix()}",
        ns,
        node=node,
        containers=[ctr],
        phase=phase,
        owner=("apps/v1", "ReplicaSet", rs),
        labels={"app": app, "pod-template-hash": rs[-10:]},
        volumes=volumes,
        tolerations=tolerations,
        pod_security=dict(k8s.HARDENED_POD),
        node_selector={"gpuposture.io/pool": slot.pool},
        host_ipc=0.025 <= risk < 0.03,  # POD-002
    )


def _risks(risk: float) -> tuple[Obj, list[Obj], list[Obj], list[Obj]]:
    """A tenant container's security context, volumes, mounts and env: hardened, except in
    one pod in forty, which carries a risk the checks report."""
    security: Obj = dict(k8s.HARDENED_CONTAINER)
    volumes: list[Obj] = [_API_ACCESS, {"emptyDir": {"medium": "Memory"}, "name": "dshm"}]
    mounts: list[Obj] = [{"mountPath": "/dev/shm", "name": "dshm"}, _API_MOUNT]  # noqa: S108 - a manifest
    env: list[Obj] = [
        {"name": "MODEL_DIR", "value": "/models"},
        {"name": "NCCL_DEBUG", "value": "WARN"},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"key": "token", "name": "hf"}}},
    ]
    if risk < 0.01:
        security = {"privileged": True}  # POD-001
    elif risk < 0.015:
        volumes.append(k8s.host_path("dev", "/dev"))  # POD-003 and POD-005
        mounts.append({"mountPath": "/host-dev", "name": "dev"})
    elif risk < 0.02:
        security = {**security, "capabilities": {"add": ["SYS_ADMIN"]}}  # POD-004
    elif risk < 0.025:
        env.append({"name": "NVIDIA_MIG_CONFIG_DEVICES", "value": "all"})  # POD-005
    return security, volumes, mounts, env


def app_image(app: str) -> str:
    return f"registry.example.internal/{app.split('-ns')[0]}/{app.rsplit('-', 1)[1]}:1.4.2"


def bumped(image: str) -> str:
    repo, _, tag = image.rpartition(":")
    return f"{repo}:{tag}-r2"


def platform_objects(ids: k8s.Ids) -> Iterator[Obj]:
    op = k8s.GPU_OPERATOR_NS
    for ns in ("default", "kube-system", "kube-public", op):
        yield k8s.namespace(ids, ns)
    data = {key: _ts_config(strict) for key, strict in TS_KEYS.items()}
    yield k8s.configmap(ids, "time-slicing-config", op, data)
    yield k8s.configmap(ids, "default-mig-parted-config", op, {"config.yaml": _MIG_PARTED})
    for ds in OPERATOR_SETS:
        template = {
            "metadata": {"labels": {"app": ds.name}},
            "spec": {
                "containers": [k8s.container(ds.container, ds.image)],
                "serviceAccountName": ds.name,
            },
        }
        spec = {"selector": {"matchLabels": {"app": ds.name}}, "template": template}
        meta = k8s.meta(ids, "DaemonSet", ds.name, op, labels={"app": ds.name})
        yield k8s.obj("apps/v1", "DaemonSet", meta, spec=spec, status={})
    yield k8s.deployment(ids, "gpu-operator", op, k8s.GPU_OPERATOR)
    for name in ("cluster-admin", "admin", "edit", "view", "system:node", "system:kube-scheduler"):
        yield k8s.role(ids, name, [k8s.rule(["*"], ["*"], ["*"])])
    yield k8s.binding(ids, "platform-admins", "cluster-admin", "Group:platform-admins")


def _ts_config(strict: bool) -> str:
    fail = "\n    failRequestsGreaterThanOne: true" if strict else ""
    return (
        "version: v1\nflags:\n  migStrategy: mixed\nsharing:\n  timeSlicing:"
        f"{fail}\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"
    )


_MIG_PARTED = (
    "version: v1\nmig-configs:\n  all-disabled:\n  - devices: all\n    mig-enabled: false\n"
    "  all-1g.10gb:\n  - devices: all\n    mig-enabled: true\n    mig-devices:\n"
    '      "1g.10gb": 7\n'
)
CA = "-----BEGIN CERTIFICATE-----\n" + "MIIC5zCCAc+gAwIBAgIBADANBgkqhkiG9w0BAQsFADAVMRMw" * 20
DEVELOPER_RULES = [
    k8s.rule([""], ["pods", "pods/log", "services", "configmaps"], ["get", "list", "watch"]),
    k8s.rule(["apps", "batch"], ["deployments", "jobs"], ["get", "list", "create", "update"]),
]
_API_ACCESS = {
    "name": "kube-api-access-7x2kq",
    "projected": {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {
                "configMap": {
                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    "name": "kube-root-ca.crt",
                }
            },
            {
                "downwardAPI": {
                    "items": [
                        {
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                            "path": "namespace",
                        }
                    ]
                }
            },
        ],
    },
}
_API_MOUNT = {
    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
    "name": "kube-api-access-7x2kq",
    "readOnly": True,
}
