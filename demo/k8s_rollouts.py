"""What controllers beyond Kubernetes' own do to the demo's tenant pods on prod-east
(demo/additions.py calls it last, so every other object keeps the ids it had).

- OpenKruise's SidecarSet `vllm-log-agent`, which the platform team set up for research's vLLM
  servers: its webhook injects a Fluent Bit sidecar that tails the servers' request logs from
  the node's /var/log/pods (a SidecarSet cannot name one pod's directory, so it mounts them all,
  writable for Fluent Bit's position database) into the pods of Deployments vllm-dev and
  vllm-canary. Each Deployment keeps its POD-003 (its pods mount it), both say the SidecarSet
  injected it, and the fix is one action at the SidecarSet.
- Argo Rollouts: orbital's fold API moved to canary releases by a Rollout whose `workloadRef`
  runs Deployment fold-api's template (the Rollout scaled the Deployment to 0). That template
  pulls the API by tag from Docker Hub: one POD-007, on the Deployment (the thing to edit),
  saying the Rollout runs it.

Pure Python: no Django, no network; deterministic for the `Ids` it is given.
"""

from __future__ import annotations

import copy
import json

from demo import k8s
from demo.cluster_parts import ORB, RES, Cluster
from demo.k8s import Ids, Obj
from demo.k8s_apps import platform_deployment, platform_namespace

# The SidecarSet, the Deployments whose pods it injects, and what it injects.
SIDECARSET = "vllm-log-agent"
INJECTED_INTO = ("vllm-dev", "vllm-canary")
FLUENT_BIT = "cr.fluentbit.io/fluent/fluent-bit:3.1.9"
LOG_VOLUME, LOG_PATH = "vllm-logs", "/var/log/pods"
KRUISE_NS, KRUISE = "kruise-system", "docker.io/openkruise/kruise-manager:v1.8.0"
# The Rollout and the Deployment whose template it runs.
ROLLOUT = "fold-api"
ROLLOUT_IMAGE = "docker.io/orbitalgenomics/fold-api:3.2.0"  # by tag, from outside our registry
ROLLOUTS_NS, ROLLOUTS = "argo-rollouts", "quay.io/argoproj/argo-rollouts:v1.7.2"
CPU_NODE = "pe-cpu-01"


def rollouts(ids: Ids, c: Cluster, items: list[Obj]) -> list[Obj]:
    """The objects above for cluster `c`; the pods the SidecarSet selects among `items` get
    what its webhook injects (in place)."""
    if c.name != "prod-east":
        return []
    return _sidecarset(ids, items) + _rollout(ids)


def _log_agent(image: str) -> Obj:
    mount = {"mountPath": LOG_PATH, "name": LOG_VOLUME}  # writable: Fluent Bit's position DB
    env = [{"name": "IS_INJECTED", "value": "true"}]
    ctr = k8s.container(
        "log-agent",
        image,
        cpu="100m",
        memory="128Mi",
        security=k8s.HARDENED_CONTAINER,
        env=env,
        mounts=[mount],
    )
    ctr["args"] = ["--config=/fluent-bit/etc/fluent-bit.yaml"]
    return ctr


