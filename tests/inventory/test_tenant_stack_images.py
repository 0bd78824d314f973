"""Only the platform's pods give a node its GPU stack (DESIGN §2 tenants are untrusted, §7
versions from the GPU Operator's pods, unknown never guessed): a tenant's pod running the
driver's, the plugin's or any stack image is no version of the node's (rtself2 k43, k46, k47)."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.sources.normalise import normalise
from tests.inventory.normalise_helpers import PLATFORM, controller, ctr, node, pod

TENANT = "health-ai"
GPU = {"nvidia.com/gpu.count": "1"}
# Every versioned stack component, each at a version no platform pod runs.
STACK = [
    ("driver", "nvcr.io/nvidia/driver:550.999.99-ubuntu22.04"),
    ("toolkit", "nvcr.io/nvidia/k8s/container-toolkit:v1.99.0-ubuntu20.04"),
    ("plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.99.0"),
    ("dcgm", "nvcr.io/nvidia/k8s/dcgm-exporter:9.9.9-9.9.9-ubuntu22.04"),
    ("mig", "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.99.0-ubuntu20.04"),
    ("dra", "nvcr.io/nvidia/k8s-dra-driver-gpu:v99.0.0"),
]
FIELDS = (
    "driver_version",
    "container_toolkit_version",
    "device_plugin_version",
    "dcgm_exporter_version",
    "mig_manager_version",
    "dra_driver_version",
)


def _gpu_node(labels: dict[str, str] | None = None) -> dict[str, Any]:
    return node("gpu-1", {**GPU, **(labels or {})}, capacity={"nvidia.com/gpu": "1"})


def _stack_pod(namespace: str, name: str = "evil") -> dict[str, Any]:
    return pod(namespace, name, *(ctr(n, image) for n, image in STACK), node_name="gpu-1")


def _namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def _gpu_1(objects: list[dict[str, Any]], **kwargs: Any):
    kwargs.setdefault("configured_platform", PLATFORM["configured_platform"])
    (found,) = [n for n in normalise(objects, **kwargs).nodes if n.name == "gpu-1"]
    return found


@pytest.mark.parametrize(
    "claim",
    [
        {"tenant_namespaces": (TENANT,)},  # the tenant registry's
        {"label": {"gpuposture.io/tenant": "health"}},  # claimed by the namespace's label
        # Labelled the platform's too: a tenant's namespace never becomes the platform's.
        {"label": {"gpuposture.io/tenant": "health", "gpuposture.io/platform": "true"}},
    ],
)
def test_a_tenants_stack_images_give_the_node_no_version(claim):
    objects = [_gpu_node(), _namespace(TENANT, **claim.get("label", {})), _stack_pod(TENANT)]
    found = _gpu_1(objects, tenant_namespaces=claim.get("tenant_namespaces", ()))
    assert {f: getattr(found, f) for f in FIELDS} == dict.fromkeys(FIELDS)
    assert found.driver_version_source is None
    assert not any(TENANT in where for where in found.deployed.values()), found.deployed


def test_a_namespace_no_tenant_claims_gives_the_node_its_versions():
    # DESIGN §7: the driver "from the image tag of the GPU Operator driver pod on that node".
    # A snapshot of its pods without their DaemonSet does not place its namespace among the
    # platform's (stack_alone), but no tenant runs there: its pods are the node's stack.
    found = _gpu_1([_gpu_node(), _stack_pod("gpu-operator")])
    assert all(getattr(found, f) for f in FIELDS), {f: getattr(found, f) for f in FIELDS}
    assert found.driver_version_source == "driver-pod"


def test_the_platforms_stack_pod_still_gives_every_version_beside_a_tenants():
    objects = [_gpu_node(), _stack_pod("gpu-operator", "stack"), _stack_pod(TENANT)]
    objects[1]["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/driver:550.90.07-ubuntu22.04"
    found = _gpu_1(objects, tenant_namespaces=(TENANT,))
    assert (found.driver_version, found.driver_version_source) == ("550.90.07", "driver-pod")
    assert (found.container_toolkit_version, found.device_plugin_version) == ("1.99.0", "0.99.0")
    assert (found.dcgm_exporter_version, found.mig_manager_version) == ("9.9.9-9.9.9", "0.99.0")
    assert found.dra_driver_version == "99.0.0"
    assert found.deployed["driver"] == "pod gpu-operator/stack"


def test_a_tenant_daemonset_of_the_plugin_in_its_own_namespace_gives_no_version():
    # Its images alone would make it a standalone plugin's namespace (stack_namespaces): the
    # tenant's claim keeps it the tenant's, and its plugin's tag no version of the node's.
    image = "nvcr.io/nvidia/k8s-device-plugin:v0.1.0"
    objects = [
        _gpu_node(),
        _namespace("nvidia-device-plugin", **{"gpuposture.io/tenant": "health"}),
        controller("DaemonSet", "nvidia-device-plugin", "nvidia-device-plugin", image),
        pod(
            "nvidia-device-plugin",
            "plugin-x",
            ctr("nvidia-device-plugin-ctr", image),
            node_name="gpu-1",
        ),
    ]
    assert _gpu_1(objects).device_plugin_version is None


@pytest.mark.parametrize("namespace", ["kube-system", "nvidia-device-plugin"])
def test_a_standalone_plugin_installed_by_helm_still_gives_its_version(namespace):
    """The standalone chart's DaemonSet, in kube-system or a namespace of its own (which its
    images alone make the stack's where it holds nothing else)."""
    image = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
    owner = {"ownerReferences": [{"kind": "DaemonSet", "name": "nvdp", "controller": True}]}
    plugin = pod(namespace, "nvdp-x", ctr("nvidia-device-plugin-ctr", image), node_name="gpu-1")
    plugin["metadata"].update(owner)
    objects = [_gpu_node(), controller("DaemonSet", namespace, "nvdp", image), plugin]
    assert _gpu_1(objects, configured_platform=()).device_plugin_version == "0.17.0"


