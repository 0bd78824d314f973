"""Objects every demo cluster holds besides its GPU workloads: the API server's Service, each
namespace's `default` ServiceAccount, and the hostPath PersistentVolumes bound to tenant claims.
Pure Python: no Django, no network.
"""

from __future__ import annotations

from demo import k8s
from demo.cluster_parts import Cluster
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
        items.append(k8s.obj("v1", "PersistentVolume", meta, spec=spec, status={"phase": "Bound"}))
        spec = {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": size},
            "storageClassName": "manual",
            "volumeMode": "Filesystem",
            "volumeName": pv,
        }
        meta = k8s.meta(ids, "PersistentVolumeClaim", claim, ns)
        status = {"accessModes": ["ReadWriteOnce"], "capacity": size, "phase": "Bound"}
        items.append(k8s.obj("v1", "PersistentVolumeClaim", meta, spec=spec, status=status))
    return items
