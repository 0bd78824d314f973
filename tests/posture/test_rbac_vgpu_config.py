"""K8S-004 on the vGPU Device Manager's ConfigMap: the one the ClusterPolicy names as
`vgpuDeviceManager.config.name` (default-vgpu-devices-config when unset) decides which vGPU
types, and so how many VMs, each GPU of a vm-vgpu node is split into. A tenant group that may
update or patch it steers GPU sharing as one that may edit the device plugin's config; it was
not reported (the ConfigMap was dropped as no GPU configuration at all)."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.sources.normalise import normalise
from posture.inputs import PostureInputs, TenantInfo
from tests.posture.builders import trust_class
from tests.posture.gpu_access_world import OPERATOR_NS, configmap, namespace, run
from tests.posture.test_rules_cross_tenant import binding, role

VGPU_CONFIG = (
    "version: v1\nvgpu-configs:\n  A100-3-20C:\n  - devices: all\n    vgpu-devices:\n"
    "      A100-3-20C: 2\n"
)
INITECH = TenantInfo(
    "initech", "Initech", trust_class("internal"), ("initech",), ("group:initech-devs",)
)


def cluster_policy(vgpu_config: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"sandboxWorkloads": {"enabled": True}}
    if vgpu_config is not None:
        spec["vgpuDeviceManager"] = {"enabled": True, "config": vgpu_config}
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": spec,
    }


def vgpu_world(
    cm_name: str, *, policy: dict[str, Any] | None, data: str = VGPU_CONFIG
) -> PostureInputs:
    editor = [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": [cm_name],
            "verbs": ["get", "update", "patch"],
        }
    ]
    objects = [
        namespace(OPERATOR_NS),
        namespace("initech"),
        configmap(OPERATOR_NS, cm_name, {"config.yaml": data}),
        role(OPERATOR_NS, "vgpu-config-editor", editor),
        binding(
            "initech-vgpu-config",
            "vgpu-config-editor",
            "Group:initech-devs",
            ns=OPERATOR_NS,
            kind="Role",
        ),
        *([policy] if policy is not None else []),
    ]
    snapshot = normalise(objects, configured_platform=(OPERATOR_NS,))
    return PostureInputs(cluster="test", snapshot=snapshot, tenants=(INITECH,))


@pytest.mark.parametrize(
    ("cm_name", "policy"),
    [
        pytest.param(
            "vgpu-devices-config",
            cluster_policy({"name": "vgpu-devices-config", "default": "default"}),
            id="named-by-the-clusterpolicy",
        ),
        pytest.param("default-vgpu-devices-config", cluster_policy(None), id="operator-default"),
        pytest.param("vgpu-devices-config", None, id="no-clusterpolicy-read-its-content-says"),
    ],
)
def test_a_tenant_that_may_patch_the_vgpu_device_manager_config_is_reported(cm_name, policy):
    (draft,) = run("K8S-004", vgpu_world(cm_name, policy=policy))
    assert draft.tenants == ("initech",)
    assert (draft.subject_kind, draft.subject_name) == ("RoleBinding", "initech-vgpu-config")
    (target,) = draft.evidence["objects"]
    assert target["object"] == f"ConfigMap {OPERATOR_NS}/{cm_name}"
    assert target["purpose"] == "vgpu_device_manager"
    assert set(target["verbs"]) == {"patch", "update"}


def test_the_vgpu_config_is_kept_by_its_keys_and_hash_not_its_text():
    policy = cluster_policy({"name": "vgpu-devices-config"})
    inputs = vgpu_world("vgpu-devices-config", policy=policy)
    (cm,) = inputs.snapshot.configmaps
    assert (cm.purpose, cm.keys, cm.data) == ("vgpu_device_manager", ("config.yaml",), {})
    assert cm.data_hash


def test_another_configmap_of_the_operators_namespace_is_not_the_vgpu_config():
    """The ClusterPolicy names the vGPU config: a ConfigMap of another name, whatever it
    holds, is not GPU configuration, and a grant on it is no K8S-004."""
    policy = cluster_policy({"name": "vgpu-devices-config"})
    assert run("K8S-004", vgpu_world("scratch", policy=policy)) == []
    # Without a ClusterPolicy, a platform ConfigMap that is no vGPU config is not one either.
    assert run("K8S-004", vgpu_world("scratch", policy=None, data="hello: world\n")) == []


def _device_manager(mounts: str) -> dict[str, Any]:
    """The vGPU Device Manager's DaemonSet, mounting its config from ConfigMap `mounts`."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvidia-vgpu-device-manager", "namespace": OPERATOR_NS},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "nvidia-vgpu-device-manager",
                            "image": "nvcr.io/nvidia/cloud-native/vgpu-device-manager:v0.3.0",
                        }
                    ],
                    "volumes": [{"name": "vgpu-config", "configMap": {"name": mounts}}],
                }
            }
        },
    }


def test_the_config_the_device_managers_daemonset_mounts_is_the_one_kept():
    """No ClusterPolicy read: the DaemonSet says which ConfigMap is the vGPU config, and
    another of the same content in the platform namespace is not."""
    objects = [
        namespace(OPERATOR_NS),
        _device_manager("site-vgpu"),
        configmap(OPERATOR_NS, "site-vgpu", {"config.yaml": VGPU_CONFIG}),
        configmap(OPERATOR_NS, "old-vgpu", {"config.yaml": VGPU_CONFIG}),
    ]
    snapshot = normalise(objects, configured_platform=(OPERATOR_NS,))
    kept = {(c.name, c.purpose) for c in snapshot.configmaps}
    assert kept == {("site-vgpu", "vgpu_device_manager")}
