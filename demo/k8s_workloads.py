"""The tenants' workloads on a demo cluster: their pods, and the ReplicaSets, Jobs and CronJobs
that own them, as the API lists them (demo/world.py assembles them with the rest). Pure Python:
no Django, no network; deterministic for the `Ids` it is given.
"""

from __future__ import annotations

import copy

from demo import k8s
from demo.cluster_parts import ANA, REG, Cluster, Work
from demo.k8s import Ids, Obj
from demo.k8s_kai import kai_fraction
from demo.telemetry import uuid_of

# The CronJob controller names each Job `<cronjob>-<scheduled minute since the epoch>`.
_CRONJOB_RUN = 29_419_320  # 2025-12-08 02:00 UTC
LWS = "leaderworkerset.sigs.k8s.io/"


def _owner(
    ids: Ids, w: Work, image: str, controllers: dict[tuple[str, str, str], Obj]
) -> tuple[tuple[str, str, str] | None, dict[str, str], str]:
    """(the pods' ownerReference, the labels their controller sets, the name prefix of their
    pods); the controllers in between (ReplicaSet, Job, CronJob) are added to `controllers` once
    per workload, as the API lists them, whichever nodes its pods run on."""
    app = {"app": w.name}
    if w.kind == "Deployment":
        key = ("ReplicaSet", w.ns, w.name)  # the Deployment's current ReplicaSet
        if key not in controllers:
            digest = ids.suffix(10, "bcdfghjklmnpqrstvwxz2456789")  # as the controller encodes it
            rs = f"{w.name}-{digest}"
            controllers[key] = k8s.controller(
                ids,
                "ReplicaSet",
                rs,
                w.ns,
                labels={**app, "pod-template-hash": digest},
                owner=("apps/v1", "Deployment", w.name),
                replicas=w.replicas,
            )
            controllers[("Deployment", w.ns, w.name)] = k8s.deployment(ids, w.name, w.ns, image)
        rs = controllers[key]["metadata"]["name"]
        return ("apps/v1", "ReplicaSet", rs), {"pod-template-hash": rs.rsplit("-", 1)[1]}, rs
    if w.kind in ("Job", "CronJob"):
        job = f"{w.name}-{_CRONJOB_RUN}" if w.kind == "CronJob" else w.name
        if w.kind == "CronJob":
            controllers.setdefault(
                ("CronJob", w.ns, w.name), k8s.controller(ids, "CronJob", w.name, w.ns, labels=app)
            )
        owner = ("batch/v1", "CronJob", w.name) if w.kind == "CronJob" else None
        controllers.setdefault(
            ("Job", w.ns, job),
            k8s.controller(ids, "Job", job, w.ns, labels=app, owner=owner, replicas=w.replicas),
        )
        return ("batch/v1", "Job", job), {"batch.kubernetes.io/job-name": job, "job-name": job}, job
    if w.kind == "StatefulSet":
        return ("apps/v1", "StatefulSet", w.name), {}, w.name
    if w.kind == "Notebook":  # Kubeflow's controller runs it as a StatefulSet of its name
        labels = {"notebook-name": w.name, "statefulset": w.name}
        return ("apps/v1", "StatefulSet", w.name), labels, w.name
    return None, {}, w.name


def _lws_pod(w: Work, index: int) -> tuple[str, tuple[str, str, str], dict[str, str]]:
    """(name, owner, labels) of pod `index` of a LeaderWorkerSet's group 0, as its controller
    makes them: the leader `<lws>-0` in StatefulSet `<lws>`, the workers `<lws>-0-<index>` in
    StatefulSet `<lws>-0` (named after their leader)."""
    labels = {f"{LWS}name": w.name, f"{LWS}group-index": "0", f"{LWS}worker-index": str(index)}
    if index == 0:
        return f"{w.name}-0", ("apps/v1", "StatefulSet", w.name), labels
    return f"{w.name}-0-{index}", ("apps/v1", "StatefulSet", f"{w.name}-0"), labels


def _debugger() -> Obj:
    """The container `kubectl debug --profile=sysadmin` adds: privileged, no resources (a
    fixed name: drawing one from `ids` would shift every later generated name)."""
    return {
        "name": "debugger-x7k2p",
        "image": "docker.io/library/busybox:1.36",
        "securityContext": {"privileged": True},
        "stdin": True,
        "tty": True,
        "terminationMessagePolicy": "File",
    }


def _host_volumes(w: Work) -> list[tuple[str, str, bool]]:
    return [("host-dev", "/dev", False)] * w.host_dev + list(w.host_paths)


