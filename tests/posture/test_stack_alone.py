"""Where no RBAC was read, the GPU stack's images place a namespace among the platform's only if
it holds nothing else (inventory.sources.stack_alone). Red-team finding (rtcloud item 1): an
unclaimed namespace with one Deployment running NVIDIA's public device-plugin image and a
privileged GPU Job became a platform namespace, so no TEN-001, no POD-001, no SHARE-001 against
the tenants it time-sliced a GPU with. Objects as `kubectl get -A -o json` prints them (most
exports hold no RBAC), read by the normaliser; no GPUPOSTURE_PLATFORM_NAMESPACES."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.platform import cluster_platform_namespaces
from inventory.services import cluster_sync_from_snapshot
from inventory.sources.normalise import normalise
from inventory.sync import cluster_get_or_create
from posture.inputs import PostureInputs
from posture.rules import CHECKS, FindingDraft
from tests.inventory.normalise_helpers import TIME_SLICING_LOOSE
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import configmap, container, namespace, node, pod, run

ALPHA = tenant("alpha", "internal")
BETA = tenant("beta", "external")
PLUGIN = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
OPERATOR = "nvcr.io/nvidia/gpu-operator:v24.9.2"
VALIDATOR = "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v24.9.2"
TOOLKIT = "nvcr.io/nvidia/k8s/container-toolkit:v1.17.5-ubuntu20.04"
NFD = "registry.k8s.io/nfd/node-feature-discovery:v0.16.6"
GPU = {"nvidia.com/gpu": "1"}
TS_CONFIG = TIME_SLICING_LOOSE
TS_NODE = {
    "nvidia.com/device-plugin.config": "ts",
    "nvidia.com/gpu.sharing-strategy": "time-slicing",
    "nvidia.com/gpu.replicas": "4",
}


def controller(kind: str, ns: str, name: str, *containers: dict, **spec: Any) -> dict:
    """A DaemonSet, Deployment or Job as the API returns it."""
    template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": list(containers)}}
    template["spec"].update(spec)
    api = "batch/v1" if kind == "Job" else "apps/v1"
    body: dict[str, Any] = {"template": template}
    if kind != "Job":
        body["selector"] = {"matchLabels": {"app": name}}
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": name, "namespace": ns},
        "spec": body,
    }


def owned(made: dict, kind: str, name: str, template_hash: str | None = None) -> dict:
    """`made` (a pod) as its controller makes it."""
    api = "batch/v1" if kind == "Job" else "apps/v1"
    made["metadata"]["ownerReferences"] = [
        {"apiVersion": api, "kind": kind, "name": name, "controller": True}
    ]
    if template_hash:
        made["metadata"]["labels"]["pod-template-hash"] = template_hash
    return made


def plugin_chart(ns: str = "nvidia-device-plugin") -> list[dict]:
    """NVIDIA's device-plugin Helm chart in its own namespace: the plugin DaemonSet (with its
    config-manager sidecar reading the time-slicing config) and its pod."""
    volume = [{"name": "config", "configMap": {"name": "plugin-config"}}]
    ctr = container("nvidia-device-plugin-ctr", PLUGIN)
    sidecar = container("config-manager", PLUGIN)
    return [
        namespace(ns),
        configmap(ns, "plugin-config", {"ts": TS_CONFIG}),
        controller("DaemonSet", ns, "nvidia-device-plugin", ctr, sidecar, volumes=volume),
        owned(
            pod(ns, "nvidia-device-plugin-x2k4p", ctr, sidecar), "DaemonSet", "nvidia-device-plugin"
        ),
    ]


def privileged_gpu_job(ns: str, name: str = "crack-bench") -> list[dict]:
    bench = container(
        "bench", "docker.io/someone/gpu-bench:latest", gpu=GPU, securityContext={"privileged": True}
    )
    return [
        controller("Job", ns, name, bench, restartPolicy="Never"),
        owned(pod(ns, f"{name}-7x2kq", bench), "Job", name),
    ]


def tenants_on_the_gpu() -> list[dict]:
    return [
        node("gpu-a", gpus=1, capacity={"nvidia.com/gpu": "4"}, labels=TS_NODE),
        namespace("alpha"),
        namespace("beta"),
        pod("alpha", "a", container(gpu=GPU)),
        pod("beta", "b", container(gpu=GPU)),
    ]


def inputs_of(objects: list[dict]) -> PostureInputs:
    return PostureInputs(cluster="test", snapshot=normalise(objects), tenants=(ALPHA, BETA))


def severity(draft: FindingDraft) -> str:
    return draft.severity or CHECKS[draft.check_id].severity


# --- the red team's world, our own small version --------------------------------------------


@pytest.mark.parametrize("kind", ["Deployment", "DaemonSet"])
def test_a_plugin_image_beside_a_privileged_gpu_job_does_not_make_the_platform(kind):
    """The unclaimed `research-sandbox` runs the plugin's public image (the red team's 1-replica
    Deployment, or a DaemonSet) and a privileged GPU Job on the GPU it time-slices with alpha
    (internal) and beta (external): it is unclassified and judged as such."""
    canary = controller(kind, "research-sandbox", "plugin-canary", container("plugin", PLUGIN))
    objects = [
        *tenants_on_the_gpu(),
        *plugin_chart(),
        namespace("research-sandbox"),
        canary,
        *privileged_gpu_job("research-sandbox"),
    ]
    inputs = inputs_of(objects)
    assert "research-sandbox" not in inputs.platform_namespaces
    assert "research-sandbox" not in inputs.snapshot.platform_namespaces
    (ten,) = run("TEN-001", inputs)
    assert (ten.subject_name, severity(ten)) == ("research-sandbox", "high")
    # The unclassified party's own (alpha and beta beside it are affected too: neighbours).
    (pod001,) = [d for d in run("POD-001", inputs) if d.evidence["tenant"] == "unclassified"]
    assert set(pod001.tenants) == {"alpha", "beta", "unclassified"}
    assert severity(pod001) == "critical"
    shared = {d.tenants: severity(d) for d in run("SHARE-001", inputs)}
    assert shared[("beta", "unclassified")] == "critical"
    assert ("alpha", "unclassified") in shared
    # The sync says why: a Deployment of the plugin places nothing; a DaemonSet would have,
    # but for the Job beside it.
    said = {
        "Deployment": "Deployment research-sandbox/plugin-canary runs the NVIDIA device plugin",
        "DaemonSet": "namespace research-sandbox runs the GPU stack's images",
    }
    assert [w for w in inputs.snapshot.warnings if w.startswith(said[kind])]


def test_the_refused_namespace_is_named_in_a_sync_warning():
    """A DaemonSet of the plugin's image would have placed it: the sync says why it did not,
    and what to do if it is the platform's after all."""
    canary = controller("DaemonSet", "research-sandbox", "plugin-canary", container("p", PLUGIN))
    snapshot = normalise(
        [
            node("gpu-a"),
            namespace("research-sandbox"),
            canary,
            *privileged_gpu_job("research-sandbox"),
        ]
    )
    (warning,) = [w for w in snapshot.warnings if "holds more than" in w]
    assert warning.startswith("namespace research-sandbox runs the GPU stack's images")
    assert "no ClusterRoleBinding" in warning
    # Each object with its namespace, so a tenant viewer's redaction hides them whole.
    assert "Job research-sandbox/crack-bench" in warning
    assert "pod research-sandbox/crack-bench-7x2kq (of Job research-sandbox/crack-bench)" in warning
    assert "gpuposture.io/platform=true" in warning


