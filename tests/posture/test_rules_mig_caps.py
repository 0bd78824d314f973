"""POD-005 through hostPath volumes: a path naming /dev/nvidia-caps counts in any container; all
of / or /dev counts only in a container whose device cgroup lets it open the device nodes (one
the toolkit counts as privileged). POD-003 reports the broad mount either way."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.sources.normalise import pod_from_template
from tests.posture.builders import container, host_path, inputs, pod, run, tenant

TEAM = tenant("team", namespaces=("team-a",))
HARDENED = {"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False}


def _node_exporter(path: str = "/", security: dict | None = None, **mount: Any) -> Any:
    """kube-prometheus-stack's node-exporter as its chart renders it (runAsUser 65534, hostPath
    / read-only at /host/root), moved into a tenant namespace, with `path` and `security`."""
    spec = {
        "hostPID": True,
        "hostNetwork": True,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "fsGroup": 65534},
        "containers": [
            {
                "name": "node-exporter",
                "image": "quay.io/prometheus/node-exporter:v1.8.2",
                "args": ["--path.rootfs=/host/root"],
                "securityContext": HARDENED if security is None else security,
                "volumeMounts": [
                    {"name": "root", "mountPath": "/host/root", "readOnly": True, **mount}
                ],
            }
        ],
        "volumes": [{"name": "root", "hostPath": {"path": path, "type": ""}}],
    }
    meta = {"name": "node-exporter-x1", "namespace": "team-a"}
    return pod_from_template({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})


def _fired(p: Any) -> set[str]:
    world = inputs(pods=(p,), tenants=(TEAM,))
    return {check for check in ("POD-003", "POD-005") if run(check, world)}


@pytest.mark.parametrize(
    ("path", "security", "fired"),
    [
        # Unprivileged: its device cgroup refuses /dev/nvidia-caps/* though / holds them.
        ("/", None, {"POD-003"}),
        ("/dev", None, {"POD-003"}),
        ("/dev", {"capabilities": {"add": ["NET_ADMIN"]}}, {"POD-003"}),
        # Privileged (every device allowed) or CAP_SYS_ADMIN (rewrites its device cgroup).
        ("/", {"privileged": True}, {"POD-003", "POD-005"}),
        ("/dev", {"capabilities": {"add": ["SYS_ADMIN"]}}, {"POD-003", "POD-005"}),
        ("/", {"capabilities": {"drop": ["ALL"], "add": ["ALL"]}}, {"POD-003", "POD-005"}),
        # A path naming /dev/nvidia-caps states the intent: any container.
        ("/dev/nvidia-caps", None, {"POD-003", "POD-005"}),
        ("/dev/nvidia-caps/nvidia-cap1", None, {"POD-003", "POD-005"}),
    ],
)
def test_pod005_broad_host_path_counts_only_in_a_privileged_container(path, security, fired):
    assert _fired(_node_exporter(path, security)) == fired


def test_pod005_sub_path_into_nvidia_caps_names_it():
    assert _fired(_node_exporter("/", subPath="dev/nvidia-caps")) == {"POD-003", "POD-005"}


def test_pod005_a_privileged_container_not_mounting_the_volume_does_not_count():
    # The sidecar is privileged (POD-001's matter) but does not mount /; node-exporter mounts
    # it unprivileged: the volume is no way to /dev/nvidia-caps.
    p = _node_exporter()
    sidecar = {"name": "debug", "image": "busybox:1.36", "securityContext": {"privileged": True}}
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "node-exporter-x1", "namespace": "team-a"},
        "spec": {
            "containers": [_container_manifest(p), sidecar],
            "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
        },
    }
    assert _fired(pod_from_template(manifest)) == {"POD-003"}


def _container_manifest(p: Any) -> dict:
    (c,) = p.containers
    mount = {"name": "root", "mountPath": "/host/root", "readOnly": True}
    return {"name": c.name, "image": c.image, "volumeMounts": [mount]}


def test_pod005_broad_mount_evidence_names_the_privileged_container():
    (draft,) = run(
        "POD-005", inputs(pods=(_node_exporter("/", {"privileged": True}),), tenants=(TEAM,))
    )
    (volume,) = draft.evidence["host_path_volumes"]
    assert volume["host_path"] == "/"
    assert volume["privileged_containers"] == ["node-exporter"]
    # A named path needs no privileged container: the evidence does not claim one.
    (named,) = run("POD-005", inputs(pods=(_node_exporter("/dev/nvidia-caps"),), tenants=(TEAM,)))
    assert "privileged_containers" not in named.evidence["host_path_volumes"][0]


def test_pod005_unmounted_broad_volume_is_judged_by_the_pods_containers():
    # No container mounts / yet (an ephemeral one may): judged as mounted by each container.
    plain = pod("team-a", containers=(container(),), volumes=(host_path("root", "/"),))
    assert run("POD-005", inputs(pods=(plain,), tenants=(TEAM,))) == []
    root = container(privileged=True)
    held = pod("team-a", containers=(root,), volumes=(host_path("root", "/"),))
    assert len(run("POD-005", inputs(pods=(held,), tenants=(TEAM,)))) == 1
