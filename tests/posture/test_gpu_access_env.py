"""NVIDIA_VISIBLE_DEVICES outside the scheduler (issue 17 item 5): POD-011 through envFrom and
configMapKeyRef, and STACK-008 on nodes whose toolkit honours the variable from unprivileged
pods."""

from __future__ import annotations

from typing import Any

import pytest

from tests.posture.builders import tenant
from tests.posture.gpu_access_world import (
    OPERATOR_NS,
    cluster_policy,
    configmap,
    container,
    node,
    pod,
    run,
    world,
)

ALPHA = tenant("alpha")
NVD = "NVIDIA_VISIBLE_DEVICES"


def _keyref(name: str, key: str) -> dict[str, Any]:
    return {"name": NVD, "valueFrom": {"configMapKeyRef": {"name": name, "key": key}}}


def _cuda(**fields: Any) -> dict[str, Any]:
    return pod(
        "alpha", "probe", container("probe", "nvidia/cuda:12.4.1-base-ubuntu22.04", **fields)
    )


def _pod011(*objects: dict[str, Any]):
    return run(
        "POD-011", world([node("gpu-a", capacity={"nvidia.com/gpu": "8"}), *objects], (ALPHA,))
    )


@pytest.mark.parametrize(
    ("fields", "configmaps", "value"),
    [
        ({"envFrom": [{"configMapRef": {"name": "gpu-env"}}]}, {"gpu-env": {NVD: "all"}}, "all"),
        (
            {"envFrom": [{"configMapRef": {"name": "gpu-env"}, "prefix": "NVIDIA_"}]},
            {"gpu-env": {"VISIBLE_DEVICES": "0,1"}},
            "0,1",
        ),
        ({"env": [_keyref("gpus", "visible")]}, {"gpus": {"visible": "all"}}, "all"),
        # The ConfigMap is not in the snapshot: the value is unknown, which counts as asking.
        ({"env": [_keyref("gpus", "visible")]}, {}, None),
        # The last envFrom source carrying the key wins.
        (
            {"envFrom": [{"configMapRef": {"name": "off"}}, {"configMapRef": {"name": "on"}}]},
            {"off": {NVD: "void"}, "on": {NVD: "all"}},
            "all",
        ),
    ],
)
def test_pod011_reads_the_variable_from_configmaps(fields, configmaps, value):
    objects = [configmap("alpha", name, data) for name, data in configmaps.items()]
    (draft,) = _pod011(_cuda(**fields), *objects)
    (entry,) = draft.evidence["containers"]
    assert entry["value"] == value
    assert entry["field"].startswith("spec.containers[0].env")


@pytest.mark.parametrize(
    ("fields", "configmaps"),
    [
        ({"envFrom": [{"configMapRef": {"name": "gpu-env"}}]}, {"gpu-env": {NVD: "void"}}),
        ({"envFrom": [{"configMapRef": {"name": "gpu-env"}}]}, {"gpu-env": {"OTHER": "all"}}),
        # envFrom of a ConfigMap we never saw: nothing known, nothing said.
        ({"envFrom": [{"configMapRef": {"name": "gpu-env"}}]}, {}),
        ({"envFrom": [{"secretRef": {"name": "gpu-env"}}]}, {}),
        ({"env": [_keyref("gpus", "visible")]}, {"gpus": {"visible": "none"}}),
        # The key is not there: the variable is unset (optional) or the pod cannot start.
        ({"env": [_keyref("gpus", "visible")]}, {"gpus": {"other": "all"}}),
        # env wins over envFrom.
        (
            {
                "env": [{"name": NVD, "value": "void"}],
                "envFrom": [{"configMapRef": {"name": "gpu-env"}}],
            },
            {"gpu-env": {NVD: "all"}},
        ),
        (
            {"envFrom": [{"configMapRef": {"name": "on"}}, {"configMapRef": {"name": "off"}}]},
            {"off": {NVD: "void"}, "on": {NVD: "all"}},
        ),
        # With a prefix the key that matters changes.
        (
            {"envFrom": [{"configMapRef": {"name": "gpu-env"}, "prefix": "APP_"}]},
            {"gpu-env": {NVD: "all"}},
        ),
    ],
)
def test_pod011_configmap_negatives(fields, configmaps):
    objects = [configmap("alpha", name, data) for name, data in configmaps.items()]
    assert _pod011(_cuda(**fields), *objects) == []


