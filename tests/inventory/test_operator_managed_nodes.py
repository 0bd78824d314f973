"""The GPU Operator is a node's component only where it manages the node. On AKS a pool created
with `--skip-gpu-driver-install` runs the Operator, tainted for a trust class its operands
tolerate; another pool keeps the AKS-managed driver and NVIDIA's device plugin from the AKS docs'
DaemonSet (`gpu-resources`), tainted `sku=gpu:NoSchedule`, which no operand tolerates. An Operator
upgrade cannot change that pool: its version is not the node's, and its bulletin rows are not the
node's exposures (DESIGN §7/§8). Our own small world, as `kubectl get -o json` prints it (pure)."""

from __future__ import annotations

import json
from typing import Any

from inventory.bulletins.csaf.document import parse_advisory
from inventory.bulletins.csaf.fixes import fixes
from inventory.node_components import node_components
from inventory.patching.status import NodeStack, node_patch_status
from inventory.sources.normalise import normalise
from inventory.stack_managers import upgraded_by
from posture.inputs import PostureInputs
from tests.inventory.normalise_helpers import controller, ctr, node, pod
from tests.posture.builders import run
from tests.realworld import realworld

OPERATOR_NS = "gpu-operator"
NVCR = "nvcr.io/nvidia"
OPERATOR = f"{NVCR}/gpu-operator:v24.9.0"
OPERANDS = {
    "nvidia-driver-daemonset": f"{NVCR}/driver:550.90.07-ubuntu22.04",
    "nvidia-container-toolkit-daemonset": f"{NVCR}/k8s/container-toolkit:v1.16.1-ubuntu20.04",
    "nvidia-device-plugin-daemonset": f"{NVCR}/k8s-device-plugin:v0.16.2-ubi8",
    "nvidia-dcgm-exporter": f"{NVCR}/k8s/dcgm-exporter:3.3.8-3.6.0-ubuntu22.04",
}
AKS_PLUGIN = f"{NVCR}/k8s-device-plugin:v0.15.0"
CLASS_TAINT = {"key": "gpuposture.io/trust-class", "value": "external", "effect": "NoSchedule"}
SKU_TAINT = {"key": "sku", "value": "gpu", "effect": "NoSchedule"}
A100 = {"nvidia.com/gpu": "2"}


def aks_node(name: str, pool: str, taint: dict[str, str], **labels: str) -> dict[str, Any]:
    return node(
        name,
        {
            "kubernetes.azure.com/agentpool": pool,
            "kubernetes.azure.com/accelerator": "nvidia",
            "kubernetes.azure.com/node-image-version": "AKSUbuntu-2204gen2containerd-202411.12.0",
            "node.kubernetes.io/instance-type": "Standard_NC48ads_A100_v4",
            **labels,
        },
        taints=[taint],
        capacity=A100,
        allocatable=A100,
    )


def daemonset(namespace: str, name: str, image: str, tolerations: list[dict]) -> dict[str, Any]:
    ds = controller("DaemonSet", namespace, name, image)
    ds["spec"]["template"]["spec"]["tolerations"] = tolerations
    return ds


def ds_pod(namespace: str, ds: str, image: str, node_name: str) -> dict[str, Any]:
    found = pod(namespace, f"{ds}-{node_name[-4:]}", ctr(ds, image), node_name=node_name)
    found["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": ds, "controller": True}]
    return found