def test_a_genuine_device_plugin_chart_namespace_without_rbac_stays_the_platforms():
    objects = [*tenants_on_the_gpu(), *plugin_chart()]
    inputs = inputs_of(objects)
    assert "nvidia-device-plugin" in inputs.platform_namespaces
    assert "nvidia-device-plugin" in inputs.snapshot.platform_namespaces
    assert not [w for w in inputs.snapshot.warnings if "holds more than" in w]
    # Its config is read, so the node is known time-sliced; its privileged-free pods are
    # nobody's findings.
    assert [(c.namespace, c.replicas) for c in inputs.snapshot.sharing_configs] == [
        ("nvidia-device-plugin", 4)
    ]
    assert run("TEN-001", inputs) == []


# --- the GPU Operator's namespace -------------------------------------------------------------


def operator_namespace(ns: str = "gpu-operator") -> list[dict]:
    """The GPU Operator as its chart and ClusterPolicy install it: the operator's Deployment
    and pod, NFD's master Deployment and worker DaemonSet, operand DaemonSets and pods, and
    the validator's completed validation pods (owned by the ClusterPolicy; the plugin's asks
    for a GPU)."""
    operator = container("gpu-operator", OPERATOR)
    toolkit = container("nvidia-container-toolkit-ctr", TOOLKIT)
    plugin = container("nvidia-device-plugin", PLUGIN)
    nfd = container("worker", NFD)
    validation = container("plugin-validation", VALIDATOR, gpu=GPU)
    validator_pod = pod(ns, "nvidia-device-plugin-validator-9w2qz", validation)
    validator_pod["status"]["phase"] = "Succeeded"
    validator_pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "name": "cluster-policy"}
    ]
    return [
        namespace(ns),
        controller("Deployment", ns, "gpu-operator", operator),
        owned(
            pod(ns, "gpu-operator-7c9f5d8b6-x2k4p", operator),
            "ReplicaSet",
            "gpu-operator-7c9f5d8b6",
            "7c9f5d8b6",
        ),
        controller("Deployment", ns, "gpu-operator-node-feature-discovery-master", nfd),
        controller("DaemonSet", ns, "gpu-operator-node-feature-discovery-worker", nfd),
        owned(
            pod(ns, "gpu-operator-node-feature-discovery-worker-5k2jd", nfd),
            "DaemonSet",
            "gpu-operator-node-feature-discovery-worker",
        ),
        controller("DaemonSet", ns, "nvidia-container-toolkit-daemonset", toolkit),
        owned(
            pod(ns, "nvidia-container-toolkit-daemonset-h8v9c", toolkit),
            "DaemonSet",
            "nvidia-container-toolkit-daemonset",
        ),
        controller("DaemonSet", ns, "nvidia-device-plugin-daemonset", plugin),
        owned(
            pod(ns, "nvidia-device-plugin-daemonset-q8w2n", plugin),
            "DaemonSet",
            "nvidia-device-plugin-daemonset",
        ),
        controller("DaemonSet", ns, "nvidia-operator-validator", container("v", VALIDATOR)),
        validator_pod,
    ]


