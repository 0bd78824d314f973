"""A node whose GPU count is unknown (no GPU Feature Discovery, so no `nvidia.com/gpu.count`)
weighs in the score as the GPUs the snapshot proves it has, never as one GPU: the GPUs its pods
hold, else those its capacity lists (divided by the replicas of a time-sliced resource), else 1
(posture.rules.node_gpus). Red-team rtholdout15 k39/k40: a critical container-toolkit escape on
such a node, whose pods hold 8 GPUs, weighed as one GPU and ranked its tenant below a tenant
with only a high finding on an 8-GPU node. Objects as `kubectl get -A -o json` prints them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from inventory.bulletins.store import bulletins_import_paths
from inventory.services import cluster_sync_from_snapshot
from inventory.sources.normalise import normalise
from inventory.sync import cluster_get_or_create
from posture.inputs import PostureInputs
from posture.models import Finding
from posture.services import posture_evaluate
from tenants.models import Tenant
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.conftest import api_client
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import container, namespace, pod, run
from tests.posture.test_stack_alone import controller, owned
from tests.realworld import realworld

BATCH = tenant("batch", "internal", ("batch-etl",))
INFER = tenant("infer", "internal", ("infer-a",))
CLASS_TAINT = {"key": "gpuposture.io/trust-class", "value": "internal", "effect": "NoSchedule"}
COUNT = "nvidia.com/gpu.count"
STACK_NS = "gpu-operator"
DRIVER = "nvcr.io/nvidia/driver:580.159.03-ubuntu22.04"
PLUGIN = "nvcr.io/nvidia/k8s-device-plugin:v0.18.2"
CURRENT_TOOLKIT = "nvcr.io/nvidia/k8s/container-toolkit:v1.19.1"
# Below 1.17.8: CVE-2025-23266 (NVIDIAScape, CVSS 9.0), bulletin 5659: STACK-002 critical.
OLD_TOOLKIT = "nvcr.io/nvidia/k8s/container-toolkit:v1.17.6-ubuntu20.04"
BULLETINS = ("5659", "5703", "5747", "5818", "5821", "5850", "5857")


def gpu_node(
    name: str,
    *,
    count: int | None,
    capacity: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    tainted: bool = True,
) -> dict[str, Any]:
    """An L40S node NFD found (pci-10de); GPU Feature Discovery's count label only where
    `count` is given (no other GFD label: the node's model is unknown either way)."""
    found = {
        "kubernetes.io/hostname": name,
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "nvidia.com/gpu.present": "true",
        **({COUNT: str(count)} if count is not None else {}),
        **(labels or {}),
    }
    gpus = {"nvidia.com/gpu": "8"} if capacity is None else capacity
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": found},
        "spec": {"taints": [CLASS_TAINT]} if tainted else {},
        "status": {
            "capacity": {"cpu": "112", "memory": "2113470256Ki", "pods": "110", **gpus},
            "allocatable": {"cpu": "110", "memory": "2100000000Ki", "pods": "110", **gpus},
            "nodeInfo": {"containerRuntimeVersion": "containerd://1.7.24"},
        },
    }


def stack(toolkits: dict[str, str]) -> list[dict[str, Any]]:
    """The driver, toolkit and device plugin DaemonSets of a GPU stack namespace, with a pod of
    each on every node (`toolkits`: node -> the toolkit image its pod runs)."""
    objects: list[dict[str, Any]] = [namespace(STACK_NS)]
    for name, ctr_name, images in (
        ("nvidia-driver-daemonset", "nvidia-driver-ctr", dict.fromkeys(toolkits, DRIVER)),
        ("nvidia-container-toolkit-daemonset", "nvidia-container-toolkit-ctr", toolkits),
        ("nvidia-device-plugin-daemonset", "nvidia-device-plugin", dict.fromkeys(toolkits, PLUGIN)),
    ):
        template = next(iter(images.values()))
        objects.append(controller("DaemonSet", STACK_NS, name, container(ctr_name, template)))
        for node_name, image in images.items():
            made = pod(STACK_NS, f"{name}-{node_name}", container(ctr_name, image))
            made["spec"]["nodeName"] = node_name
            objects.append(owned(made, "DaemonSet", name))
    return objects


def tenant_pod(ns: str, node_name: str, gpus: str = "8", resource: str = "nvidia.com/gpu") -> dict:
    """A tenant's training pod on `node_name` holding `gpus` of `resource`."""
    main = container("main", "nvcr.io/nvidia/pytorch:25.09-py3", gpu={resource: gpus})
    made = pod(ns, f"train-{node_name}", main, node_name=node_name)
    made["spec"]["tolerations"] = [{**CLASS_TAINT, "operator": "Equal"}]
    return made