def _host_mounts(w: Work) -> list[Obj]:
    """Each hostPath mounted at /host<path>, read-only where the table says; each claim at its
    own path."""
    return [
        {"mountPath": "/host" + path, "name": v, **({"readOnly": True} if read_only else {})}
        for v, path, read_only in _host_volumes(w)
    ] + [{"mountPath": path, "name": claim} for claim, path in w.claims]


def _volumes(w: Work) -> list[Obj]:
    claims = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c, _ in w.claims]
    return [k8s.host_path(v, path) for v, path, _ in _host_volumes(w)] + claims


def tenant_pods_of(ids: Ids, c: Cluster) -> tuple[list[Obj], list[Obj]]:
    """The tenants' pods, and the ReplicaSets, Jobs and CronJobs that own them (and the
    ConfigMaps KAI's binder fills for fraction pods)."""
    nodes = {n.name: n for n in c.nodes}
    gpu_of_group = {group: uuid_of(node, index) for node, group, index in c.reservations}
    pods, controllers, binder_maps = [], {}, []
    for node_name, works in c.works.items():
        n = nodes.get(node_name or "")
        for w in works:
            ours = "." not in w.image.split("/")[0]
            image = ids.pinned(f"{REG}/{w.image}") if ours else w.image
            env: list[Obj] = [{"name": k, "value": v} for k, v in w.env.items()]
            for k, ref in w.secret_env.items():
                secret, key = ref.split("/")
                env.append({"name": k, "valueFrom": {"secretKeyRef": {"key": key, "name": secret}}})
            ctr = k8s.container(
                w.name,
                image,
                gpus=w.gpus,
                cpu="4",
                memory="32Gi",
                security=k8s.HARDENED_CONTAINER if w.security is None else w.security,
                env=env,
                mounts=_host_mounts(w) or None,
                ports=w.ports,
                args=list(w.args),
            )
            owner, controller_labels, prefix = _owner(ids, w, image, controllers)
            for i in range(w.replicas):
                if w.kind == "LeaderWorkerSet":  # its pods are in two StatefulSets
                    _, owner, controller_labels = _lws_pod(w, i)
                name, restart = {
                    "Deployment": (f"{prefix}-{ids.suffix()}", "Always"),
                    "StatefulSet": (f"{w.name}-{i}", "Always"),
                    "Notebook": (f"{w.name}-{i}", "Always"),
                    "LeaderWorkerSet": (_lws_pod(w, i)[0], "Always"),
                    "Job": (f"{prefix}-{ids.suffix()}", "Never"),
                    "CronJob": (f"{prefix}-{ids.suffix()}", "OnFailure"),
                    "Pod": (w.name if w.replicas == 1 else f"{w.name}-{i}", "Never"),
                }[w.kind]
                pod = k8s.pod(
                    ids,
                    name,
                    w.ns,
                    node=node_name,
                    containers=[copy.deepcopy(ctr)],
                    phase=w.phase,
                    owner=owner,
                    restart_policy=restart,
                    labels={"app": w.name, **controller_labels},
                    host_ipc=w.host_ipc,
                    volumes=_volumes(w) or None,
                    tolerations=[k8s.toleration(*t) for t in n.taints] if n else None,
                    node_selector={"gpuposture.io/pool": n.pool} if n and n.model else None,
                    pod_security=k8s.HARDENED_POD if w.security is None else None,
                )
                if w.debugged and i == 0:
                    pod["spec"]["ephemeralContainers"] = [_debugger()]
                if w.fraction:
                    binder_maps += kai_fraction(ids, pod, w, gpu_of_group[w.gpu_group or ""])
                pods.append(pod)
    return pods, [*controllers.values(), *binder_maps]


def idle_cronjobs(ids: Ids, namespaces: list[str]) -> list[Obj]:
    """A tenant's nightly CronJob with a privileged container and no pod right now (it runs at
    03:30; the snapshot is taken by day): judged from its template (POD-001 on the CronJob)."""
    if ANA not in namespaces:
        return []
    image = ids.pinned(f"{REG}/analytics/warehouse-vacuum:1.4.2")
    ctr = k8s.container("vacuum", image, cpu="2", memory="8Gi", security={"privileged": True})
    template = {
        "metadata": {"labels": {"app": "warehouse-vacuum"}},
        "spec": {"containers": [ctr], "restartPolicy": "OnFailure"},
    }
    spec = {
        "schedule": "30 3 * * *",
        "concurrencyPolicy": "Forbid",
        "jobTemplate": {"spec": {"backoffLimit": 2, "template": template}},
    }
    m = k8s.meta(ids, "CronJob", "warehouse-vacuum", ANA, labels={"app": "warehouse-vacuum"})
    return [k8s.obj("batch/v1", "CronJob", m, spec=spec, status={})]
