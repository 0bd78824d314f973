"""Platform components the newest demo objects need (Istio's gateway, oauth2-proxy, Knative's
Kourier, Kruise, Argo Rollouts): each one Deployment with its ReplicaSet and pod, in a namespace
labelled the platform's. Pure Python: no Django, no network.
"""

from __future__ import annotations

from demo import k8s
from demo.k8s import Ids, Obj


def platform_namespace(ids: Ids, name: str) -> Obj:
    # Labelled the platform's, as gpuposture asks for a platform namespace it cannot infer.
    return k8s.namespace(ids, name, {"gpuposture.io/platform": "true"})


def platform_deployment(
    ids: Ids,
    ns: str,
    name: str,
    containers: list[Obj],
    node: str,
    *,
    labels: dict[str, str] | None = None,
    account: str = "default",
) -> list[Obj]:
    """A platform Deployment as the API lists it: the Deployment, its ReplicaSet and one pod."""
    labels = labels or {"app": name}
    template_hash = ids.suffix(10, "bcdfghjklmnpqrstvwxz2456789")
    rs = f"{name}-{template_hash}"
    template = {"metadata": {"labels": labels}, "spec": {"containers": containers}}
    spec = {"replicas": 1, "selector": {"matchLabels": labels}, "template": template}
    status = {"availableReplicas": 1, "readyReplicas": 1, "replicas": 1, "updatedReplicas": 1}
    deployment = k8s.obj(
        "apps/v1", "Deployment", k8s.meta(ids, "Deployment", name, ns), spec=spec, status=status
    )
    replica_set = k8s.controller(
        ids,
        "ReplicaSet",
        rs,
        ns,
        labels={**labels, "pod-template-hash": template_hash},
        owner=("apps/v1", "Deployment", name),
    )
    pod = k8s.pod(
        ids,
        f"{rs}-{ids.suffix()}",
        ns,
        node=node,
        containers=containers,
        owner=("apps/v1", "ReplicaSet", rs),
        labels={**labels, "pod-template-hash": template_hash},
        service_account=account,
        pod_security=k8s.HARDENED_POD,
    )
    return [deployment, replica_set, pod]