def batch_world(count: int | None) -> list[dict[str, Any]]:
    """bat-1, of `count` GPUs per GFD (None: no GFD there), runs a toolkit below 1.17.8 and
    batch's pod holding 8 GPUs; inf-1, a known 8-GPU node on current versions but not tainted
    for a class (K8S-002, high), runs infer's pod holding 8 GPUs."""
    return [
        gpu_node("bat-1", count=count),
        gpu_node("inf-1", count=8, tainted=False),
        *stack({"bat-1": OLD_TOOLKIT, "inf-1": CURRENT_TOOLKIT}),
        namespace("batch-etl"),
        namespace("infer-a"),
        tenant_pod("batch-etl", "bat-1"),
        tenant_pod("infer-a", "inf-1"),
    ]


def inputs_of(objects: list[dict[str, Any]]) -> PostureInputs:
    snapshot = normalise(objects, configured_platform=(STACK_NS,))
    return PostureInputs(cluster="t", snapshot=snapshot, tenants=(BATCH, INFER))


def node_finding(check_id: str, objects: list[dict[str, Any]], node_name: str):
    (draft,) = [d for d in run(check_id, inputs_of(objects)) if d.subject_name == node_name]
    return draft


# --- the exposure of a node finding ---------------------------------------------------------


def test_a_node_without_gfds_count_spans_the_gpus_its_pods_hold_as_a_counted_one_does():
    """The same node finding (STACK-004: the node's driver is unknown to both) on a node GFD
    counts 8 GPUs and on the same node without the label, whose pod holds 8: both span 8, and
    the unknown one says how they were counted."""
    worlds = {
        count: [
            gpu_node("n-1", count=count),
            namespace("batch-etl"),
            tenant_pod("batch-etl", "n-1"),
        ]
        for count in (8, None)
    }
    counted = node_finding("STACK-004", worlds[8], "n-1")
    unknown = node_finding("STACK-004", worlds[None], "n-1")
    assert counted.exposure == unknown.exposure == 8
    assert "exposure_gpus_basis" not in counted.evidence  # a known count needs no word
    assert unknown.evidence["exposure_gpus"] == 8
    basis = unknown.evidence["exposure_gpus_basis"]
    assert basis.startswith("8 GPUs held by pods on the node (nvidia.com/gpu)")
    assert "GPU count is unknown" in basis


def test_an_unknown_count_node_with_no_gpu_pod_spans_the_gpus_its_capacity_lists():
    """No pod holds a GPU: the 8 whole GPUs the device plugin advertises are there still."""
    finding = node_finding("STACK-004", [gpu_node("n-1", count=None)], "n-1")
    assert finding.exposure == 8
    assert finding.evidence["exposure_gpus_basis"].startswith(
        "8 GPUs in the node's capacity (nvidia.com/gpu=8)"
    )


def test_a_time_sliced_capacity_or_holding_counts_gpus_not_replicas():
    """4 replicas per GPU: capacity 8 is 2 GPUs, and a pod holding 8 replicas holds at least
    2 GPUs, never 8."""
    sliced = {"nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.replicas": "4"}
    node = gpu_node("n-1", count=None, labels=sliced)
    alone = node_finding("STACK-004", [node], "n-1")
    held = node_finding(
        "STACK-004", [node, namespace("batch-etl"), tenant_pod("batch-etl", "n-1")], "n-1"
    )
    assert alone.exposure == held.exposure == 2
    assert "nvidia.com/gpu=8, at most 4 per GPU" in alone.evidence["exposure_gpus_basis"]


def test_another_vendors_whole_gpus_count_and_vgpus_do_not_count_as_gpus():
    """An AMD node (no NVIDIA count at all) lists 8 whole amd.com/gpu: K8S-002 there spans 8.
    A vGPU host's capacity and its pods' holds count vGPUs of a type (L40S-12Q: several per
    GPU, how many not shown): no proof of more than one GPU, so 1, said as such."""
    amd = gpu_node("mi-1", count=None, capacity={"amd.com/gpu": "8"}, tainted=False)
    for nvidia in ("nvidia.com/gpu.present", "feature.node.kubernetes.io/pci-10de.present"):
        del amd["metadata"]["labels"][nvidia]
    held = tenant_pod("batch-etl", "mi-1", "4", "amd.com/gpu")
    finding = node_finding("K8S-002", [amd, namespace("batch-etl"), held], "mi-1")
    assert finding.exposure == 8
    assert finding.evidence["exposure_gpus_basis"].startswith(
        "8 GPUs in the node's capacity (amd.com/gpu=8)"
    )

    vgpu = "nvidia.com/NVIDIA_L40S-12Q"
    host = gpu_node(
        "vg-1",
        count=None,
        capacity={vgpu: "16"},
        labels={"nvidia.com/gpu.workload.config": "vm-vgpu"},
        tainted=False,
    )
    held = tenant_pod("batch-etl", "vg-1", "2", vgpu)
    finding = node_finding("K8S-002", [host, namespace("batch-etl"), held], "vg-1")
    assert finding.exposure == 1
    assert finding.evidence["exposure_gpus_basis"].startswith(
        f"1 GPU held by pods on the node ({vgpu}, shared)"
    )