def aks_world(*, gpuop_labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Pool gpuop: the Operator's operands (they tolerate the trust-class taint). Pool gpunp:
    the AKS-managed driver and the AKS docs' device plugin (it tolerates sku=gpu)."""
    operand_tolerations = [{"key": "gpuposture.io/trust-class", "operator": "Exists"}]
    objects = [
        aks_node("aks-gpuop-0", "gpuop", CLASS_TAINT, **(gpuop_labels or {})),
        aks_node("aks-gpunp-0", "gpunp", SKU_TAINT),
        controller("Deployment", OPERATOR_NS, "gpu-operator", OPERATOR),
        daemonset(
            "gpu-resources",
            "nvidia-device-plugin-daemonset",
            AKS_PLUGIN,
            [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
        ),
        ds_pod("gpu-resources", "nvidia-device-plugin-daemonset", AKS_PLUGIN, "aks-gpunp-0"),
    ]
    for name, image in OPERANDS.items():
        objects.append(daemonset(OPERATOR_NS, name, image, operand_tolerations))
        objects.append(ds_pod(OPERATOR_NS, name, image, "aks-gpuop-0"))
    return objects


def nodes_of(objects: list[dict[str, Any]]):
    return {n.name: n for n in normalise(objects).nodes}


def test_the_operator_is_not_installed_on_a_pool_its_operands_do_not_tolerate():
    gpunp = nodes_of(aks_world())["aks-gpunp-0"]
    assert gpunp.gpu_operator_version is None
    operator = node_components(gpunp)["gpu_operator"]
    assert operator["state"] == "not_installed"
    assert "Deployment gpu-operator/gpu-operator" in operator["source"]
    assert "does not manage this node" in operator["source"]
    assert "sku=gpu:NoSchedule" in operator["source"]
    # The AKS plugin stays the node's device plugin.
    assert gpunp.device_plugin_version == "0.15.0"


def test_the_pool_the_operator_manages_is_unchanged():
    gpuop = nodes_of(aks_world())["aks-gpuop-0"]
    assert gpuop.gpu_operator_version == "24.9.0"
    assert gpuop.deployed["gpu_operator"] == "Deployment gpu-operator/gpu-operator"
    assert node_components(gpuop)["gpu_operator"]["state"] == "installed"


def _operator_fixes():
    data = json.loads(realworld("csaf", "nvidia-5659.json").read_text())
    return fixes(parse_advisory(data))[0]


def _patch(node):
    versions = {
        "gpu_operator_version": node.gpu_operator_version,
        "device_plugin_version": node.device_plugin_version,
    }
    return node_patch_status(versions, _operator_fixes(), NodeStack(frozenset(node.not_installed)))


def test_the_operators_bulletin_rows_are_not_the_unmanaged_nodes_exposures():
    nodes = nodes_of(aks_world())
    # 5659 names GPU Operator <= 25.3.1: the managed pool is judged on it...
    assert "gpu_operator" in {e.component for e in _patch(nodes["aks-gpuop-0"]).exposures}
    # ...the other pool is not concerned: the Operator is not there.
    unmanaged = _patch(nodes["aks-gpunp-0"])
    assert "gpu_operator" not in {e.component for e in unmanaged.exposures}
    absent = [e for e in unmanaged.not_affected if e.component == "gpu_operator"]
    assert absent and all(e.reason["code"] == "component_not_present" for e in absent)


def test_the_unmanaged_pools_driver_is_the_aks_node_images():
    gpunp = nodes_of(aks_world())["aks-gpunp-0"]
    assert upgraded_by(gpunp, [], [])["driver"] == "node image"
    world = PostureInputs(cluster="aks", snapshot=normalise(aks_world()), tenants=())
    (draft,) = [d for d in run("STACK-004", world) if d.subject_name == "aks-gpunp-0"]
    how = draft.evidence["make_known"]["driver_version"]
    assert "the AKS node image AKSUbuntu-2204gen2containerd-202411.12.0" in how
    assert "GPU Operator" not in how


def test_with_no_operand_daemonset_read_the_deploy_labels_say_where_it_manages():
    """A snapshot with the Operator's Deployment but none of its DaemonSets or pods: the labels
    it writes on the nodes it manages decide; a node with none stays as it was (nothing read
    says the Operator does not manage it)."""
    objects = [
        aks_node("labelled", "gpuop", CLASS_TAINT, **{"nvidia.com/gpu.deploy.driver": "true"}),
        aks_node("off", "gpunp", SKU_TAINT, **{"nvidia.com/gpu.deploy.operands": "false"}),
        aks_node("bare", "gpunp", SKU_TAINT),
        controller("Deployment", OPERATOR_NS, "gpu-operator", OPERATOR),
        pod("team-a", "trainer", ctr("main"), node_name="bare"),
    ]
    nodes = nodes_of(objects)
    assert nodes["labelled"].gpu_operator_version == "24.9.0"
    assert nodes["bare"].gpu_operator_version == "24.9.0"
    assert nodes["off"].gpu_operator_version is None
    assert "nvidia.com/gpu.deploy.operands=false" in nodes["off"].not_installed["gpu_operator"]


def test_an_operand_pod_on_the_node_shows_it_manages_the_node_whatever_its_spec_says():
    """A DaemonSet whose spec (an older one, or hand-edited) excludes the node while its pod
    still runs there: the pod is what runs."""
    objects = aks_world()
    objects.append(
        ds_pod(OPERATOR_NS, "nvidia-dcgm-exporter", OPERANDS["nvidia-dcgm-exporter"], "aks-gpunp-0")
    )
    gpunp = nodes_of(objects)["aks-gpunp-0"]
    assert gpunp.gpu_operator_version == "24.9.0"
