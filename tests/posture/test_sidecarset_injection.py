"""What an OpenKruise SidecarSet injected (DESIGN §5: the subject is the thing to change). Its
webhook adds containers and volumes to each pod it selects at creation, never to the
workload's template: each tenant's workload keeps its finding (its pods run it), the evidence
says the SidecarSet injected it, and the fix is one action at the SidecarSet, as Istio's
sidecar image is pinned once in the mesh's injector config."""

from __future__ import annotations

import json

import pytest

from inventory.snapshot import Container, EnvVar, Pod, Volume, VolumeMount
from posture.rules.pod.injectors import injected_volumes, sidecarset_containers
from tests.posture.builders import inputs, run, tenant
from tests.posture.test_actions_real_world import (
    action_of,
    gpu_node,
    namespaces,
    open_finding,
    pod,
    world,
)

AGENT = "cr.fluentbit.io/fluent/fluent-bit@sha256:" + "c" * 64
# As Kruise 1.8 writes it on each pod it injects (sidecarList: the containers it added).
HASH = {
    "log-agent": {
        "hash": "7c4d9x8vz6b5w2f4",
        "sidecarSetName": "log-agent",
        "sidecarList": ["log-agent"],
        "controllerRevision": "log-agent-6b8f4c7d95",
    }
}
INJECTED = {
    "kruise.io/sidecarset-hash": json.dumps(HASH),
    "kruise.io/sidecarset-injected-list": "log-agent",
}


def injected(item: dict, *, own_log_mount: bool = False) -> dict:
    """A pod as the SidecarSet's webhook leaves it: the log-agent container mounting a
    writable /var/log hostPath volume added, and the annotations recording it."""
    item["metadata"]["annotations"] = dict(INJECTED)
    spec = item["spec"]
    mount = {"name": "varlog", "mountPath": "/var/log"}
    env = [{"name": "IS_INJECTED", "value": "true"}]
    spec["containers"].append(
        {"name": "log-agent", "image": AGENT, "volumeMounts": [mount], "env": env}
    )
    spec["volumes"] = [{"name": "varlog", "hostPath": {"path": "/var/log"}}]
    if own_log_mount:  # the workload's own container mounts it too: not the SidecarSet's alone
        spec["containers"][0]["volumeMounts"] = [mount]
    return item


@pytest.mark.django_db
def test_a_sidecarsets_host_path_is_filed_per_workload_and_fixed_at_the_sidecarset(tmp_path):
    """Two tenants' Deployments, both injected: one POD-003 each (each tenant's pods mount
    it), both naming the SidecarSet, and one action at the SidecarSet. A third workload whose
    own container mounts the same volume keeps its own action."""
    items = [
        gpu_node("gpu-1", "a"),
        *namespaces("team-a", "beta-prod"),
        injected(pod("team-a", "train", "gpu-1", AGENT)),
        injected(pod("beta-prod", "infer", "gpu-1", AGENT)),
        injected(pod("beta-prod", "shared", "gpu-1", AGENT), own_log_mount=True),
    ]
    world(tmp_path, items)
    train, infer = open_finding("POD-003", "train"), open_finding("POD-003", "infer")
    (volume,) = train.evidence["volumes"]
    assert volume["injected_by"] == "SidecarSet log-agent"
    assert train.title == (
        "Pod team-a/train mounts host path /var/log (volume varlog, injected by SidecarSet "
        "log-agent)"
    )
    # Still the tenant's workload's finding: its pods run it (and its neighbours on the node).
    assert train.subject_kind == "Pod" and "alpha" in train.tenants.values_list("slug", flat=True)
    action = action_of(train)
    assert action_of(infer).pk == action.pk
    assert action.title == (
        "Remove the host path volumes from SidecarSet log-agent, which injects them into the "
        "pods of 2 workloads: closes 2 findings, 2 tenants"
    )
    shared = open_finding("POD-003", "shared")
    assert "injected_by" not in shared.evidence["volumes"][0]
    assert action_of(shared).title == "Remove the host path volumes from Pod beta-prod/shared"


def test_a_privileged_injected_container_is_named_as_the_sidecarsets():
    """POD-001's entry of a container the SidecarSet injected says so, whatever the check."""
    agent = Container("log-agent", AGENT, privileged=True)
    own = Container("main", "x@sha256:" + "a" * 64)
    item = Pod("team-a", "train", node_name="gpu-1", phase="Running", containers=(own, agent))
    item = Pod(**{**item.__dict__, "annotations": dict(INJECTED)})
    (draft,) = run("POD-001", inputs(pods=(item,), tenants=(tenant("t", namespaces=("team-a",)),)))
    (entry,) = draft.evidence["containers"]
    assert (entry["container"], entry["injected_by"]) == ("log-agent", "SidecarSet log-agent")


def test_a_volume_of_the_workloads_own_template_is_not_the_sidecarsets():
    """Kruise adds the SidecarSet's volumes but keeps the pod's own of the same name: where the
    workload's template has that volume, it is the workload's, whoever mounts it."""
    volume = Volume("varlog", host_path="/var/log", kind="hostPath")
    agent = Container("log-agent", AGENT, volume_mounts=(VolumeMount("varlog", "/var/log"),))
    running = Pod(
        "team-a",
        "web-1",
        containers=(Container("main", "x:1"), agent),
        volumes=(volume,),
        annotations=dict(INJECTED),
    )
    assert sidecarset_containers(running) == {"log-agent": "SidecarSet log-agent"}
    assert injected_volumes(running, None) == {"varlog": "SidecarSet log-agent"}
    template = Pod("team-a", "web", containers=(Container("main", "x:1"),), volumes=(volume,))
    assert injected_volumes(running, template) == {}
    # No record on the pod: nothing is taken as injected, whatever the container's name.
    assert injected_volumes(Pod(**{**running.__dict__, "annotations": {}}), None) == {}


def test_an_older_kruise_without_a_list_names_the_containers_it_marked():
    marked = Container("agent", AGENT, env=(EnvVar("IS_INJECTED", None),))
    old = {"kruise.io/sidecarset-hash": json.dumps({"log-agent": "7c4d9x8vz6b5w2f4"})}
    item = Pod("team-a", "p", containers=(Container("main", "x:1"), marked), annotations=old)
    assert sidecarset_containers(item) == {"agent": "SidecarSet log-agent"}
