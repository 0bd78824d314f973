"""Which GPU-stack components a node runs, read from real-shaped objects (`kubectl get -o json`
as a GPU Operator cluster prints them): installed, unknown, or not installed (pure)."""

from __future__ import annotations

from typing import Any

from inventory.node_components import deployed_unknown, node_components
from inventory.sources.normalise import normalise

NS = "gpu-operator"
NVCR = "nvcr.io/nvidia"
PLUGIN = f"{NVCR}/k8s-device-plugin:v0.17.3"
TOOLKIT = f"{NVCR}/k8s/container-toolkit:v1.17.8-ubuntu20.04"
DCGM = f"{NVCR}/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04"
OPERATOR = f"{NVCR}/gpu-operator:v25.3.2"
TOLERATE_GPU = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
DEPLOY = "nvidia.com/gpu.deploy."


def node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                "nvidia.com/gpu.count": "8",
                "nvidia.com/cuda.driver-version.full": "570.172.08",
                **labels,
            },
        },
        "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]},
        "status": {"capacity": {"nvidia.com/gpu": "8"}},
    }


def daemonset(name: str, image: str, component: str | None = None) -> dict[str, Any]:
    """An operator DaemonSet: scheduled on nodes labelled nvidia.com/gpu.deploy.<component>."""
    selector = {f"{DEPLOY}{component}": "true"} if component else {}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": name}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [{"name": name, "image": image}],
                    "nodeSelector": selector,
                    "tolerations": TOLERATE_GPU,
                    "priorityClassName": "system-node-critical",
                },
            },
        },
        "status": {"desiredNumberScheduled": 1, "numberReady": 1},
    }


def ds_pod(ds: str, node_name: str, image: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{ds}-{node_name[-1]}7k2p",
            "namespace": NS,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": ds,
                    "controller": True,
                    "uid": "0f0e8a4e-1c44-4c0e-9d3e-6d1b2f0c9a11",
                }
            ],
        },
        "spec": {"nodeName": node_name, "containers": [{"name": ds, "image": image}]},
        "status": {"phase": "Running"},
    }


def operator_deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "gpu-operator", "namespace": NS},
        "spec": {
            "template": {"spec": {"containers": [{"name": "gpu-operator", "image": OPERATOR}]}}
        },
    }


def operator_cluster() -> list[dict[str, Any]]:
    """Three H100 nodes: the admin switched the DCGM exporter off on gpu-a (the operator's
    per-node label), gpu-b runs it, gpu-c should run it but its pod is gone."""
    objects: list[dict[str, Any]] = [
        operator_deployment(),
        daemonset("nvidia-device-plugin-daemonset", PLUGIN, "device-plugin"),
        daemonset("nvidia-container-toolkit-daemonset", TOOLKIT, "container-toolkit"),
        daemonset("nvidia-dcgm-exporter", DCGM, "dcgm-exporter"),
        node("gpu-a", **{f"{DEPLOY}dcgm-exporter": "false"}),
        node("gpu-b", **{f"{DEPLOY}dcgm-exporter": "true"}),
        node("gpu-c", **{f"{DEPLOY}dcgm-exporter": "true"}),
    ]
    for name in ("gpu-a", "gpu-b", "gpu-c"):
        objects.append(ds_pod("nvidia-device-plugin-daemonset", name, PLUGIN))
        objects.append(ds_pod("nvidia-container-toolkit-daemonset", name, TOOLKIT))
    objects.append(ds_pod("nvidia-dcgm-exporter", "gpu-b", DCGM))
    return objects


def nodes_of(objects: list[dict[str, Any]]):
    return {n.name: n for n in normalise(objects).nodes}


def test_a_dcgm_exporter_switched_off_on_a_node_is_not_installed():
    nodes = nodes_of(operator_cluster())
    components = node_components(nodes["gpu-a"])
    assert components["dcgm_exporter"]["state"] == "not_installed"
    assert components["dcgm_exporter"]["version"] is None
    assert "nvidia.com/gpu.deploy.dcgm-exporter=true" in components["dcgm_exporter"]["source"]
    assert components["device_plugin"] == {
        "state": "installed",
        "version": "0.17.3",
        "source": "pod gpu-operator/nvidia-device-plugin-daemonset-a7k2p",
    }
    assert components["gpu_operator"]["state"] == "installed"
    assert deployed_unknown(nodes["gpu-a"]) == []


def test_a_pod_runs_it_or_its_daemonset_says_it_should():
    nodes = nodes_of(operator_cluster())
    assert node_components(nodes["gpu-b"])["dcgm_exporter"]["version"] == "4.2.3-4.1.3"
    missing = node_components(nodes["gpu-c"])["dcgm_exporter"]
    assert missing["state"] == "unknown" and "should run a pod here" in missing["source"]
    assert deployed_unknown(nodes["gpu-c"]) == ["dcgm_exporter"]


