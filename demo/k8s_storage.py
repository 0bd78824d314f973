"""Objects every demo cluster holds besides its GPU workloads: the API server's Service, each
namespace's `default` ServiceAccount, and the hostPath PersistentVolumes bound to tenant claims;
and, on prod-east, research's tokenizer Job whose generic ephemeral volume got its claim bound
to a hostPath PV of the node's /var/lib (POD-003 through `ephemeral.volumeClaimTemplate`).
Pure Python: no Django, no network.
"""

from __future__ import annotations

from demo import k8s
from demo.cluster_parts import GPU, REG, RES, Cluster
from demo.k8s import Ids, Obj


def always_there(ids: Ids, namespaces: list[str]) -> list[Obj]:
    """The API server's own Service and each namespace's `default` ServiceAccount."""
    spec = {
        "clusterIP": "10.96.0.1",
        "clusterIPs": ["10.96.0.1"],
        "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
        "sessionAffinity": "None",
        "type": "ClusterIP",
    }
    api = k8s.obj("v1", "Service", k8s.meta(ids, "Service", "kubernetes", "default"), spec=spec)
    accounts = [
        k8s.obj("v1", "ServiceAccount", k8s.meta(ids, "ServiceAccount", "default", ns))
        for ns in namespaces
    ]
    return [api, *accounts]


def host_volumes(ids: Ids, c: Cluster) -> list[Obj]:
    """Each hostPath PersistentVolume and the tenant claim bound to it, as the PV controller
    leaves them (the PV's claimRef, the claim's volumeName, both Bound)."""
    items = []
    for pv, path, ns, claim in c.host_volumes:
        items += _bound(ids, pv, path, ns, claim)
    return items


def _bound(
    ids: Ids, pv: str, path: str, ns: str, claim: str, owner: tuple[str, str, str] | None = None
) -> list[Obj]:
    """A hostPath PersistentVolume and the claim bound to it; `owner`: the pod that owns the
    claim (a generic ephemeral volume's, which Kubernetes deletes with the pod)."""
    size = {"storage": "100Gi"}
    spec = {
        "accessModes": ["ReadWriteOnce"],
        "capacity": size,
        "claimRef": {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "name": claim,
            "namespace": ns,
        },
        "hostPath": {"path": path, "type": ""},
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": "manual",
        "volumeMode": "Filesystem",
    }
    meta = k8s.meta(ids, "PersistentVolume", pv)
    items = [k8s.obj("v1", "PersistentVolume", meta, spec=spec, status={"phase": "Bound"})]
    spec = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": size},
        "storageClassName": "manual",
        "volumeMode": "Filesystem",
        "volumeName": pv,
    }
    meta = k8s.meta(ids, "PersistentVolumeClaim", claim, ns, owner=owner)
    status = {"accessModes": ["ReadWriteOnce"], "capacity": size, "phase": "Bound"}
    items.append(k8s.obj("v1", "PersistentVolumeClaim", meta, spec=spec, status=status))
    return items


# Research's tokenizer on its time-sliced L40S node asks for a generic ephemeral volume of
# class `manual`; the platform team had pre-made one `manual` PV there for "fast scratch": a
# hostPath of the node's NVMe, mounted at /var/lib, where the kubelet and containerd keep
# every pod's Secrets and root filesystem too. The claim binds to it (class and size match).
SCRATCH_NODE = ("prod-east", "pe-l40s-02")
SCRATCH_JOB = "shard-tokenize"
SCRATCH_PV = ("nvme-scratch-pe-l40s-02", "/var/lib")


def ephemeral_scratch(ids: Ids, c: Cluster) -> list[Obj]:
    """The Job, its pod with the `scratch` ephemeral volume, the claim Kubernetes made for it
    (`<pod>-scratch`, owned by the pod) and the hostPath PV it is bound to."""
    n = next((n for n in c.nodes if (c.name, n.name) == SCRATCH_NODE), None)
    if n is None:
        return []
    labels = {"app": SCRATCH_JOB}
    job = k8s.controller(ids, "Job", SCRATCH_JOB, RES, labels=labels)
    name = f"{SCRATCH_JOB}-{ids.suffix()}"
    image = ids.pinned(f"{REG}/research/tokenizer:2.2.0")
    mounts = [{"mountPath": "/scratch", "name": "scratch"}]
    ctr = k8s.container(
        SCRATCH_JOB, image, gpus={GPU: 1}, cpu="8", memory="64Gi",
        security=k8s.HARDENED_CONTAINER, mounts=mounts,
    )  # fmt: skip
    template = {
        "metadata": {"labels": {"type": "scratch"}},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "100Gi"}},
            "storageClassName": "manual",
        },
    }
    job_labels = {"batch.kubernetes.io/job-name": SCRATCH_JOB, "job-name": SCRATCH_JOB}
    pod = k8s.pod(
        ids,
        name,
        RES,
        node=n.name,
        containers=[ctr],
        owner=("batch/v1", "Job", SCRATCH_JOB),
        labels={**labels, **job_labels},
        volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}],
        tolerations=[k8s.toleration(*t) for t in n.taints],
        node_selector={"gpuposture.io/pool": n.pool},
        pod_security=k8s.HARDENED_POD,
        restart_policy="Never",
    )
    pv, path = SCRATCH_PV
    claim = _bound(ids, pv, path, RES, f"{name}-scratch", owner=("v1", "Pod", name))
    return [job, pod, *claim]