def _sidecarset(ids: Ids, items: list[Obj]) -> list[Obj]:
    """Kruise's manager, the SidecarSet, and its sidecar injected into the selected pods as its
    webhook leaves them (container, volume and the annotations recording it)."""
    image = ids.pinned(FLUENT_BIT)  # pinned once, in the SidecarSet
    agent = _log_agent(image)
    volume = k8s.host_path(LOG_VOLUME, LOG_PATH)
    revision = f"{SIDECARSET}-{ids.suffix(10, 'bcdfghjklmnpqrstvwxz2456789')}"
    record = {
        SIDECARSET: {
            "hash": ids.suffix(16, "bcdfghjklmnpqrstvwxz2456789"),
            "sidecarSetName": SIDECARSET,
            "sidecarList": ["log-agent"],
            "controllerRevision": revision,
        }
    }
    injected = [
        p
        for p in items
        if p["kind"] == "Pod"
        and p["metadata"].get("namespace") == RES
        and p["metadata"].get("labels", {}).get("app") in INJECTED_INTO
    ]
    for p in injected:
        spec, status = p["spec"], p["status"]
        spec["containers"].append(copy.deepcopy(agent))
        spec["volumes"] = [*spec.get("volumes", []), dict(volume)]
        p["metadata"]["annotations"] = {
            "kruise.io/sidecarset-hash": json.dumps(record),
            "kruise.io/sidecarset-injected-list": SIDECARSET,
        }
        if status.get("containerStatuses"):
            state = copy.deepcopy(status["containerStatuses"][0])
            state.update(name="log-agent", image=image, imageID=image)
            state["containerID"] = f"containerd://{ids.hex(64)}"
            status["containerStatuses"].append(state)
    selector = {
        "matchExpressions": [{"key": "app", "operator": "In", "values": list(INJECTED_INTO)}]
    }
    spec = {
        "selector": selector,
        "namespace": RES,
        "containers": [{**_log_agent(image), "podInjectPolicy": "AfterAppContainer"}],
        "volumes": [volume],
        "updateStrategy": {"type": "RollingUpdate", "maxUnavailable": 1},
    }
    n = len(injected)
    status = {"matchedPods": n, "updatedPods": n, "readyPods": n, "latestRevision": revision}
    sidecarset = k8s.obj(
        "apps.kruise.io/v1alpha1",
        "SidecarSet",
        k8s.meta(ids, "SidecarSet", SIDECARSET),
        spec=spec,
        status=status,
    )
    manager = k8s.container(
        "manager", ids.pinned(KRUISE), cpu="200m", memory="512Mi", security=k8s.HARDENED_CONTAINER
    )
    return [
        platform_namespace(ids, KRUISE_NS),
        *platform_deployment(ids, KRUISE_NS, "kruise-controller-manager", [manager], CPU_NODE),
        sidecarset,
    ]


def _rollout(ids: Ids) -> list[Obj]:
    """Argo Rollouts' controller, the Deployment (scaled to 0) whose template the Rollout runs,
    the Rollout, its ReplicaSet and its two pods."""
    controller = k8s.container(
        "argo-rollouts",
        ids.pinned(ROLLOUTS),
        cpu="100m",
        memory="256Mi",
        security=k8s.HARDENED_CONTAINER,
    )
    found = [
        platform_namespace(ids, ROLLOUTS_NS),
        *platform_deployment(ids, ROLLOUTS_NS, "argo-rollouts", [controller], CPU_NODE),
    ]
    app = {"app": ROLLOUT}
    ctr = k8s.container(
        ROLLOUT,
        ROLLOUT_IMAGE,
        cpu="2",
        memory="4Gi",
        security=k8s.HARDENED_CONTAINER,
        ports=(8080,),
    )
    template = {"metadata": {"labels": app}, "spec": {"containers": [copy.deepcopy(ctr)]}}
    spec = {"replicas": 0, "selector": {"matchLabels": app}, "template": template}
    m = k8s.meta(ids, "Deployment", ROLLOUT, ORB, labels=app)
    found.append(k8s.obj("apps/v1", "Deployment", m, spec=spec, status={"replicas": 0}))
    workload = {"apiVersion": "apps/v1", "kind": "Deployment", "name": ROLLOUT}
    steps = [{"setWeight": 20}, {"pause": {"duration": "10m"}}, {"setWeight": 50}, {"pause": {}}]
    template_hash = ids.suffix(9, "bcdfghjklmnpqrstvwxz2456789")
    status = {
        "phase": "Healthy",
        "replicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "currentPodHash": template_hash,
        "stableRS": template_hash,
    }
    rollout = k8s.obj(
        "argoproj.io/v1alpha1",
        "Rollout",
        k8s.meta(ids, "Rollout", ROLLOUT, ORB, labels=app),
        spec={
            "replicas": 2,
            "selector": {"matchLabels": app},
            "workloadRef": {**workload, "scaleDown": "onsuccess"},
            "strategy": {"canary": {"steps": steps}},
        },
        status=status,
    )
    rs = f"{ROLLOUT}-{template_hash}"
    labels = {**app, "rollouts-pod-template-hash": template_hash}
    replica_set = k8s.controller(
        ids,
        "ReplicaSet",
        rs,
        ORB,
        labels=labels,
        owner=("argoproj.io/v1alpha1", "Rollout", ROLLOUT),
        replicas=2,
    )
    pods = [
        k8s.pod(
            ids,
            f"{rs}-{ids.suffix()}",
            ORB,
            node=CPU_NODE,
            containers=[copy.deepcopy(ctr)],
            owner=("apps/v1", "ReplicaSet", rs),
            labels=labels,
            pod_security=k8s.HARDENED_POD,
        )
        for _ in range(2)
    ]
    return [*found, rollout, replica_set, *pods]