def test_a_daemonset_that_does_not_tolerate_the_pool_taint_is_not_there():
    objects = operator_cluster()
    objects[4]["spec"]["taints"].append(
        {"key": "gpuposture.io/trust-class", "value": "sensitive", "effect": "NoSchedule"}
    )
    objects[4]["metadata"]["labels"][f"{DEPLOY}dcgm-exporter"] = "true"
    reason = node_components(nodes_of(objects)["gpu-a"])["dcgm_exporter"]["source"]
    assert "gpuposture.io/trust-class=sensitive:NoSchedule" in reason


def test_without_the_operator_and_without_exporter_both_are_not_installed():
    """A standalone device-plugin install: no operator, no DCGM exporter anywhere; the toolkit
    runs on the host (no pod) and stays unknown, never 'not installed'."""
    objects = [
        {
            **daemonset("nvidia-device-plugin", PLUGIN),
            "metadata": {"name": "nvidia-device-plugin", "namespace": "kube-system"},
        },
        node("gpu-a"),
        {**ds_pod("nvidia-device-plugin", "gpu-a", PLUGIN)},
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "coredns-5d78c9869d-9qv7x", "namespace": "kube-system"},
            "spec": {
                "nodeName": "cpu-1",
                "containers": [
                    {"name": "coredns", "image": "registry.k8s.io/coredns/coredns:v1.11.1"}
                ],
            },
            "status": {"phase": "Running"},
        },
    ]
    gpu = nodes_of(objects)["gpu-a"]
    states = {c: e["state"] for c, e in node_components(gpu).items()}
    assert states == {
        "driver": "installed",
        "container_toolkit": "unknown",
        "device_plugin": "installed",
        "gpu_operator": "not_installed",
        "dcgm_exporter": "not_installed",
        "mig_manager": "not_installed",
        "dra_driver": "not_installed",  # no DRA kubelet plugin either
        "firmware": "unknown",
    }
    assert deployed_unknown(gpu) == ["container_toolkit"]


def test_a_snapshot_without_pods_says_nothing_is_absent():
    gpu = nodes_of([node("gpu-a")])["gpu-a"]
    assert gpu.not_installed == {}
    states = {c: e["state"] for c, e in node_components(gpu).items()}
    assert states["dcgm_exporter"] == states["gpu_operator"] == "unknown"
    # Without pods nothing shows a DCGM exporter deployed: only the core stack is reported.
    assert deployed_unknown(gpu) == ["container_toolkit", "device_plugin"]


def test_the_stored_dict_reads_the_same():
    from inventory.snapshot import to_dict

    gpu = nodes_of(operator_cluster())["gpu-a"]
    assert node_components(to_dict(gpu)) == node_components(gpu)


def test_pods_without_their_daemonsets_leave_a_missing_pod_unknown():
    """A snapshot of pods alone (`kubectl get nodes,pods`): the exporter's DaemonSet runs it on
    gpu-b, but where it schedules is not in the snapshot, so gpu-a and gpu-c are unknown, not
    'not installed' (fail closed: the patch judgement stays unknown)."""
    objects = [o for o in operator_cluster() if o["kind"] != "DaemonSet"]
    nodes = nodes_of(objects)
    assert node_components(nodes["gpu-a"])["dcgm_exporter"]["state"] == "unknown"
    assert node_components(nodes["gpu-b"])["dcgm_exporter"]["state"] == "installed"
    # No pod of a MIG manager anywhere: not deployed in this cluster at all.
    assert node_components(nodes["gpu-a"])["mig_manager"]["state"] == "not_installed"
    assert deployed_unknown(nodes["gpu-a"]) == []  # unknown, but nothing shows it deployed


def _tenant_pod(node_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "trainer-0", "namespace": "team-a"},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "main", "image": "registry.example.com/trainer:1.0"}],
        },
        "status": {"phase": "Running"},
    }


