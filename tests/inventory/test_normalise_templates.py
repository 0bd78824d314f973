"""Controllers keep their pod template (Workload.template), so a workload with no pod running
can still be judged; the template survives the JSON round trip the sync stores it by."""

from __future__ import annotations

from inventory import snapshot as snap
from inventory.sources.normalise import normalise


def _controller(kind: str, name: str, spec: dict, api: str = "apps/v1", **meta) -> dict:
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": name, "namespace": "lab", **meta},
        "spec": spec,
    }


POD_SPEC = {
    "hostIPC": True,
    "containers": [
        {
            "name": "main",
            "image": "registry.example.com/m:1",
            "securityContext": {"privileged": True},
        }
    ],
}
TEMPLATE = {"metadata": {"labels": {"app": "m"}}, "spec": POD_SPEC}


def _workloads(*objects) -> dict[tuple[str, str], snap.Workload]:
    return {(w.kind, w.name): w for w in normalise(list(objects)).workloads}


def test_each_builtin_controller_keeps_its_template_replicas_and_suspend():
    found = _workloads(
        _controller("Deployment", "idle", {"replicas": 0, "template": TEMPLATE}),
        _controller("StatefulSet", "db", {"template": TEMPLATE}),
        _controller("DaemonSet", "agent", {"template": TEMPLATE}),
        _controller(
            "CronJob",
            "nightly",
            {"suspend": True, "jobTemplate": {"spec": {"parallelism": 3, "template": TEMPLATE}}},
            api="batch/v1",
        ),
        _controller("Job", "once", {"template": TEMPLATE}, api="batch/v1"),
    )
    assert set(found) == {
        ("Deployment", "idle"),
        ("StatefulSet", "db"),
        ("DaemonSet", "agent"),
        ("CronJob", "nightly"),
        ("Job", "once"),
    }
    replicas = {key: (w.replicas, w.suspended) for key, w in found.items()}
    assert replicas == {
        ("Deployment", "idle"): (0, False),
        ("StatefulSet", "db"): (1, False),  # the API's default
        ("DaemonSet", "agent"): (None, False),  # one per matching node
        ("CronJob", "nightly"): (3, True),
        ("Job", "once"): (1, False),
    }
    nightly = found[("CronJob", "nightly")]
    assert nightly.images == {"main": "registry.example.com/m:1"}
    pod = nightly.template
    assert pod is not None and pod.phase == snap.TEMPLATE_PHASE and not pod.is_active
    assert (pod.namespace, pod.owner_kind, pod.owner_name) == ("lab", "CronJob", "nightly")
    assert pod.host_ipc and pod.containers[0].privileged and pod.labels == {"app": "m"}


def test_a_cronjobs_job_and_a_custom_resource_are_not_workloads_of_their_own():
    owned = {"ownerReferences": [{"kind": "CronJob", "name": "nightly", "controller": True}]}
    found = _workloads(
        _controller("Job", "nightly-2900000", {"template": TEMPLATE}, api="batch/v1", **owned),
        _controller("Job", "volcano", {"template": TEMPLATE}, api="batch.volcano.sh/v1alpha1"),
        _controller("StatefulSet", "kruise", {"template": TEMPLATE}, api="apps.kruise.io/v1beta1"),
    )
    assert found == {}


def test_the_template_round_trips_through_the_stored_json():
    (workload,) = normalise([_controller("Deployment", "idle", {"template": TEMPLATE})]).workloads
    stored = snap.from_dict(snap.Workload, snap.to_dict(workload))
    assert stored == workload and isinstance(stored.template, snap.Pod)
    assert (
        snap.from_dict(snap.Workload, {**snap.to_dict(workload), "template": None}).template is None
    )