def test_pod011_another_namespaces_configmap_is_not_read():
    fields = {"envFrom": [{"configMapRef": {"name": "gpu-env"}}]}
    assert _pod011(_cuda(**fields), configmap("beta", "gpu-env", {NVD: "all"})) == []


# --- STACK-008 ----------------------------------------------------------------------------------


def _toolkit_pod(*env: tuple[str, str], node_name: str = "gpu-a") -> dict[str, Any]:
    ctr = container(
        "nvidia-container-toolkit-ctr",
        "nvcr.io/nvidia/k8s/container-toolkit:v1.17.5-ubuntu20.04",
        env=[
            {"name": "RUNTIME", "value": "containerd"},
            *({"name": k, "value": v} for k, v in env),
        ],
    )
    validator = container(
        "driver-validation", "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.3.0"
    )
    return pod(
        OPERATOR_NS,
        f"nvidia-container-toolkit-daemonset-{node_name}",
        ctr,
        node_name=node_name,
        initContainers=[validator],
    )


def _plugin_pod(*env: tuple[str, str], args: tuple[str, ...] = ()) -> dict[str, Any]:
    image = "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"
    plugin = container(
        "nvidia-device-plugin",
        image,
        command=["nvidia-device-plugin"],
        args=list(args),
        env=[
            {"name": "PASS_DEVICE_SPECS", "value": "true"},
            *({"name": k, "value": v} for k, v in env),
        ],
    )
    sidecar = container(
        "config-manager",
        image,
        command=["config-manager"],
        env=[{"name": "DEVICE_LIST_STRATEGY", "value": "envvar"}],
    )
    return pod(OPERATOR_NS, "nvidia-device-plugin-daemonset-x2k9f", plugin, sidecar)


ACCEPT = "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED"
CONFIG_ENVVAR = (
    "version: v1\nflags:\n  migStrategy: none\n  plugin:\n    deviceListStrategy: envvar\n"
)


@pytest.mark.parametrize(
    ("objects", "verdict"),
    [
        # The operator's toolkit with the variable unset runs the toolkit's default: true.
        ([_toolkit_pod()], "yes"),
        ([_toolkit_pod((ACCEPT, "true"))], "yes"),
        (
            [
                _toolkit_pod(
                    (ACCEPT, "false"), ("ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS", "true")
                )
            ],
            "no",
        ),
        # An explicit "false" wins over the plugin's envvar strategy.
        ([_toolkit_pod((ACCEPT, "false")), _plugin_pod(("DEVICE_LIST_STRATEGY", "envvar"))], "no"),
        ([cluster_policy(toolkit={"env": [{"name": ACCEPT, "value": "false"}]})], "no"),
        ([cluster_policy(toolkit={"env": [{"name": ACCEPT, "value": "true"}]})], "yes"),
        # The toolkit on the host (not visible); the plugin hands GPUs over by the variable.
        ([_plugin_pod()], "yes"),
        ([_plugin_pod(("DEVICE_LIST_STRATEGY", "envvar"))], "yes"),
        ([_plugin_pod(args=("--device-list-strategy=volume-mounts",))], "unverified"),
        ([_plugin_pod(("DEVICE_LIST_STRATEGY", "cdi-annotations,cdi-cri"))], "unverified"),
        ([configmap(OPERATOR_NS, "plugin-config", {"any": CONFIG_ENVVAR})], "yes"),
        # GPU Operator v25.10+ with CDI, nothing else visible: nothing said.
        ([cluster_policy(cdi={"enabled": True})], "unverified"),
        ([], "unverified"),
    ],
)
def test_stack008_fires_on_positive_evidence_only(objects, verdict):
    # The GPU Operator labels the nodes it manages (its DaemonSets select them by these): where
    # only its ClusterPolicy is in the world, the labels say its toolkit runs on the node.
    managed = any(o.get("kind") == "ClusterPolicy" for o in objects)
    deploy = {f"nvidia.com/gpu.deploy.{c}": "true" for c in ("container-toolkit", "device-plugin")}
    inputs = world(
        [
            node("gpu-a", capacity={"nvidia.com/gpu": "8"}, labels=deploy if managed else None),
            *objects,
            pod("alpha", "train", container(gpu={"nvidia.com/gpu": "1"})),
        ],
        (ALPHA,),
    )
    found = run("STACK-008", inputs)
    assert bool(found) is (verdict == "yes")
    if found:
        (draft,) = found
        evidence = draft.evidence
        assert evidence["honours_visible_devices_from_unprivileged_pods"] == "yes"
        # Where the Operator's toolkit runs, the fix is its ClusterPolicy's toolkit.env.
        subject = ("ClusterPolicy", "cluster-policy") if managed else ("Node", "gpu-a")
        assert (draft.subject_kind, draft.subject_name, draft.tenants) == (*subject, ("alpha",))


