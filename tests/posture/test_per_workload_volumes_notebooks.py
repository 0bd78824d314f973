"""A finding's identity is (check, workload) (DESIGN §5) for POD-003 and K8S-006 too: a
workload's dangerous host path volumes are one POD-003 listing them in `volumes`, its exposed
notebook servers one K8S-006 listing them in `containers`, with the count in the title."""

from __future__ import annotations

from inventory.snapshot import Container, Service
from tests.posture.builders import container, host_path, inputs, mount, pod, run, tenant

TEAM = tenant("team", namespaces=("team-a",))
RS = "lab-5d9c7b8f6"
NOTEBOOK = "quay.io/jupyter/base-notebook:2024-10-02"
OPEN_ARGS = ("start-notebook.py", "--ServerApp.token=", "--ServerApp.password=")
APP = {"app": "lab"}


def replicas(count: int, containers, volumes=()) -> tuple:
    """`count` pods of Deployment team-a/lab (through its ReplicaSet)."""
    return tuple(
        pod(
            "team-a",
            f"{RS}-{i:05d}",
            containers=tuple(containers),
            volumes=tuple(volumes),
            labels={**APP, "pod-template-hash": RS.rsplit("-", 1)[1]},
            owner_kind="ReplicaSet",
            owner_name=RS,
        )
        for i in range(count)
    )


def test_a_workloads_two_dangerous_host_paths_are_one_pod003_listing_both():
    main = container(
        volume_mounts=(mount("dev", "/host-dev"), mount("sock", "/run/containerd.sock"))
    )
    volumes = (
        host_path("dev", "/dev"),
        host_path("data", "/data"),  # no danger: not listed
        host_path("sock", "/var/run/containerd/containerd.sock"),
    )
    (draft,) = run("POD-003", inputs(pods=replicas(3, [main], volumes), tenants=(TEAM,)))
    assert (draft.subject_kind, draft.subject_name, draft.key) == ("Deployment", "lab", "")
    dev, sock = draft.evidence["volumes"]  # once each, not once per replica
    assert (dev["volume"], dev["type"], dev["field"]) == (
        "dev",
        "hostPath",
        "spec.volumes[0].hostPath.path",
    )
    assert (sock["volume"], sock["normalised_path"]) == ("sock", "/run/containerd/containerd.sock")
    assert sock["mounted_by"] == [
        {"container": "main", "mount_path": "/run/containerd.sock", "read_only": False}
    ]
    assert sock["writable"] is True and sock["reason"]
    assert draft.title == (
        "Deployment team-a/lab mounts 2 host paths: /dev (volume dev), "
        "/var/run/containerd/containerd.sock (volume sock)"
    )
    assert (draft.severity or "high", draft.exposure, draft.evidence["replicas"]) == ("high", 3, 3)


def test_one_dangerous_host_path_keeps_its_title():
    main = container(volume_mounts=(mount("dev"),))
    pods = replicas(1, [main], (host_path("dev", "/dev"),))
    (draft,) = run("POD-003", inputs(pods=pods, tenants=(TEAM,)))
    assert draft.title == "Deployment team-a/lab mounts host path /dev (volume dev)"
    assert [v["volume"] for v in draft.evidence["volumes"]] == ["dev"]


def _notebook_world(*containers: Container):
    service = Service("team-a", "lab", "NodePort", APP, (8888, 6006))
    return inputs(pods=replicas(2, containers), tenants=(TEAM,), services=(service,))


def test_a_workloads_two_exposed_notebooks_are_one_k8s006_listing_both():
    jupyter = Container("jupyter", NOTEBOOK, args=OPEN_ARGS, ports=(8888,))
    board = Container(
        "board",
        "tensorflow/tensorflow:2.16.1",
        command=("tensorboard",),
        args=("--logdir=/logs", "--bind_all"),
        ports=(6006,),
    )
    (draft,) = run("K8S-006", _notebook_world(jupyter, board))
    assert (draft.subject_kind, draft.subject_name, draft.key) == ("Deployment", "lab", "")
    assert draft.severity in ("", "critical")
    first, second = draft.evidence["containers"]
    assert (first["container"], second["container"]) == ("jupyter", "board")
    assert first["authentication"] == "off" and first["reasons"]
    assert first["container_ports"] == [8888] and second["container_ports"] == [6006]
    assert first["services"] == [{"name": "lab", "type": "NodePort", "ports": [8888, 6006]}]
    assert second["reachable_through"] == ["NodePort Service lab"]
    assert draft.title == (
        "2 notebooks in Deployment team-a/lab (jupyter, board) are reachable through "
        "NodePort Service lab"
    )
    assert (draft.exposure, draft.evidence["replicas"]) == (2, 2)


def test_one_exposed_notebook_keeps_its_title():
    jupyter = Container("jupyter", NOTEBOOK, args=OPEN_ARGS, ports=(8888,))
    (draft,) = run("K8S-006", _notebook_world(jupyter))
    assert draft.title.startswith("Notebook jupyter in Deployment team-a/lab (")
    assert draft.title.endswith(") is reachable through NodePort Service lab")
    assert [c["container"] for c in draft.evidence["containers"]] == ["jupyter"]