def test_a_tenants_vgpu_guest_driver_image_is_no_driver_of_the_guest():
    guest = {"nvidia.com/vgpu.present": "true"}
    evil = ctr("x", "docker.io/evil/vgpu-guest-driver-4:999.1.1-ubuntu22.04")
    objects = [_gpu_node(guest), pod(TENANT, "evil", evil, node_name="gpu-1")]
    found = _gpu_1(objects, tenant_namespaces=(TENANT,))
    assert (found.driver_version, found.driver_version_source) == (None, None)
    assert "driver" not in found.deployed
    # NVIDIA AI Enterprise's guest driver in the platform's namespace is the VM's driver.
    nvaie = ctr("x", "nvcr.io/nvaie/vgpu-guest-driver-4:535.104.05-ubuntu22.04")
    objects.append(pod("gpu-operator", "guest-driver", nvaie, node_name="gpu-1"))
    found = _gpu_1(objects, tenant_namespaces=(TENANT,))
    assert (found.driver_version, found.driver_version_source) == (
        "535.104.05",
        "vgpu-guest-driver-pod",
    )
    assert "vGPU guest driver" in found.deployed["driver"]


def test_a_tenants_vgpu_manager_image_makes_no_vgpu_manager_of_the_node():
    driver = ctr("driver", "nvcr.io/nvidia/driver:550.90.07-ubuntu22.04")
    manager = ctr("m", "nvcr.io/nvidia/vgpu-manager:550.90.05-ubuntu22.04")
    objects = [
        _gpu_node(),
        pod("gpu-operator", "driver", driver, node_name="gpu-1"),
        pod(TENANT, "evil", manager, node_name="gpu-1"),
    ]
    found = _gpu_1(objects, tenant_namespaces=(TENANT,))
    assert (found.driver_version, found.driver_version_source) == ("550.90.07", "driver-pod")


def test_stack004_says_the_driver_is_unknown_where_only_a_tenant_runs_its_image():
    from tests.posture.gpu_access_world import run, world

    objects = [
        _namespace(TENANT, **{"gpuposture.io/tenant": "health"}),
        _gpu_node({"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}),
        pod(TENANT, "evil", ctr("x", STACK[0][1]), node_name="gpu-1"),
    ]
    (draft,) = [d for d in run("STACK-004", world(objects, ())) if d.subject_name == "gpu-1"]
    assert "driver_version" in draft.evidence["unknown"]


def test_a_tenants_stack_pod_is_no_component_to_upgrade():
    # Who upgrades the node's DRA driver or device plugin is never "the tenant's pod".
    found = _gpu_1([_gpu_node(), _stack_pod(TENANT)], tenant_namespaces=(TENANT,))
    assert not any(TENANT in who for who in found.upgrade_by.values()), found.upgrade_by


def test_stack_findings_name_no_tenant_pod_as_the_change():
    from posture.rules.stack.upgrade_by import paths_of
    from tests.posture.gpu_access_world import world

    objects = [_namespace(TENANT, **{"gpuposture.io/tenant": "health"})]
    objects += [_gpu_node(), _stack_pod(TENANT)]
    inputs = world(objects, ())
    (gpu,) = [n for n in inputs.snapshot.nodes if n.name == "gpu-1"]
    paths = paths_of(inputs, gpu)
    assert not any(TENANT in str(p.change) for p in paths.values()), paths
