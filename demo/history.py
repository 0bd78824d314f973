"""Last week's state of the demo clusters, so the demo shows drift, resolved findings and a
score trend through real syncs. PURE: takes and returns raw Kubernetes objects."""

from __future__ import annotations

import copy
from typing import Any

from demo.later_nodes import handover_stage

Obj = dict[str, Any]

OLD_DEVICE_PLUGIN = "k8s-device-plugin:v0.16.2"
NEW_DEVICE_PLUGIN = "k8s-device-plugin:v0.17.0"
KESTREL_NAMESPACE = "cust-kestrel"
NEW_NODE_LABELER = "analytics-node-labeler"  # a ClusterRoleBinding added this week
PAUSED_POD = ("research-eval", "dcgm-prof-eval")  # not running mid-week: its POD-004 recurs


def last_week(cluster: str, objects: list[Obj]) -> list[Obj]:
    """The cluster as it was a week ago: on prod-east, time-slicing gave 2 replicas per GPU
    (now 4: DRIFT-001), the T4 inference node still had its external-class taint (removed
    since: DRIFT-003), the device plugin ran v0.16.2 (upgraded since: DRIFT-002), analytics
    could not yet patch nodes (its node-labeler binding is new: DRIFT-006), and one kestrel
    job ran privileged (fixed since: its POD-001 finding is resolved). On neo-west, kestrel
    held all of nw-h200-04 (orbital's now; demo/later_nodes.py)."""
    earlier = handover_stage(cluster, copy.deepcopy(objects), "last-week")
    if cluster == "prod-east":
        earlier = [o for o in earlier if not _is_binding(o, NEW_NODE_LABELER)]
    for obj in earlier:
        if cluster == "prod-east":
            _rewind_prod_east(obj)
        if obj.get("kind") == "Pod" and obj["metadata"].get("namespace") == KESTREL_NAMESPACE:
            _make_first_container_privileged(obj)
    return earlier


def mid_week(cluster: str, objects: list[Obj]) -> list[Obj]:
    """The cluster between last week and now: on neo-west, the cloud's burn-in job ran on
    nw-h200-04 between kestrel's job and orbital's, resetting nothing (LEAK-001), and
    research-eval's profiling pod (SYS_ADMIN, POD-004) was not running: deleted after a run and
    started again since, so its finding resolved mid-week and came back (a `recur` event)."""
    stage = handover_stage(cluster, copy.deepcopy(objects), "mid-week")
    return [o for o in stage if not _is_pod(o, PAUSED_POD)]


def _rewind_prod_east(obj: Obj) -> None:
    kind, meta = obj.get("kind"), obj.get("metadata", {})
    if kind == "ConfigMap" and meta.get("name") == "time-slicing-config":
        data = obj.get("data", {})
        if "ts-4" in data:
            data["ts-4"] = data["ts-4"].replace("replicas: 4", "replicas: 2")
    elif kind == "Node" and meta.get("name") == "pe-t4-01":
        obj["spec"]["taints"] = [
            {"key": "gpuposture.io/trust-class", "value": "external", "effect": "NoSchedule"}
        ]
    elif kind in ("DaemonSet", "Pod"):
        _old_device_plugin(obj)


def _pod_spec(obj: Obj) -> Obj:
    return obj["spec"]["template"]["spec"] if obj.get("kind") == "DaemonSet" else obj["spec"]


def _old_device_plugin(obj: Obj) -> None:
    for container in _pod_spec(obj).get("containers") or []:
        image = container.get("image", "")
        if NEW_DEVICE_PLUGIN in image:
            container["image"] = image.replace(NEW_DEVICE_PLUGIN, OLD_DEVICE_PLUGIN)


def _make_first_container_privileged(obj: Obj) -> None:
    containers = obj["spec"].get("containers") or []
    if containers and obj.get("status", {}).get("phase") == "Running":
        containers[0].setdefault("securityContext", {})["privileged"] = True


def _is_pod(obj: Obj, where: tuple[str, str]) -> bool:
    m = obj.get("metadata", {})
    return obj.get("kind") == "Pod" and (m.get("namespace"), m.get("name")) == where


def _is_binding(obj: Obj, name: str) -> bool:
    return obj.get("kind") == "ClusterRoleBinding" and obj["metadata"].get("name") == name
