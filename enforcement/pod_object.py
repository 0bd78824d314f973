"""A stored pod (inventory.snapshot.Pod) as the Kubernetes Pod object admission would see. PURE.

The sync keeps what the checks read, not the whole spec: GPU resources only (`nvidia.com/*`),
GPU scheduling annotations only, env values sealed where they are not read. Every field the
pack's rules look at is kept, so the rules judge the rebuilt object as they would the real one.
"""

from __future__ import annotations

from inventory.snapshot import Container, EnvVar, Pod, Volume
from inventory.snapshot_dra import PodClaim


def pod_object(pod: Pod) -> dict:
    spec: dict = {
        "containers": [_container(c) for c in pod.containers if not c.init and not c.ephemeral],
        "serviceAccountName": pod.service_account,
    }
    init = [_container(c) for c in pod.containers if c.init]
    debug = [_container(c) for c in pod.containers if c.ephemeral]
    if init:
        spec["initContainers"] = init
    if debug:
        spec["ephemeralContainers"] = debug
    for field, value in (
        ("hostPID", pod.host_pid),
        ("hostIPC", pod.host_ipc),
        ("hostNetwork", pod.host_network),
    ):
        if value:
            spec[field] = True
    if any(c.host_process == "pod" for c in pod.containers):
        # The pod's own securityContext made them HostProcess containers (POD-001's rule).
        spec["securityContext"] = {"windowsOptions": {"hostProcess": True}}
    if pod.node_selector:
        spec["nodeSelector"] = dict(pod.node_selector)
    if pod.tolerations:
        spec["tolerations"] = [dict(t) for t in pod.tolerations]
    if pod.volumes:
        spec["volumes"] = [_volume(v) for v in pod.volumes]
    if pod.node_name:
        spec["nodeName"] = pod.node_name
    if claims := [c for c in pod.resource_claims if c.name]:
        # POD-011's rule reads whether the pod has DRA claims (their CDI edits void the variable).
        # The claim made for extended-resource requests (KEP-5004) is in no spec: the scheduler
        # makes it after admission.
        spec["resourceClaims"] = [_claim(c) for c in claims]
    metadata: dict = {"name": pod.name, "namespace": pod.namespace}
    if pod.labels:
        metadata["labels"] = dict(pod.labels)
    if pod.annotations:
        metadata["annotations"] = dict(pod.annotations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _container(c: Container) -> dict:
    out: dict = {"name": c.name, "image": c.image}
    security: dict = {}
    if c.privileged:
        security["privileged"] = True
    if c.host_process == "container":
        security["windowsOptions"] = {"hostProcess": True}
    if c.allow_privilege_escalation is not None:
        security["allowPrivilegeEscalation"] = c.allow_privilege_escalation
    if c.capabilities_add or c.capabilities_drop:
        security["capabilities"] = {
            k: list(v) for k, v in (("add", c.capabilities_add), ("drop", c.capabilities_drop)) if v
        }
    if security:
        out["securityContext"] = security
    resources = {
        k: dict(v) for k, v in (("requests", c.gpu_requests), ("limits", c.gpu_limits)) if v
    }
    if resources:
        out["resources"] = resources
    if c.env:
        out["env"] = [_env(e) for e in c.env]
    if c.env_from:
        out["envFrom"] = [
            _env_from(kind, name, prefix) for kind, name, prefix in c.env_from_sources()
        ]
    if c.volume_mounts:
        out["volumeMounts"] = [
            {
                "name": m.name,
                "mountPath": m.mount_path,
                **({"readOnly": True} if m.read_only else {}),
            }
            for m in c.volume_mounts
        ]
    return out


def _env(e: EnvVar) -> dict:
    if e.value_from is None:
        return {"name": e.name, "value": e.value if e.value is not None else ""}
    ref = {"name": e.source or "", "key": e.key or ""}
    if e.value_from in ("configMapKeyRef", "secretKeyRef"):
        return {"name": e.name, "valueFrom": {e.value_from: ref}}
    return {"name": e.name, "valueFrom": {e.value_from: {}}}


def _env_from(kind: str, name: str, prefix: str) -> dict:
    out: dict = {kind: {"name": name}}
    if prefix:
        out["prefix"] = prefix
    return out


def _volume(v: Volume) -> dict:
    if v.host_path is not None:
        return {"name": v.name, "hostPath": {"path": v.host_path}}
    return {"name": v.name, "emptyDir": {}}


def _claim(c: PodClaim) -> dict:
    if c.template:
        return {"name": c.name, "resourceClaimTemplateName": c.template}
    return {"name": c.name, "resourceClaimName": c.claim or ""}