def test_stack008_not_on_a_cpu_node():
    cpu = node("cpu-a", gpus=0)
    cpu["metadata"]["labels"].pop("nvidia.com/gpu.count")
    inputs = world([cpu, _toolkit_pod(node_name="cpu-a")], (ALPHA,))
    assert run("STACK-008", inputs) == []


@pytest.mark.parametrize(
    ("objects", "verdict"),
    [([_toolkit_pod()], "yes"), ([_toolkit_pod((ACCEPT, "false"))], "no"), ([], "unverified")],
)
def test_pod011_says_whether_the_node_honours_the_variable(objects, verdict):
    probe = _cuda(env=[{"name": NVD, "value": "all"}])
    (draft,) = _pod011(probe, *objects)
    (entry,) = draft.evidence["pods"]
    assert entry["node_honours_visible_devices"] == verdict
    # Where the node ignores it the access is latent: said, low; elsewhere high.
    assert draft.severity == ("low" if verdict == "no" else "high")
    assert ("latent" in draft.title) is (verdict == "no")


def test_pod011_a_privileged_container_is_honoured_whatever_the_toolkit_says():
    probe = _cuda(env=[{"name": NVD, "value": "all"}], securityContext={"privileged": True})
    (draft,) = _pod011(probe, _toolkit_pod((ACCEPT, "false")))
    assert draft.severity == "high" and "latent" not in draft.title


# POD-011 on a container that requests GPUs and names others: the kubelet applies the pod's env
# after the device plugin's, so under the plugin's `envvar` strategy the pod's value wins.
@pytest.mark.parametrize(
    ("objects", "fires", "strategy"),
    [
        ([_plugin_pod()], True, "envvar"),
        ([_plugin_pod(("DEVICE_LIST_STRATEGY", "envvar"))], True, "envvar"),
        # The toolkit takes the plugin's mounts or CDI devices first: the variable is ignored.
        ([_plugin_pod(args=("--device-list-strategy=volume-mounts",))], False, None),
        ([_plugin_pod(("DEVICE_LIST_STRATEGY", "cdi-annotations,cdi-cri"))], False, None),
        # Nothing says how the plugin hands GPUs over: said, not passed.
        ([], True, None),
    ],
)
def test_pod011_a_gpu_request_does_not_cover_naming_every_gpu(objects, fires, strategy):
    gpu = {"nvidia.com/gpu": "1"}
    probe = pod("alpha", "probe", container("probe", gpu=gpu, env=[{"name": NVD, "value": "all"}]))
    found = _pod011(probe, *objects)
    assert bool(found) is fires
    if found:
        (draft,) = found
        (probe_entry,) = draft.evidence["containers"]
        assert probe_entry["requested_gpus"] == 1 and probe_entry["value"] == "all"
        assert "over the 1 GPU(s) it requested" in draft.title
        (entry,) = draft.evidence["pods"]
        assert entry["node_device_list_strategy"] == strategy
        reason = probe_entry["overrides_allocation"]
        assert reason.startswith("unverified") is (strategy is None)
