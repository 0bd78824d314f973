"""The NVIDIA DRA driver's kubelet plugin (k8s-dra-driver-gpu) is the node's GPU allocator
where DRA replaces the device plugin (DESIGN §2 device plugin layer): a versioned component
of its own, shown with the node's components, judged against bulletins naming "NVIDIA DRA
Driver for GPUs", and unknown (STACK-004) where its slices show it serves the node but its
version cannot be read. Never the device plugin's version: NVIDIA numbers the two apart."""

from __future__ import annotations

import json

from inventory.bulletins.csaf.document import parse_advisory
from inventory.bulletins.csaf.fixes import fixes
from inventory.node_components import deployed_unknown, node_components
from inventory.patching.status import BELOW_BASELINE, node_patch_status
from inventory.sources.normalise import normalise
from tests.posture.dra_world import device_class, resource_slice
from tests.posture.gpu_access_world import OPERATOR_NS, namespace, node

DRA_NS = "nvidia-dra-driver-gpu"
IMAGE = "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.3.2"
PRODUCT = "NVIDIA DRA Driver for GPUs"


def _plugin_pod(image: str = IMAGE) -> dict:
    """The kubelet plugin's pod as the DRA driver's chart runs it: two containers."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nvidia-dra-driver-gpu-kubelet-plugin-x7k2p", "namespace": DRA_NS},
        "spec": {
            "nodeName": "gpu-a",
            "containers": [
                {"name": "compute-domains", "image": image},
                {"name": "gpus", "image": image},
            ],
        },
        "status": {"phase": "Running"},
    }


def _gpu_node(*objects: dict):
    # A pod of kube-system and one of the GPU stack (the toolkit, on another node): the
    # snapshot read every namespace's pods, the stack's included, so absence is absence.
    other = _plugin_pod("busybox:1.36") | {"metadata": {"name": "dns", "namespace": "kube-system"}}
    toolkit = _plugin_pod("nvcr.io/nvidia/k8s/container-toolkit:v1.17.8-ubuntu20.04") | {
        "metadata": {"name": "nvidia-container-toolkit-x9", "namespace": OPERATOR_NS}
    }
    toolkit["spec"] = {"nodeName": "gpu-z", "containers": toolkit["spec"]["containers"][:1]}
    snapshot = normalise(
        [namespace(DRA_NS), node("gpu-a", gpus=4), other, toolkit, *objects],
        configured_platform=(OPERATOR_NS, DRA_NS),
    )
    (found,) = snapshot.nodes
    return found


def test_the_kubelet_plugin_is_the_nodes_dra_driver_never_its_device_plugin():
    found = _gpu_node(_plugin_pod())
    assert found.dra_driver_version == "25.3.2"
    assert found.device_plugin_version is None
    components = node_components(found)
    assert components["dra_driver"]["state"] == "installed"
    assert components["dra_driver"]["version"] == "25.3.2"
    assert DRA_NS in (components["dra_driver"]["source"] or "")
    assert components["device_plugin"]["state"] == "not_installed"
    assert "dra_driver" not in deployed_unknown(found)


def test_a_node_without_dra_has_no_dra_driver_and_stack004_does_not_ask_for_one():
    found = _gpu_node()
    assert node_components(found)["dra_driver"]["state"] == "not_installed"
    assert "dra_driver" not in deployed_unknown(found)


def test_slices_publishing_the_nodes_gpus_prove_the_plugin_runs_its_version_unknown():
    found = _gpu_node(device_class(), resource_slice("gpu-a"))
    entry = node_components(found)["dra_driver"]
    assert entry["state"] == "unknown" and "ResourceSlices" in (entry["source"] or "")
    assert "dra_driver" in deployed_unknown(found)  # STACK-004 counts it
    pinned = _plugin_pod(image="nvcr.io/nvidia/k8s-dra-driver-gpu@sha256:" + "a" * 64)
    found = _gpu_node(device_class(), resource_slice("gpu-a"), pinned)
    assert "dra_driver" in deployed_unknown(found)


def _advisory() -> dict:
    product = {"product_id": "A", "name": f"{PRODUCT} vers:generic/<25.3.3"}
    return {
        "document": {
            "category": "csaf_security_advisory",
            "csaf_version": "2.0",
            "title": "DRA driver advisory",
            "publisher": {"category": "vendor", "name": "NVIDIA", "namespace": "https://e.x"},
            "tracking": {
                "id": "EX-DRA-1",
                "status": "final",
                "version": "1",
                "initial_release_date": "2026-07-15T00:00:00Z",
                "current_release_date": "2026-07-15T00:00:00Z",
                "revision_history": [],
            },
        },
        "product_tree": {
            "branches": [
                {
                    "category": "vendor",
                    "name": "NVIDIA",
                    "branches": [
                        {
                            "category": "product_name",
                            "name": PRODUCT,
                            "branches": [
                                {
                                    "category": "product_version_range",
                                    "name": "vers:generic/<25.3.3",
                                    "product": product,
                                }
                            ],
                        }
                    ],
                }
            ]
        },
        "vulnerabilities": [{"cve": "CVE-2099-0002", "product_status": {"known_affected": ["A"]}}],
    }


def test_a_bulletin_naming_the_dra_driver_judges_the_nodes_dra_driver():
    (found,) = fixes(parse_advisory(json.loads(json.dumps(_advisory()))))[0]
    assert found.component.kind == "dra_driver"
    status = node_patch_status(
        {"driver_version": "570.172.08", "dra_driver_version": "25.3.2"}, [found]
    )
    assert status.status == BELOW_BASELINE
    assert [e.component for e in status.exposures] == ["dra_driver"]
    # The device plugin's version is not the DRA driver's: no pairing across the two.
    plugin_only = node_patch_status(
        {"driver_version": "570.172.08", "device_plugin_version": "25.3.2"}, [found]
    )
    assert plugin_only.exposures == ()


def test_the_dra_driver_is_upgraded_by_its_own_chart():
    from inventory.snapshot import Node as SnapNode
    from inventory.sources.pods import pod_from_object
    from inventory.stack_managers import upgrade_paths, who

    pod = pod_from_object(_plugin_pod(), DRA_NS)
    path = upgrade_paths(SnapNode(name="gpu-a"), (), [pod])["dra_driver"]
    assert who(path).startswith("own chart") and DRA_NS in path.change
    assert who(upgrade_paths(SnapNode(name="gpu-a"), (), [])["dra_driver"]) == "unknown"


def test_stack004_names_a_dra_driver_serving_the_node_at_an_unknown_version():
    from tests.posture.gpu_access_world import run, world

    pinned = _plugin_pod(image="nvcr.io/nvidia/k8s-dra-driver-gpu@sha256:" + "b" * 64)
    # The driver's namespace is the platform's: only its pods give the node its DRA driver.
    platform = namespace(DRA_NS, **{"gpuposture.io/platform": "true"})
    objects = [platform, node("gpu-a", gpus=4), device_class(), resource_slice(), pinned]
    (draft,) = run("STACK-004", world(objects, ()))
    assert "dra_driver_version" in draft.evidence["unknown"]
    known = _plugin_pod()
    objects[-1] = known
    drafts = run("STACK-004", world(objects, ()))
    assert all("dra_driver_version" not in d.evidence["unknown"] for d in drafts)


# The driver's name before NVIDIA renamed it k8s-dra-driver-gpu (its chart's default image).
OLD_IMAGE = "nvcr.io/nvidia/cloud-native/k8s-dra-driver:v0.1.0"


def test_the_drivers_old_image_name_is_read_as_the_dra_driver_and_judged():
    for image in (OLD_IMAGE, "ghcr.io/nvidia/k8s-dra-driver:v0.1.0"):
        found = _gpu_node(_plugin_pod(image))
        assert found.dra_driver_version == "0.1.0"
        assert node_components(found)["dra_driver"]["state"] == "installed"
        assert found.device_plugin_version is None
    (fix,) = fixes(parse_advisory(json.loads(json.dumps(_advisory()))))[0]
    status = node_patch_status(
        {"driver_version": "570.172.08", "dra_driver_version": found.dra_driver_version}, [fix]
    )
    assert status.status == BELOW_BASELINE
    assert [e.component for e in status.exposures] == ["dra_driver"]


def test_other_vendors_dra_drivers_are_never_read_as_nvidias():
    for image in (
        "intel/intel-gpu-resource-driver:v0.5.1",
        "registry.k8s.io/dra-example-driver/dra-example-driver:v0.1.0",
    ):
        found = _gpu_node(_plugin_pod(image))
        assert found.dra_driver_version is None
        assert node_components(found)["dra_driver"]["state"] == "not_installed"
        assert "dra_driver" not in deployed_unknown(found)
