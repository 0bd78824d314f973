"""A debug container added with `kubectl debug` is judged like any other container."""

from __future__ import annotations

from dataclasses import replace

from inventory.sources.normalise import pod_from_template
from posture.rules import run_checks
from tests.posture.builders import inputs, tenant

MANIFEST = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "trainer-0", "namespace": "team-ext"},
    "spec": {
        "containers": [
            {
                "name": "main",
                "image": "registry.example.internal/t@sha256:" + "a" * 64,
                "securityContext": {"privileged": False},
            }
        ],
        "ephemeralContainers": [
            {
                "name": "debugger-x7",
                "image": "busybox",
                "securityContext": {"privileged": True, "capabilities": {"add": ["sys_admin"]}},
            }
        ],
    },
    "status": {"phase": "Running"},
}


def test_a_privileged_debug_container_is_reported_with_its_path():
    pod = pod_from_template(MANIFEST)
    assert [c.ephemeral for c in pod.containers] == [False, True]
    world = inputs(pods=(pod,), tenants=(tenant("ext", "external", namespaces=("team-ext",)),))
    drafts = {d.check_id: d for d in run_checks(world, only=["POD-001", "POD-004"])}
    assert [c["container"] for c in drafts["POD-001"].evidence["containers"]] == ["debugger-x7"]
    assert "spec.ephemeralContainers[0]" in str(drafts["POD-001"].evidence)
    assert "POD-004" in drafts


def test_a_debug_container_in_one_replica_is_filed_under_that_pod_not_its_deployment():
    """`kubectl debug` changed one pod, not the Deployment's template: the finding names the
    pod (the template's other replicas are clean) and says whose pod it is."""
    debugged = pod_from_template(MANIFEST)
    owner = {"owner_kind": "ReplicaSet", "owner_name": "trainer-5d9c7b8f6"}
    labels = {"pod-template-hash": "5d9c7b8f6"}
    debugged = replace(debugged, name="trainer-5d9c7b8f6-aaaaa", labels=labels, **owner)
    clean = replace(
        debugged,
        name="trainer-5d9c7b8f6-bbbbb",
        containers=tuple(c for c in debugged.containers if not c.ephemeral),
    )
    world = inputs(
        pods=(debugged, clean),
        tenants=(tenant("ext", "external", namespaces=("team-ext",)),),
    )
    (draft,) = run_checks(world, only=["POD-001"])
    assert (draft.subject_kind, draft.subject_name) == ("Pod", "trainer-5d9c7b8f6-aaaaa")
    assert draft.evidence["debug_container_in"] == "Deployment team-ext/trainer"
    assert draft.evidence["resolved_by"] == "debug container"
    assert draft.title == (
        "Container debugger-x7 of Pod team-ext/trainer-5d9c7b8f6-aaaaa is privileged"
    )
