"""normalise() on real third-party samples under ../shared/realworld (skipped when absent)."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.snapshot import Subject, Volume
from inventory.sources.normalise import normalise, pod_from_template
from inventory.sources.snapshot_file import load_snapshot_objects
from tests.inventory.normalise_helpers import (
    PLATFORM,
    configmap,
    node,
    only_node,
    platform_namespace,
)
from tests.realworld import realworld

# --- real third-party samples: ConfigMaps and sharing configs ----------------------------------


@pytest.mark.parametrize(
    ("sample", "mode", "replicas", "fail_gt_one", "rename", "mig_strategy"),
    [
        ("gpu-operator-tests-plugin-config.yaml", "time_slicing", 10, False, False, None),
        ("readme-L412-timeslicing-replicas10.yaml", "time_slicing", 10, False, False, None),
        ("readme-L436-timeslicing-rename-replicas10.yaml", "time_slicing", 10, False, True, None),
        ("readme-L551-mps-replicas10.yaml", "mps", 10, False, False, None),
        ("readme-L575-mps-rename-replicas10.yaml", "mps", 10, False, True, None),
        # Flags only, no sharing section: exclusive GPUs.
        ("readme-L231-flags-config.yaml", "none", None, False, False, "none"),
    ],
)
def test_realworld_device_plugin_configs(sample, mode, replicas, fail_gt_one, rename, mig_strategy):
    text = realworld("device-plugin", sample).read_text()
    snapshot = normalise([configmap("gpu-operator", "plugin-config", {"any": text})], **PLATFORM)
    (config,) = snapshot.sharing_configs
    assert (config.mode, config.replicas) == (mode, replicas)
    assert (config.fail_requests_greater_than_one, config.rename_by_default) == (
        fail_gt_one,
        rename,
    )
    assert config.mig_strategy == mig_strategy
    assert config.resources == (("nvidia.com/gpu",) if mode != "none" else ())


def test_realworld_helm_values_are_not_a_sharing_config():
    text = realworld("device-plugin", "helm-values.yaml").read_text()
    snapshot = normalise(
        [configmap("nvidia-device-plugin", "values", {"values.yaml": text})],
        configured_platform=("nvidia-device-plugin",),
    )
    assert (snapshot.configmaps, snapshot.sharing_configs) == ((), ())


def test_realworld_mig_parted_configmap_embedded_as_text():
    objects = load_snapshot_objects(
        [realworld("mig", "gpu-operator-default-mig-parted-config-configmap.yaml")]
    )
    (cm,) = normalise(objects, configured_platform=("FILLED BY THE OPERATOR",)).configmaps
    assert (cm.namespace, cm.name, cm.purpose) == (
        "FILLED BY THE OPERATOR",
        "default-mig-parted-config",
        "mig_parted",
    )


# --- real third-party samples ------------------------------------------------------------------


def _sample(name: str) -> list[dict[str, Any]]:
    return load_snapshot_objects([realworld("k8s-manifests", name)])


def test_realworld_checkov_pod_with_null_containers():
    (obj,) = _sample("checkov-AllowedCapabilitiesSysAdmin__pod-FAILED2.yaml")
    result = pod_from_template(obj)
    assert result is not None
    assert (result.name, result.containers) == ("security-context-demo-1", ())
    # normalise() tolerates it too once the namespace a live API would report is there.
    obj["metadata"]["namespace"] = "default"
    assert normalise([obj]).pods[0].containers == ()


def test_realworld_gpu_operator_driver_daemonset():
    objects = _sample("gpu-operator-golden-driver-minimal.yaml")
    snapshot = normalise(objects)
    (workload,) = snapshot.workloads
    assert (workload.kind, workload.namespace, workload.name) == (
        "DaemonSet",
        "test-operator",
        "nvidia-gpu-driver-ubuntu22.04-7c6d7bd86b",
    )
    assert workload.images["nvidia-driver-ctr"] == "nvcr.io/nvidia/driver:525.85.03-ubuntu22.04"
    # The startup-probe ConfigMap is a shell script: dropped, and no warning for it.
    assert (snapshot.configmaps, snapshot.warnings) == ((), ())
    assert snapshot.counts["ServiceAccount"] == 1
    (daemonset,) = [o for o in objects if o["kind"] == "DaemonSet"]
    result = pod_from_template(daemonset)
    assert result is not None
    assert result.host_pid is True
    by_name = {c.name: c for c in result.containers}
    assert by_name["k8s-driver-manager"].privileged and by_name["k8s-driver-manager"].init
    assert by_name["nvidia-driver-ctr"].privileged
    host_paths = {v.host_path for v in result.volumes if v.kind == "hostPath"}
    assert len(host_paths) == 14
    assert {"/", "/sys", "/dev/log", "/run/nvidia"} <= host_paths


def test_realworld_driver_pod_gives_the_node_driver_version():
    (daemonset,) = [
        o for o in _sample("gpu-operator-golden-driver-minimal.yaml") if o["kind"] == "DaemonSet"
    ]
    driver_pod = {
        "kind": "Pod",
        "metadata": {
            "name": "nvidia-gpu-driver-ubuntu22.04-7c6d7bd86b-q2x9z",
            "namespace": "test-operator",
        },
        "spec": {**daemonset["spec"]["template"]["spec"], "nodeName": "gpu-a10-01"},
        "status": {"phase": "Running"},
    }
    # The driver's DaemonSet runs in the operator's namespace, the platform's.
    nodes = [node("gpu-a10-01", {"nvidia.com/gpu.count": "1"}), platform_namespace("test-operator")]
    result = only_node([*nodes, driver_pod])
    assert (result.driver_version, result.driver_version_source) == ("525.85.03", "driver-pod")


def test_realworld_device_plugin_job_limits():
    (job,) = _sample("device-plugin-testdata-job-1.yaml")
    result = pod_from_template(job)
    assert result is not None
    (container,) = result.containers
    assert (container.gpu_limits, container.gpu_requests) == ({"nvidia.com/gpu": "1"}, {})
    assert result.gpu_resources == {"nvidia.com/gpu": 1}
    assert (result.owner_kind, result.name) == ("Job", "j-e2e-1")
    assert result.tolerations == (
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    )


def test_realworld_gpu_pod_integer_limit():
    (obj,) = _sample("gpu-operator-tests-gpu-pod.yaml")
    result = pod_from_template(obj)
    assert result is not None
    assert result.containers[0].gpu_limits == {"nvidia.com/gpu": "1"}


def test_realworld_shared_t4_deployment_and_node():
    (deployment,) = _sample("gpu-operator-tests-plugin-test-deployment.yaml")
    result = pod_from_template(deployment)
    assert result is not None
    assert result.node_selector == {"nvidia.com/gpu.product": "Tesla-T4-SHARED"}
    assert result.containers[0].allow_privilege_escalation is False
    # A node carrying that product label: a T4 whose GPU is shared.
    t4 = only_node([node("gpu-t4-01", result.node_selector, capacity={"nvidia.com/gpu": "4"})])
    assert (t4.gpu_model, t4.sharing_strategy, t4.gpu_count) == ("Tesla-T4", "time_slicing", None)


def test_realworld_static_device_plugin():
    (ds,) = _sample("device-plugin-static-daemonset.yml")
    result = pod_from_template(ds)
    assert result is not None
    (container,) = result.containers
    assert (
        container.privileged,
        container.allow_privilege_escalation,
        container.capabilities_drop,
    ) == (False, False, ("ALL",))
    assert result.volumes == (
        Volume("kubelet-device-plugins-dir", "/var/lib/kubelet/device-plugins", "hostPath"),
    )
    assert result.namespace == "kube-system"


def test_realworld_privileged_device_plugin_with_service_account():
    snapshot = normalise(_sample("device-plugin-privileged-with-service-account.yml"))
    (ns,) = snapshot.namespaces
    assert ns.labels == {"pod-security.kubernetes.io/enforce": "privileged"}
    (role,) = snapshot.roles
    assert role.rules[1].verbs == ("use",) and role.rules[1].resource_names == ("privileged",)
    (binding,) = snapshot.bindings
    assert binding.subjects == (
        Subject("ServiceAccount", "nvidia-device-plugin", "nvidia-device-plugin"),
    )
    assert snapshot.workloads[0].images == {
        "nvidia-device-plugin-ctr": "nvcr.io/nvidia/k8s-device-plugin:v0.19.1"
    }


@pytest.mark.parametrize(
    ("sample", "container", "added"),
    [
        (
            "kubescape-rule-privileged-container__pod__input_pod.yaml",
            "test-container",
            ("NET_ADMIN", "SYS_ADMIN"),
        ),
        (
            "kubescape-insecure-capabilities__workloads__input_deployment.yaml",
            "php",
            ("MAC_OVERRIDE", "AUDIT_CONTROL"),
        ),
        ("checkov-AllowedCapabilitiesSysAdmin__pod-FAILED.yaml", "sec-ctx-1", ("SYS_ADMIN",)),
    ],
)
def test_realworld_added_capabilities(sample, container, added):
    (obj,) = _sample(sample)
    result = pod_from_template(obj)
    assert result is not None
    assert {c.name: c.capabilities_add for c in result.containers}[container] == added


@pytest.mark.parametrize(
    ("sample", "host_pid", "host_ipc"),
    [
        ("checkov-ShareHost__cronjob-hostresources-FAILED.yaml", True, True),
        ("checkov-ShareHost__privilegedPod-PASS.yaml", False, False),
        ("kubescape-host-pid-ipc-privileges__workload__input_deployment.yaml", True, True),
    ],
)
def test_realworld_host_namespaces(sample, host_pid, host_ipc):
    (obj,) = _sample(sample)
    result = pod_from_template(obj)
    assert result is not None
    assert (result.host_pid, result.host_ipc) == (host_pid, host_ipc)