def test_an_unknown_count_node_with_no_gpu_pod_and_no_gpu_capacity_weighs_one():
    """A Jetson-like node (no device plugin, no GFD): a pod runs under NVIDIA's runtime class
    and holds no GPU resource. Nothing proves more than one GPU, and the finding says so."""
    node = gpu_node("jetson-1", count=None, capacity={})
    runtime_pod = pod("batch-etl", "edge-0", container(), node_name="jetson-1")
    runtime_pod["spec"]["runtimeClassName"] = "nvidia"
    finding = node_finding("STACK-004", [node, namespace("batch-etl"), runtime_pod], "jetson-1")
    assert finding.exposure == 1
    assert finding.evidence["exposure_gpus"] == 1
    assert "no pod holds a GPU there" in finding.evidence["exposure_gpus_basis"]


# --- the tenant's risk points and order (synced, bulletins imported, scored) --------------------


def score(tmp_path, objects: list[dict[str, Any]], lead) -> dict[str, dict]:
    """The world synced as cluster `sea`, judged against NVIDIA's bulletins and scored: the
    tenants as the API lists them, by slug (a later call syncs the same cluster again)."""
    document = {"tenants": [
        {"slug": "batch", "name": "Batch", "trust_class": "internal", "namespaces": ["batch-etl"]},
        {"slug": "infer", "name": "Infer", "trust_class": "internal", "namespaces": ["infer-a"]},
    ]}  # fmt: skip
    tenants_apply(specs=parse_tenants_document(document))
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    cluster_sync_from_snapshot(cluster=cluster_get_or_create(name="sea"), paths=[path])
    bulletins_import_paths(paths=[str(realworld("csaf", f"nvidia-{n}.json")) for n in BULLETINS])
    posture_evaluate()
    return {row["slug"]: row for row in listed(lead)}


def listed(lead) -> list[dict]:
    """GET /api/v1/tenants/: most risk first."""
    return api_client(lead).get("/api/v1/tenants/").json()["results"]


def escape_on_bat() -> Finding:
    (finding,) = Finding.objects.filter(
        check_id="STACK-002", subject_name="bat-1", status="open", severity="critical"
    )
    return finding


def contribution(lead, slug: str, finding: Finding) -> dict:
    """The finding's line in the tenant's "why this score" (the posture API's contributions)."""
    tenant_id = Tenant.objects.get(slug=slug).id
    posture = api_client(lead).get(f"/api/v1/tenants/{tenant_id}/posture/").json()
    (line,) = [c for c in posture["contributions"] if c["finding_id"] == finding.id]
    return line


@pytest.mark.django_db
def test_the_critical_escape_weighs_the_8_gpus_batch_holds_whether_gfd_counts_them_or_not(
    tmp_path, personas
):
    """The two worlds differ only by GFD's count label on bat-1: STACK-002 critical there spans
    8 GPUs in both, and batch's risk points are the same (before: 1 GPU without the label,
    a quarter of the critical's points)."""
    lead = personas["security_lead"]
    counted = score(tmp_path, batch_world(8), lead)
    finding = escape_on_bat()
    assert finding.exposure == 8
    assert "exposure_gpus_basis" not in finding.evidence
    assert contribution(lead, "batch", finding)["points"] == 40 * 2 * 4  # x internal x (1+log2 8)

    unknown = score(tmp_path, batch_world(None), lead)
    finding = escape_on_bat()
    assert finding.exposure == 8
    assert finding.evidence["exposure_gpus_basis"].startswith("8 GPUs held by pods on the node")
    line = contribution(lead, "batch", finding)
    assert (line["exposure"], line["points"]) == (8, 320)
    assert unknown["batch"]["risk"] == counted["batch"]["risk"]
    assert unknown["infer"]["risk"] == counted["infer"]["risk"]


@pytest.mark.django_db
def test_a_critical_on_an_unknown_count_node_holding_8_gpus_ranks_above_a_high_on_an_8_gpu_node(
    tmp_path, personas
):
    """rtholdout15's shape: batch's critical toolkit escape on a node GFD does not count, whose
    pod holds 8 GPUs, against infer's high (an untainted class pool) on a counted 8-GPU node.
    batch ranks first (before: batch's critical weighed 80 points, infer's high 120)."""
    lead = personas["security_lead"]
    tenants = score(tmp_path, batch_world(None), lead)
    assert Finding.objects.filter(check_id="K8S-002", subject_name="inf-1", status="open").exists()
    assert not Finding.objects.filter(subject_name="inf-1", severity="critical").exists()
    order = [row["slug"] for row in listed(lead) if row["slug"] in ("batch", "infer")]
    assert order == ["batch", "infer"]
    assert tenants["batch"]["risk"] > tenants["infer"]["risk"]
    assert escape_on_bat().exposure == 8