def test_a_node_offering_gpus_has_a_device_plugin_the_snapshot_does_not_show():
    """Nodes and pods only (no DaemonSets, no plugin pod): the node offers nvidia.com/gpu, which
    only a registered device plugin advertises, so the plugin is deployed with its version
    unknown (STACK-004), never "not installed" and left out of the patch judgement."""
    gpu = nodes_of([node("gpu-a"), _tenant_pod("gpu-a")])["gpu-a"]
    plugin = node_components(gpu)["device_plugin"]
    assert plugin["state"] == "unknown"
    assert "offers nvidia.com/gpu" in plugin["source"]
    assert "device_plugin" in deployed_unknown(gpu)
    # The DCGM exporter is not needed to offer GPUs, but nothing read shows where the stack
    # runs (no DaemonSet, no pod of it, none of kube-system): unknown, never "not installed".
    assert node_components(gpu)["dcgm_exporter"]["state"] == "unknown"
    assert "dcgm_exporter" not in deployed_unknown(gpu)  # nothing shows it deployed either
    # kube-system's pods alone do not show the stack's namespace was read (rtself11 k38).
    system = nodes_of([node("gpu-a"), _tenant_pod("gpu-a"), _system_pod()])["gpu-a"]
    assert node_components(system)["dcgm_exporter"]["state"] == "unknown"
    # A pod of the stack, wherever it runs, does: its namespace's pods were read.
    wide = nodes_of([node("gpu-a"), _tenant_pod("gpu-a"), _system_pod(), _stack_pod()])["gpu-a"]
    assert node_components(wide)["dcgm_exporter"]["state"] == "not_installed"


def _system_pod() -> dict[str, Any]:
    """CoreDNS: a pod of kube-system, in every export of a running cluster's pods."""
    pod = _tenant_pod("cpu-1")
    pod["metadata"] = {"name": "coredns-5d78c9869d-x2k4f", "namespace": "kube-system"}
    return pod


def _stack_pod() -> dict[str, Any]:
    """A GPU stack pod on another node: the stack's namespace was exported."""
    pod = _tenant_pod("gpu-z")
    pod["metadata"] = {"name": "nvidia-container-toolkit-x9", "namespace": NS}
    pod["spec"]["containers"] = [{"name": "nvidia-container-toolkit-ctr", "image": TOOLKIT}]
    return pod


def test_a_plugin_gone_from_a_node_leaves_its_capacity_but_no_allocatable():
    gone = node("gpu-a")
    gone["status"]["allocatable"] = {"nvidia.com/gpu": "0"}
    gpu = nodes_of([gone, _tenant_pod("gpu-a"), _system_pod(), _stack_pod()])["gpu-a"]
    assert node_components(gpu)["device_plugin"]["state"] == "not_installed"


def test_a_bottlerocket_nvidia_node_runs_its_device_plugin_as_a_host_service():
    """Bottlerocket's nvidia variant runs NVIDIA's device plugin from its OS image, no pod: the
    node says so (its version follows the Bottlerocket release), still unknown as a version, and
    never "not installed" even where the node offers no GPU."""
    bottlerocket = node("gpu-a")
    bottlerocket["status"]["nodeInfo"] = {"osImage": "Bottlerocket OS 1.26.2 (aws-k8s-1.31-nvidia)"}
    gpu = nodes_of([bottlerocket, _tenant_pod("gpu-a")])["gpu-a"]
    plugin = node_components(gpu)["device_plugin"]
    assert (plugin["state"], plugin["version"]) == ("unknown", None)
    assert "runs the device plugin as a host service" in plugin["source"]
    assert "follows the Bottlerocket release" in plugin["source"]
    assert "aws-k8s-1.31-nvidia" in plugin["source"]
    assert "device_plugin" in deployed_unknown(gpu)  # STACK-004 still asks for its version
    bottlerocket["status"]["allocatable"] = {"nvidia.com/gpu": "0"}
    quiet = nodes_of([bottlerocket, _tenant_pod("gpu-a")])["gpu-a"]
    assert node_components(quiet)["device_plugin"]["state"] == "unknown"
    # Another Bottlerocket variant carries no NVIDIA plugin: what the capacity says, as before.
    bottlerocket["status"]["nodeInfo"] = {"osImage": "Bottlerocket OS 1.26.2 (aws-k8s-1.31)"}
    other = nodes_of([bottlerocket, _tenant_pod("gpu-a"), _system_pod(), _stack_pod()])["gpu-a"]
    assert node_components(other)["device_plugin"]["state"] == "not_installed"


def test_a_driver_read_from_its_label_says_so_beside_the_pod_that_deploys_it():
    """Mid-upgrade, the new driver pod (570.195.03) has not loaded its driver: the version is
    GFD's label (what the loaded driver reports), and the source says that, naming the pod,
    not the pod alone (rtupgrade k47)."""
    driver = f"{NVCR}/driver:570.195.03-ubuntu22.04"
    objects = [
        operator_deployment(),
        daemonset("nvidia-driver-daemonset", driver, "driver"),
        node("gpu-a", **{f"{DEPLOY}driver": "true"}),
        ds_pod("nvidia-driver-daemonset", "gpu-a", driver),
    ]
    entry = node_components(nodes_of(objects)["gpu-a"])["driver"]
    assert entry["version"] == "570.172.08"
    assert entry["source"].startswith("GPU Feature Discovery's label")
    assert "nvidia-driver-daemonset" in entry["source"]
