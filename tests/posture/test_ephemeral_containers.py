"""A debug container added with `kubectl debug` is judged like any other container."""

from __future__ import annotations

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
    assert drafts["POD-001"].key == "debugger-x7"
    assert "spec.ephemeralContainers[0]" in str(drafts["POD-001"].evidence)
    assert "POD-004" in drafts