def test_the_gpu_operators_namespace_without_rbac_stays_the_platforms():
    inputs = inputs_of([node("gpu-a"), *operator_namespace()])
    assert "gpu-operator" in inputs.platform_namespaces
    assert not [w for w in inputs.snapshot.warnings if "holds more than" in w]
    assert run("TEN-001", inputs) == []


def test_a_tenants_gpu_job_planted_in_the_operators_namespace_unmakes_it_without_rbac():
    objects = [node("gpu-a"), *operator_namespace(), *privileged_gpu_job("gpu-operator")]
    inputs = inputs_of(objects)
    assert "gpu-operator" not in inputs.platform_namespaces
    assert "gpu-operator" not in inputs.snapshot.platform_namespaces
    (warning,) = [w for w in inputs.snapshot.warnings if "holds more than" in w]
    assert warning.startswith("namespace gpu-operator runs the GPU stack's images")
    assert [d.subject_name for d in run("TEN-001", inputs)] == ["gpu-operator"]
    assert {d.tenants for d in run("POD-001", inputs)} >= {("unclassified",)}


@pytest.mark.parametrize(
    "planted",
    [
        # A bare pod asking for a GPU, with the operator's own image.
        [pod("gpu-operator", "debug", container(image=OPERATOR, gpu=GPU))],
        # An operand-looking DaemonSet whose pods ask for a GPU.
        [controller("DaemonSet", "gpu-operator", "nvidia-x", container(image=TOOLKIT, gpu=GPU))],
        # A DaemonSet of the stack's image beside a sidecar of someone else's.
        [
            controller(
                "DaemonSet",
                "gpu-operator",
                "nvidia-y",
                container(image=TOOLKIT),
                container("miner", "docker.io/someone/xmrig:latest"),
            )
        ],
        # A pod of a ReplicaSet named like the operator's, running something else.
        [
            owned(
                pod("gpu-operator", "gpu-operator-6d8f-abcde", container(image="busybox:1.36")),
                "ReplicaSet",
                "gpu-operator-6d8f",
            )
        ],
        # A validation pod's shape in a namespace with no operator is not the operator's.
        [],
    ],
    ids=["bare-pod", "gpu-daemonset", "sidecar", "replicaset", "no-operator"],
)
def test_anything_beside_the_stack_unmakes_the_operators_namespace_without_rbac(planted):
    objects = [node("gpu-a"), *operator_namespace(), *planted]
    if not planted:  # the operator's Deployment and pod gone: its validation pod is foreign
        objects = [o for o in objects if "gpu-operator-7c9f5d8b6" not in str(o)]
        objects = [
            o
            for o in objects
            if o["metadata"]["name"] != "gpu-operator" or o["kind"] == "Namespace"
        ]
        # The plugin DaemonSet still places the namespace (a standalone plugin's shape).
    inputs = inputs_of(objects)
    assert "gpu-operator" not in inputs.platform_namespaces


