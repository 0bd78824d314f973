"""Pods and pod templates -> snapshot Pods, with the fields the pod-hardening checks read."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from inventory.env_seal import literal_env, stored_arguments
from inventory.owners import qualified_kind
from inventory.snapshot import (
    GPU_ANNOTATIONS,
    GPU_RESOURCE_PREFIX,
    INJECTOR_ANNOTATIONS,
    MESH_ANNOTATIONS,
    SHARE_SCHEDULER_RESOURCES,
    TEMPLATE_PHASE,
    Container,
    EnvVar,
    Pod,
    Volume,
    VolumeMount,
    recorded_time,
)
from inventory.snapshot.accelerators import is_other_accelerator
from inventory.snapshot_dra import PodClaim
from inventory.sources.dra import pod_claims
from inventory.sources.pod_scope import pod_scope
from inventory.sources.raw import (
    as_int,
    controller_reference,
    dicts,
    dig,
    flag,
    labels_of,
    mapping,
    meta,
    name_of,
    namespace_of,
    str_dict,
    str_tuple,
    text,
)

# Where each controller kind keeps its pod template.
_TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "Deployment": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "ReplicationController": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}

KEPT_ANNOTATIONS = GPU_ANNOTATIONS | MESH_ANNOTATIONS | INJECTOR_ANNOTATIONS
_ENV_SOURCES = ("secretKeyRef", "configMapKeyRef", "fieldRef", "resourceFieldRef")
_KEY_REFS = ("secretKeyRef", "configMapKeyRef")  # their object and key are kept (names only)


def pod_from_object(obj: dict[str, Any], namespace: str) -> Pod:
    """A Pod object as read from the API (status, node and owner included)."""
    # The controller reference names the workload; another owner (a garbage-collection
    # parent an operator adds) may come first in the list.
    owner = controller_reference(obj)
    pod = _pod_from_spec(
        spec=mapping(obj.get("spec")),
        namespace=namespace,
        name=name_of(obj),
        labels=labels_of(obj),
        phase=text(dig(obj, "status").get("phase"), "Unknown") or "Unknown",
        owner_kind=_owner_kind(owner),
        owner_name=text(owner.get("name")),
        annotations=gpu_annotations(meta(obj).get("annotations")),
        resource_claims=pod_claims(mapping(obj.get("spec")), dig(obj, "status")),
    )
    # Kubernetes knows an owner by its uid: the snapshot's object of that name may be another
    # (inventory.sources.owner_links says what the snapshot holds of it).
    owned = {
        "owner_uid": text(owner.get("uid"), "") or "",
        "owner_api_version": text(owner.get("apiVersion"), "") or "",
    }
    return replace(pod, volumes=_ephemeral_claims(pod), **owned, **held_times(dig(obj, "status")))


def _ephemeral_claims(pod: Pod) -> tuple[Volume, ...]:
    """The pod's volumes, each generic ephemeral volume given the claim Kubernetes makes for it:
    `<pod name>-<volume name>` (the ephemeral volume controller's naming, owned by the pod). It
    is a claim like any other, so a hostPath or local PV bound to it hands over its node path.
    Only a pod has it: a template's pods are named when created, so their claims are unknown."""
    return tuple(
        replace(v, claim=f"{pod.name}-{v.name}") if v.kind == "ephemeral" and v.name else v
        for v in pod.volumes
    )


def held_times(status: dict[str, Any]) -> dict[str, str | None]:
    """When the pod started and, once every app container has terminated, when the last one
    finished (Pod.started_at, Pod.finished_at): the earliest start recorded is kept, so a
    container's restart does not move it (nor rewrite the stored row). Text that is no
    timestamp is ignored (unknown, not a guess)."""
    states = [mapping(s.get("state")) for s in dicts(status.get("containerStatuses"))]
    starts = [status.get("startTime")]
    starts += [
        mapping(s.get(k)).get("startedAt") for s in states for k in ("running", "terminated")
    ]
    started = [(t, v) for v in starts if (t := recorded_time(v)) is not None]
    ends = [mapping(s.get("terminated")).get("finishedAt") for s in states]
    finished = [(t, v) for v in ends if (t := recorded_time(v)) is not None]
    done = bool(states) and all("terminated" in s for s in states) and len(finished) == len(states)
    return {
        "started_at": min(started)[1] if started else None,
        "finished_at": max(finished)[1] if done else None,
    }


def _owner_kind(owner: dict[str, Any]) -> str | None:
    kind = text(owner.get("kind"))
    return qualified_kind(kind, text(owner.get("apiVersion"), "") or "") if kind else kind


def gpu_annotations(value: Any) -> dict[str, str]:
    """The GPU scheduling annotations of an object (GPU_ANNOTATIONS), Istio's traffic capture
    and sidecar injection ones (MESH_ANNOTATIONS) and OpenKruise's record of the SidecarSets
    that injected the pod (INJECTOR_ANNOTATIONS); nothing else is kept."""
    found = {k: v for k, v in mapping(value).items() if k in KEPT_ANNOTATIONS}
    return str_dict(found) if found else {}


def pod_from_template(obj: dict[str, Any]) -> Pod | None:
    """The Pod a workload (Deployment, DaemonSet, StatefulSet, ReplicaSet, Job, CronJob) would
    run, or the Pod itself; None when there is no pod spec. Manifests often omit the
    namespace: it is then "default", where `kubectl apply` would put them."""
    kind = text(mapping(obj).get("kind"), "") or ""
    namespace = namespace_of(obj) or "default"
    if kind == "Pod":
        return pod_from_object(obj, namespace)
    path = _TEMPLATE_PATHS.get(kind)
    template = dig(obj, *path) if path else {}
    if not isinstance(template.get("spec"), dict):
        return None
    return _pod_from_spec(
        spec=template["spec"],
        namespace=namespace,
        name=name_of(obj),
        labels=labels_of(template),
        phase="Unknown",
        owner_kind=kind,
        owner_name=name_of(obj),
        annotations=gpu_annotations(meta(template).get("annotations")),
        resource_claims=pod_claims(template["spec"], {}),
    )


def template_path(kind: str) -> tuple[str, ...]:
    """Where a controller of `kind` keeps its pod template (spec.template for most)."""
    return _TEMPLATE_PATHS.get(kind, ("spec", "template"))


def template_facts(obj: dict[str, Any]) -> dict[str, Any]:
    """A controller's pod template as Workload fields: `template` (a Pod in TEMPLATE_PHASE,
    named after the controller, None without a pod spec), `replicas` as the spec says and
    `suspended`. What a pod of it would run, for a workload with no pod running now."""
    kind = text(obj.get("kind"), "") or ""
    # A custom resource of a built-in kind's name (OpenKruise's apps.kruise.io DaemonSet) is
    # not judged from a template: its pods name it by its group, so the two would not meet.
    builtin = qualified_kind(kind, text(obj.get("apiVersion"), "") or "") == kind
    pod = pod_from_template(obj) if builtin else None
    spec = dig(obj, "spec")
    if kind == "CronJob":
        spec = dig(obj, "spec", "jobTemplate", "spec")
    # The API defaults spec.replicas and a Job's parallelism to 1; a DaemonSet has neither.
    replicas = None if kind == "DaemonSet" else _count(spec, kind)
    return {
        "template": replace(pod, phase=TEMPLATE_PHASE) if pod is not None else None,
        "replicas": replicas,
        "suspended": flag(dig(obj, "spec").get("suspend")) is True,
    }


def _count(spec: dict[str, Any], kind: str) -> int | None:
    field = "parallelism" if kind in ("Job", "CronJob") else "replicas"
    if field not in spec:
        return 1
    return as_int(spec.get(field))


def _pod_from_spec(
    *,
    spec: dict[str, Any],
    namespace: str,
    name: str,
    labels: dict[str, str],
    phase: str,
    owner_kind: str | None,
    owner_name: str | None,
    annotations: dict[str, str],
    resource_claims: tuple[PodClaim, ...] = (),
) -> Pod:
    pod_security = mapping(spec.get("securityContext"))
    containers = [_container(c, pod_security, init=True) for c in dicts(spec.get("initContainers"))]
    containers += [_container(c, pod_security, init=False) for c in dicts(spec.get("containers"))]
    # Debug containers added with `kubectl debug` run in the pod too, with their own
    # securityContext: a privileged one is as dangerous as any other.
    containers += [
        replace(_container(c, pod_security, init=False), ephemeral=True)
        for c in dicts(spec.get("ephemeralContainers"))
    ]
    return Pod(
        namespace=namespace,
        name=name,
        node_name=text(spec.get("nodeName")) or None,
        phase=phase,
        # serviceAccount is the deprecated spelling that old manifests still carry.
        service_account=text(spec.get("serviceAccountName"))
        or text(spec.get("serviceAccount"))
        or "default",
        host_pid=flag(spec.get("hostPID")) is True,
        host_ipc=flag(spec.get("hostIPC")) is True,
        host_network=flag(spec.get("hostNetwork")) is True,
        host_users=flag(spec.get("hostUsers")),
        containers=tuple(containers),
        volumes=tuple(_volume(v) for v in dicts(spec.get("volumes"))),
        labels=labels,
        owner_kind=owner_kind,
        owner_name=owner_name,
        node_selector=str_dict(spec.get("nodeSelector")),
        tolerations=tuple(str_dict(t) for t in dicts(spec.get("tolerations"))),
        annotations=annotations,
        resource_claims=resource_claims,
        runtime_class=text(spec.get("runtimeClassName")) or None,
        quota_scope=pod_scope(spec),
    )


def _container(raw: dict[str, Any], pod_security: dict[str, Any], *, init: bool) -> Container:
    security = mapping(raw.get("securityContext"))
    capabilities = mapping(security.get("capabilities"))
    resources = mapping(raw.get("resources"))
    run_as_non_root = flag(security.get("runAsNonRoot"))
    if run_as_non_root is None:
        # The pod-level setting applies to every container that does not override it.
        run_as_non_root = flag(pod_security.get("runAsNonRoot"))
    return Container(
        name=text(raw.get("name"), "") or "",
        image=text(raw.get("image"), "") or "",
        init=init,
        sidecar=init and text(raw.get("restartPolicy")) == "Always",
        privileged=flag(security.get("privileged")) is True,
        host_process=_host_process(security, pod_security),
        allow_privilege_escalation=flag(security.get("allowPrivilegeEscalation")),
        run_as_non_root=run_as_non_root,
        capabilities_add=_capabilities(capabilities.get("add")),
        capabilities_drop=_capabilities(capabilities.get("drop")),
        capabilities_add_prefixed=_prefixed(capabilities.get("add")),
        gpu_requests=_gpu_quantities(resources.get("requests")),
        gpu_limits=_gpu_quantities(resources.get("limits")),
        accelerators=_accelerators(resources),
        accelerator_requests=_other_quantities(resources.get("requests")),
        accelerator_limits=_other_quantities(resources.get("limits")),
        env=tuple(_env_var(e) for e in dicts(raw.get("env"))),
        volume_mounts=tuple(_mount(m) for m in dicts(raw.get("volumeMounts"))),
        ports=tuple(
            port for p in dicts(raw.get("ports")) if (port := as_int(p.get("containerPort")))
        ),
        named_ports={
            name: port
            for p in dicts(raw.get("ports"))
            if (name := text(p.get("name"))) and (port := as_int(p.get("containerPort")))
        },
        host_ports=tuple(
            port for p in dicts(raw.get("ports")) if (port := as_int(p.get("hostPort")))
        ),
        # Credentials on the command line are sealed where env values are (env_seal.py).
        **_command_line(raw),
        env_from=tuple(_env_from(e) for e in dicts(raw.get("envFrom"))),
    )


def _command_line(raw: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    command, args = stored_arguments(str_tuple(raw.get("command")), str_tuple(raw.get("args")))
    return {"command": command, "args": args}


def _host_process(security: dict[str, Any], pod_security: dict[str, Any]) -> str | None:
    """Which securityContext makes the container a Windows HostProcess one, if any: the
    container's windowsOptions.hostProcess wins over the pod's (false there opts out)."""
    own = flag(mapping(security.get("windowsOptions")).get("hostProcess"))
    if own is not None:
        return "container" if own else None
    return "pod" if flag(mapping(pod_security.get("windowsOptions")).get("hostProcess")) else None


def _capabilities(value: Any) -> tuple[str, ...]:
    """Capability names as the kernel spells them without the prefix: `cap_sys_admin` and
    `SYS_ADMIN` are the same grant, so checks compare one spelling."""
    if not value:
        return ()  # the usual case; skips building two generators per container
    return tuple(name.upper().removeprefix("CAP_") for name in str_tuple(value))


def _prefixed(value: Any) -> tuple[int, ...]:
    """Positions of the capabilities.add names written with the CAP_ prefix: the container
    runtime decides whether they are granted (containerd does not)."""
    if not value:
        return ()
    names = str_tuple(value)
    return tuple(i for i, name in enumerate(names) if name.strip().upper().startswith("CAP_"))


def _gpu_quantities(value: Any) -> dict[str, str]:
    # Only the few GPU keys are converted (cpu and memory are dropped anyway).
    gpu = {
        k: v
        for k, v in mapping(value).items()
        if str(k).startswith(GPU_RESOURCE_PREFIX) or k in SHARE_SCHEDULER_RESOURCES
    }
    return str_dict(gpu) if gpu else {}


def _accelerators(resources: dict[str, Any]) -> dict[str, str]:
    """Other vendors' accelerator quantities (the limit wins: requests default to it)."""
    asked = {**mapping(resources.get("requests")), **mapping(resources.get("limits"))}
    found = {k: v for k, v in asked.items() if is_other_accelerator(str(k))}
    return str_dict(found) if found else {}


def _other_quantities(value: Any) -> dict[str, str]:
    """Other vendors' accelerator quantities of `requests` or `limits`, as written."""
    found = {k: v for k, v in mapping(value).items() if is_other_accelerator(str(k))}
    return str_dict(found) if found else {}


def _env_var(raw: dict[str, Any]) -> EnvVar:
    name = text(raw.get("name"), "") or ""
    source = mapping(raw.get("valueFrom"))
    if source and "value" not in raw:
        kind = next((k for k in _ENV_SOURCES if k in source), None)
        ref = mapping(source.get(kind)) if kind in _KEY_REFS else {}
        return EnvVar(
            name=name,
            value=None,
            value_from=kind or "other",
            source=text(ref.get("name")),
            key=text(ref.get("key")),
        )
    # Kubernetes treats a variable without value as the empty string.
    return literal_env(name, text(raw.get("value"), "") or "")


def _mount(raw: dict[str, Any]) -> VolumeMount:
    return VolumeMount(
        name=text(raw.get("name"), "") or "",
        mount_path=text(raw.get("mountPath"), "") or "",
        read_only=flag(raw.get("readOnly")) is True,
        sub_path=text(raw.get("subPath"), "") or "",
        sub_path_expr=text(raw.get("subPathExpr"), "") or "",
    )


def _volume(raw: dict[str, Any]) -> Volume:
    name = text(raw.get("name"), "") or ""
    if "hostPath" in raw:
        path = text(mapping(raw.get("hostPath")).get("path"))
        return Volume(name=name, host_path=path, kind="hostPath")
    if "persistentVolumeClaim" in raw:
        claim = text(mapping(raw.get("persistentVolumeClaim")).get("claimName"))
        return Volume(name=name, kind="persistentVolumeClaim", claim=claim)
    if "configMap" in raw:
        source = mapping(raw.get("configMap"))
        items = {
            path: key
            for item in dicts(source.get("items"))
            if (path := text(item.get("path"))) and (key := text(item.get("key")))
        }
        return Volume(
            name=name, kind="configMap", config_map=text(source.get("name")), config_items=items
        )
    if "image" in raw:
        reference = text(mapping(raw.get("image")).get("reference"), "") or ""
        return Volume(name=name, kind="image", image=reference.strip())
    # A volume has exactly one source key besides its name (emptyDir, configMap, secret, ...).
    kind = next((key for key in raw if key != "name"), "other")
    return Volume(name=name, kind=str(kind))


def _env_from(raw: dict[str, Any]) -> str:
    prefix = text(raw.get("prefix"), "") or ""
    for kind in ("secretRef", "configMapRef"):
        if isinstance(raw.get(kind), dict):
            source = f"{kind}:{text(raw[kind].get('name'), '') or ''}"
            return f"{source}:{prefix}" if prefix else source
    return "other"
