"""DRIFT-002 names what changed in a GPU-stack controller's pod template, not only a hash
(inventory.drift_workloads)."""

from __future__ import annotations

import json

from inventory import snapshot as snap
from inventory.drift import ClusterState, detect_drift

IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.15.0"


def plugin(
    args: tuple[str, ...] = (),
    env: tuple[snap.EnvVar, ...] = (),
    volumes: tuple[snap.Volume, ...] = (),
    spec_hash: str = "a",
) -> snap.Workload:
    container = snap.Container("nvidia-device-plugin", IMAGE, args=args, env=env)
    sidecar = snap.Container("config-manager", IMAGE, command=("config-manager",))
    template = snap.Pod(
        "gpu-operator", "nvidia-device-plugin", containers=(container, sidecar), volumes=volumes
    )
    return snap.Workload(
        "DaemonSet",
        "gpu-operator",
        "nvidia-device-plugin",
        images={c.name: c.image for c in template.containers},
        spec_hash=spec_hash,
        template=template,
    )


def change_of(was: snap.Workload, now: snap.Workload):
    (change,) = detect_drift(ClusterState(workloads=(was,)), ClusterState(workloads=(now,)))
    return change


def test_an_added_argument_is_named_per_container():
    change = change_of(plugin(), plugin(args=("--pass-device-specs=true",), spec_hash="b"))
    assert change.summary.endswith("pod spec changed: nvidia-device-plugin args")
    assert change.before["containers"] == {"nvidia-device-plugin": {"args": []}}
    assert change.after["containers"] == {
        "nvidia-device-plugin": {"args": ["--pass-device-specs=true"]}
    }
    # The images and the hash as before: the same images, another spec.
    assert change.before["images"] == change.after["images"]
    assert (change.before["spec_sha256"], change.after["spec_sha256"]) == ("a", "b")


def test_env_changes_name_the_variables_never_their_values():
    token = snap.EnvVar("API_TOKEN", "s3cr3t-old")
    was = plugin(env=(token, snap.EnvVar("FAIL_ON_INIT_ERROR", "true")))
    now = plugin(env=(snap.EnvVar("API_TOKEN", "s3cr3t-new"),), spec_hash="b")
    change = change_of(was, now)
    env_before = change.before["containers"]["nvidia-device-plugin"]["env"]
    env_after = change.after["containers"]["nvidia-device-plugin"]["env"]
    assert env_before == {
        "names": ["API_TOKEN", "FAIL_ON_INIT_ERROR"],
        "changed": ["API_TOKEN", "FAIL_ON_INIT_ERROR"],
    }
    assert env_after == {"names": ["API_TOKEN"], "changed": ["API_TOKEN"]}
    assert "s3cr3t" not in json.dumps([change.before, change.after, change.summary])


def test_a_new_host_path_volume_is_named():
    dev = snap.Volume("dev", host_path="/dev", kind="hostPath")
    change = change_of(plugin(), plugin(volumes=(dev,), spec_hash="b"))
    assert change.before["volumes"] == []
    assert change.after["volumes"][0]["host_path"] == "/dev"
    assert change.summary.endswith("pod spec changed: volumes")


def test_a_workload_stored_without_its_template_still_shows_images_and_hash():
    was = plugin()
    old = snap.Workload(was.kind, was.namespace, was.name, images=was.images, spec_hash="a")
    change = change_of(old, plugin(args=("--x",), spec_hash="b"))
    assert set(change.after) == {"images", "spec_sha256"}