def test_where_a_clusterrolebinding_vouches_for_it_the_namespace_stays_the_platforms():
    """The operator's chart binds its service account cluster-wide; only an admin can."""
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "gpu-operator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "x"},
        "subjects": [
            {"kind": "ServiceAccount", "name": "gpu-operator", "namespace": "gpu-operator"}
        ],
    }
    objects = [node("gpu-a"), *operator_namespace(), *privileged_gpu_job("gpu-operator"), binding]
    assert "gpu-operator" in inputs_of(objects).platform_namespaces


def test_where_rbac_was_read_but_names_it_not_its_operands_place_it_only_alone():
    """RBAC read, and no binding names the namespace: the operands beside the operator's image
    are still only images, held to the same rule."""
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "someone-else"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "x"},
        "subjects": [{"kind": "ServiceAccount", "name": "x", "namespace": "kube-system"}],
    }
    alone = [node("gpu-a"), *operator_namespace(), binding]
    assert "gpu-operator" in inputs_of(alone).platform_namespaces
    planted = [*alone, *privileged_gpu_job("gpu-operator")]
    assert "gpu-operator" not in inputs_of(planted).platform_namespaces


@pytest.mark.django_db
def test_pages_read_the_same_platform_namespaces_as_the_checks(tmp_path):
    import json

    path = tmp_path / "snapshot.json"
    objects = [
        node("gpu-a"),
        *operator_namespace(),
        *plugin_chart(),
        *privileged_gpu_job("gpu-operator"),
    ]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    cluster = cluster_get_or_create(name="planted")
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    platform = cluster_platform_namespaces(cluster)
    assert "nvidia-device-plugin" in platform
    assert "gpu-operator" not in platform
    run_ = cluster.sync_runs.order_by("-id").first()
    assert any("namespace gpu-operator runs the GPU stack" in w for w in run_.warnings)


def test_a_standalone_exporters_own_rolebinding_vouches_only_for_a_namespace_of_nothing_else():
    """dcgm-exporter's chart binds only a Role in its namespace, which whoever may edit the
    namespace can write too: beside a GPU Job it no longer makes the namespace the platform's."""
    exporter = container("exporter", "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04")
    role_binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "dcgm-exporter", "namespace": "gpu-monitoring"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-cm"},
        "subjects": [
            {"kind": "ServiceAccount", "name": "dcgm-exporter", "namespace": "gpu-monitoring"}
        ],
    }
    chart = [
        node("gpu-a"),
        namespace("gpu-monitoring"),
        controller("DaemonSet", "gpu-monitoring", "dcgm-exporter", exporter),
        owned(pod("gpu-monitoring", "dcgm-exporter-k2x8v", exporter), "DaemonSet", "dcgm-exporter"),
        role_binding,
    ]
    assert "gpu-monitoring" in inputs_of(chart).platform_namespaces
    planted = [*chart, *privileged_gpu_job("gpu-monitoring")]
    assert "gpu-monitoring" not in inputs_of(planted).platform_namespaces


def amd_operator_namespace(ns: str = "kube-amd-gpu") -> list[dict]:
    """AMD's GPU Operator as its chart installs it: the controller manager's Deployment and the
    device plugin, node labeller (the plugin's image) and metrics exporter DaemonSets."""
    operator = container("manager", "docker.io/rocm/gpu-operator:v1.2.0")
    plugin = container("device-plugin", "docker.io/rocm/k8s-device-plugin:1.31.0.6")
    labeller = container("node-labeller", "docker.io/rocm/k8s-device-plugin:labeller-1.31.0.6")
    exporter = container("metrics-exporter", "docker.io/rocm/device-metrics-exporter:v1.2.0")
    objects = [namespace(ns), controller("Deployment", ns, "amd-gpu-operator", operator)]
    for name, part in (
        ("default-device-plugin", plugin),
        ("default-node-labeller", labeller),
        ("default-metrics-exporter", exporter),
    ):
        objects += [
            controller("DaemonSet", ns, name, part),
            owned(pod(ns, f"{name}-x7k2p", part), "DaemonSet", name),
        ]
    return objects


def test_amds_operator_namespace_without_rbac_stays_the_platforms():
    """AMD's operands (its metrics exporter beside the namesakes of NVIDIA's operator and
    plugin) are its GPU stack: with no RBAC read, the namespace holds nothing else."""
    inputs = inputs_of([node("gpu-a"), *amd_operator_namespace()])
    assert "kube-amd-gpu" in inputs.platform_namespaces
    assert not [w for w in inputs.snapshot.warnings if "holds more than" in w]


def test_a_job_planted_beside_amds_operator_unmakes_its_namespace_without_rbac():
    objects = [node("gpu-a"), *amd_operator_namespace(), *privileged_gpu_job("kube-amd-gpu")]
    assert "kube-amd-gpu" not in inputs_of(objects).platform_namespaces
