"""The demo world is well-formed Kubernetes, deterministic, and holds the spots the checks need.

Pure: run with `pytest -p no:django tests/demo`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from demo import world
from demo.k8s import DRA_DRIVER_NS

CLASSES = {"platform", "internal_trusted", "internal", "external", "sensitive"}
CLUSTER_SCOPED = {
    "Namespace",
    "Node",
    "PersistentVolume",
    "ClusterRole",
    "ClusterRoleBinding",
    "ClusterPolicy",
    "DeviceClass",
    "ResourceSlice",
    "RuntimeClass",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "Profile",  # Kubeflow's
    "SidecarSet",  # OpenKruise's
}
NAMESPACED = {
    "Pod",
    "PersistentVolumeClaim",
    "ServiceAccount",
    "ConfigMap",
    "ResourceQuota",
    "Service",
    "Role",
    "RoleBinding",
    "DaemonSet",
    "Deployment",
    "NetworkPolicy",
    "CiliumNetworkPolicy",
    "HTTPRoute",
    "HTTPProxy",
    "ReplicaSet",
    "Job",
    "CronJob",
    "ResourceClaim",
    "ResourceClaimTemplate",
    # Gateways, serving and rollouts (demo/k8s_serving.py, k8s_knative.py, k8s_rollouts.py)
    "StatefulSet",
    "Notebook",
    "Gateway",
    "VirtualService",
    "AuthorizationPolicy",
    "RequestAuthentication",
    "InferenceService",
    "Configuration",
    "Revision",
    "Ingress",
    "Rollout",
}
TENANT_LABEL = "gpuposture.io/tenant"


@pytest.fixture(scope="module")
def clusters() -> dict[str, list[dict[str, Any]]]:
    return world.build_clusters()


@pytest.fixture(scope="module")
def tenants() -> list[dict[str, Any]]:
    return yaml.safe_load(world.TENANTS_FILE.read_text())["tenants"]


def of_kind(items: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in items if o["kind"] == kind]


def named(items: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in of_kind(items, kind) if o["metadata"]["name"] == name]
    return found


def everywhere(clusters: dict[str, list[dict[str, Any]]], kind: str) -> list[dict[str, Any]]:
    return [o for items in clusters.values() for o in of_kind(items, kind)]


def can(
    roles: dict[str, list[dict[str, Any]]], binding: dict[str, Any], verb: str, res: str
) -> bool:
    return any(
        res in r["resources"] and verb in r["verbs"] for r in roles[binding["roleRef"]["name"]]
    )


def gpu_nodes(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [n for n in of_kind(items, "Node") if "nvidia.com/gpu.count" in n["metadata"]["labels"]]


def label(node: dict[str, Any], key: str) -> str | None:
    return node["metadata"]["labels"].get(key)


GKE_ACCELERATOR = "cloud.google.com/gke-accelerator"


def operator_clusters(clusters: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """The clusters that run the GPU Operator: all but the GKE one, whose GPUs GKE manages."""
    return {
        name: items
        for name, items in clusters.items()
        if not any(label(n, GKE_ACCELERATOR) for n in of_kind(items, "Node"))
    }


def model(node: dict[str, Any]) -> str:
    # GFD appends -SHARED to the product of a time-sliced or MPS node; the model is the same.
    return (label(node, "nvidia.com/gpu.product") or "").removesuffix("-SHARED")


def owners(items: list[dict[str, Any]], tenants: list[dict[str, Any]]) -> dict[str, str]:
    """namespace -> tenant slug, by the tenants file and then the namespace label."""
    owner = {
        ns["metadata"]["name"]: ns["metadata"].get("labels", {})[TENANT_LABEL]
        for ns in of_kind(items, "Namespace")
        if TENANT_LABEL in ns["metadata"].get("labels", {})
    }
    owner.update({ns: t["slug"] for t in tenants for ns in t["namespaces"]})
    return owner


def active_gpu_pods(items: list[dict[str, Any]], node: str) -> list[dict[str, Any]]:
    return [
        p
        for p in of_kind(items, "Pod")
        if p["spec"].get("nodeName") == node
        and p["status"]["phase"] in ("Running", "Pending")
        and any(
            k.startswith("nvidia.com/")
            for c in p["spec"]["containers"]
            for k in c.get("resources", {}).get("limits", {})
        )
    ]


# --- Shape ------------------------------------------------------------------------------------


def test_deterministic_for_a_seed() -> None:
    assert world.build_clusters(7) == world.build_clusters(7)
    assert world.build_clusters(11) == world.build_clusters(11)
    assert world.build_clusters(7) != world.build_clusters(11)


def test_at_least_two_clusters(clusters: dict[str, list[dict[str, Any]]]) -> None:
    assert len(clusters) >= 2
    assert {"prod-east", "neo-west"} <= set(clusters)


def test_every_object_has_identity(clusters: dict[str, list[dict[str, Any]]]) -> None:
    for items in clusters.values():
        for o in items:
            assert o["apiVersion"] and o["kind"] and o["metadata"]["name"], o
            assert o["metadata"]["uid"] and o["metadata"]["creationTimestamp"]
            if o["kind"] in NAMESPACED:
                assert o["metadata"]["namespace"], o["metadata"]
            else:
                assert o["kind"] in CLUSTER_SCOPED, o["kind"]
                assert "namespace" not in o["metadata"]


def test_uids_unique_per_cluster(clusters: dict[str, list[dict[str, Any]]]) -> None:
    for items in clusters.values():
        uids = [o["metadata"]["uid"] for o in items]
        assert len(uids) == len(set(uids))


def test_pods_have_containers_and_a_node_of_their_cluster(
    clusters: dict[str, list[dict[str, Any]]],
) -> None:
    for items in clusters.values():
        nodes = {n["metadata"]["name"] for n in of_kind(items, "Node")}
        phases = set()
        for p in of_kind(items, "Pod"):
            containers = p["spec"]["containers"]
            assert containers
            assert all(c["name"] and c["image"] for c in containers)
            phase = p["status"]["phase"]
            phases.add(phase)
            if phase in ("Running", "Succeeded"):
                assert p["spec"]["nodeName"] in nodes, p["metadata"]["name"]
            if phase == "Pending":
                assert "nodeName" not in p["spec"]
        assert "Running" in phases
    all_phases = {p["status"]["phase"] for p in everywhere(clusters, "Pod")}
    assert {"Running", "Succeeded", "Pending"} <= all_phases


def test_no_secret_anywhere(clusters: dict[str, list[dict[str, Any]]]) -> None:
    for items in clusters.values():
        assert not of_kind(items, "Secret")


def test_every_pod_image_names_its_registry(clusters: dict[str, list[dict[str, Any]]]) -> None:
    for items in clusters.values():
        for p in of_kind(items, "Pod"):
            for c in p["spec"]["containers"] + p["spec"].get("initContainers", []):
                host = c["image"].split("/")[0]
                assert "/" in c["image"] and ("." in host or ":" in host), c["image"]


def test_gpu_requests_equal_limits_as_strings(clusters: dict[str, list[dict[str, Any]]]) -> None:
    for items in clusters.values():
        for p in of_kind(items, "Pod"):
            for c in p["spec"]["containers"]:
                limits = c.get("resources", {}).get("limits", {})
                gpu = {k: v for k, v in limits.items() if k.startswith("nvidia.com/")}
                for k, v in gpu.items():
                    assert isinstance(v, str)
                    assert c["resources"]["requests"][k] == v


# --- Nodes ------------------------------------------------------------------------------------


def test_enough_gpu_nodes_models_and_cpu_nodes(clusters: dict[str, list[dict[str, Any]]]) -> None:
    nodes = [n for items in clusters.values() for n in gpu_nodes(items)]
    assert len(nodes) >= 12
    models = {model(n) for n in nodes}
    assert len(models) >= 3
    assert models <= {
        "NVIDIA-A100-4-20C",  # the vGPU type a guest VM's GFD names (pe-vgpu-01)
        "NVIDIA-H100-80GB-HBM3",
        "NVIDIA-A100-SXM4-80GB",
        "NVIDIA-L40S",
        "Tesla-T4",
        "NVIDIA-H200",
    }
    cpu_only = [
        n
        for items in clusters.values()
        for n in of_kind(items, "Node")
        if "nvidia.com/gpu" not in n["status"]["capacity"]
    ]
    assert len(cpu_only) >= 2


def test_shared_capacity_is_physical_times_replicas(
    clusters: dict[str, list[dict[str, Any]]],
) -> None:
    seen, renamed = set(), []
    for items in clusters.values():
        for n in gpu_nodes(items):
            strategy = label(n, "nvidia.com/gpu.sharing-strategy")
            if strategy in ("time-slicing", "mps"):
                seen.add(strategy)
                count = int(label(n, "nvidia.com/gpu.count") or 0)
                replicas = int(label(n, "nvidia.com/gpu.replicas") or 0)
                assert replicas > 1
                capacity = n["status"]["capacity"]
                sliced = int(capacity.get(world.GPU_TS, 0))
                if sliced:  # a renamed subset: its replicas, and the other GPUs whole
                    renamed.append(n["metadata"]["name"])
                    assert sliced % replicas == 0
                    assert int(capacity["nvidia.com/gpu"]) + sliced // replicas == count
                else:
                    assert int(capacity["nvidia.com/gpu"]) == count * replicas
                assert label(n, "nvidia.com/device-plugin.config")
    assert seen == {"time-slicing", "mps"}
    assert renamed == ["pe-h100-03"]


def test_mig_mixed_nodes_trade_whole_gpus_for_mig_resources(
    clusters: dict[str, list[dict[str, Any]]],
) -> None:
    configs, failed = set(), []
    for items in clusters.values():
        for n in gpu_nodes(items):
            mig = {k: v for k, v in n["status"]["capacity"].items() if "/mig-" in k}
            if mig:
                configs.add(label(n, "nvidia.com/mig.config"))
                assert label(n, "nvidia.com/mig.strategy") == "mixed"
                if label(n, "nvidia.com/mig.config.state") == "failed":
                    failed.append(n)
                else:
                    assert label(n, "nvidia.com/mig.config.state") == "success"
                assert n["status"]["capacity"]["nvidia.com/gpu"] == "0"
    assert {"all-1g.10gb", "all-balanced"} <= configs
    # SHARE-009: one reconfiguration failed; the GPUs still show the layout it was leaving.
    (broken,) = failed
    assert label(broken, "nvidia.com/mig.config") == "all-1g.10gb"
    assert "nvidia.com/mig-3g.40gb" in broken["status"]["capacity"]


def test_driver_versions_come_from_all_three_sources(
    clusters: dict[str, list[dict[str, Any]]],
) -> None:
    full, legacy, unlabelled = [], [], []
    for cluster, items in clusters.items():
        for n in gpu_nodes(items):
            labels = n["metadata"]["labels"]
            if "nvidia.com/cuda.driver-version.full" in labels:
                full.append(n)
            elif "nvidia.com/cuda.driver.major" in labels:
                legacy.append(n)
            else:
                unlabelled.append((cluster, n["metadata"]["name"]))
    assert len(full) > len(legacy) + len(unlabelled)
    assert len(legacy) == 1
    driver_images = {
        name: [
            c["image"]
            for p in of_kind(clusters[cluster], "Pod")
            if p["spec"].get("nodeName") == name
            for c in p["spec"]["containers"]
            if c["image"].startswith(("nvcr.io/nvidia/driver:", "nvcr.io/nvaie/"))
        ]
        for cluster, name in unlabelled
    }
    # The operator's driver pod, and a vGPU guest's NVAIE guest driver pod.
    assert driver_images == {
        "nw-h100-02": ["nvcr.io/nvidia/driver:535.183.01-ubuntu22.04"],
        "pe-vgpu-01": ["nvcr.io/nvaie/vgpu-guest-driver-4:535.104.05-ubuntu22.04"],
    }


def test_toolkit_pods_old_and_digest_only(clusters: dict[str, list[dict[str, Any]]]) -> None:
    images = [
        c["image"]
        for items in clusters.values()
        for p in of_kind(items, "Pod")
        for c in p["spec"]["containers"]
        if "container-toolkit" in c["image"]
    ]
    # and nw-a100-01, whose GPUs only the DRA driver's ResourceSlice publishes (no GFD label)
    assert len(images) == sum(len(gpu_nodes(items)) for items in clusters.values()) + 1
    assert "nvcr.io/nvidia/k8s/container-toolkit:v1.16.1-ubuntu20.04" in images
    digest_only = [i for i in images if "@sha256:" in i]
    assert len(digest_only) == 1 and ":v" not in digest_only[0]  # STACK-004


def test_taints_cover_class_generic_and_none(clusters: dict[str, list[dict[str, Any]]]) -> None:
    kinds = set()
    for items in clusters.values():
        for n in gpu_nodes(items):
            keys = {t["key"] for t in n["spec"].get("taints", [])}
            kinds.add(
                "class" if "gpuposture.io/trust-class" in keys else "generic" if keys else "none"
            )
    assert kinds == {"class", "generic", "none"}  # K8S-002 fires on the last two


def test_sharing_configmap_keys(clusters: dict[str, list[dict[str, Any]]]) -> None:
    keys = set()
    for items in operator_clusters(clusters).values():
        cm = named(items, "ConfigMap", "time-slicing-config")
        data = {k: yaml.safe_load(v) for k, v in cm["data"].items()}
        keys |= set(data)
        if "ts-4" in data:  # SHARE-005
            assert "failRequestsGreaterThanOne" not in data["ts-4"]["sharing"]["timeSlicing"]
        if "ts-strict" in data:
            strict = data["ts-strict"]["sharing"]["timeSlicing"]
            assert strict["failRequestsGreaterThanOne"] is True
        if "mps-2" in data:
            assert data["mps-2"]["sharing"]["mps"]["resources"][0]["replicas"] == 2
        used = {label(n, "nvidia.com/device-plugin.config") for n in gpu_nodes(items)} - {None}
        assert used <= set(data)
        mig = named(items, "ConfigMap", "default-mig-parted-config")
        profiles = yaml.safe_load(mig["data"]["config.yaml"])["mig-configs"]
        assert {"all-disabled", "all-1g.10gb", "all-balanced"} <= set(profiles)
    assert {"ts-4", "ts-strict", "mps-2"} <= keys


# --- Tenants ----------------------------------------------------------------------------------


def test_tenants_file_covers_the_five_classes(tenants: list[dict[str, Any]]) -> None:
    assert len(tenants) >= 6
    assert {t["trust_class"] for t in tenants} == CLASSES
    for t in tenants:
        assert set(t) == {"slug", "name", "trust_class", "namespaces", "principals", "viewers"}
        assert t["slug"] == t["slug"].lower()
        assert all(p.split(":")[0] in ("group", "user") for p in t["principals"])
    assert sum(bool(t["viewers"]) for t in tenants) >= 2
    assert len({t["slug"] for t in tenants}) == len(tenants)


def test_every_tenant_namespace_exists(
    clusters: dict[str, list[dict[str, Any]]], tenants: list[dict[str, Any]]
) -> None:
    existing = {ns["metadata"]["name"] for ns in everywhere(clusters, "Namespace")}
    for t in tenants:
        assert set(t["namespaces"]) <= existing, t["slug"]


def test_both_namespace_mappings_are_used(
    clusters: dict[str, list[dict[str, Any]]], tenants: list[dict[str, Any]]
) -> None:
    listed = {ns for t in tenants for ns in t["namespaces"]}
    slugs = {t["slug"] for t in tenants}
    labelled = {
        ns["metadata"]["name"]: ns["metadata"]["labels"][TENANT_LABEL]
        for items in clusters.values()
        for ns in of_kind(items, "Namespace")
        if TENANT_LABEL in ns["metadata"]["labels"]
    }
    assert len(labelled) >= 2
    assert set(labelled.values()) <= slugs
    assert not set(labelled) & listed


def test_tenant_pods_live_in_tenant_namespaces(
    clusters: dict[str, list[dict[str, Any]]], tenants: list[dict[str, Any]]
) -> None:
    unclaimed = set()
    for items in clusters.values():
        owner = owners(items, tenants)
        # The platform's own: the Kubernetes and GPU stack namespaces (AMD's GPU Operator's on
        # prod-east too), and those the platform team labels its own (flannel's kube-flannel on
        # neo-west, Intel's device plugins operator's on prod-east).
        labelled = {
            n["metadata"]["name"]
            for n in of_kind(items, "Namespace")
            if n["metadata"]["labels"].get("gpuposture.io/platform") == "true"
        }
        for p in of_kind(items, "Pod"):
            ns = p["metadata"]["namespace"]
            platform = (
                "kube-system",
                "gpu-operator",
                "kube-amd-gpu",
                world.KAI_RESERVATION_NS,
                DRA_DRIVER_NS,
            )
            if ns not in owner and ns not in platform and ns not in labelled:
                unclaimed.add(ns)
    # One namespace nobody claims on purpose: unclassified, its pods judged as external (TEN-001).
    assert unclaimed == {world.SANDBOX}


def test_edit_bindings_name_the_owning_tenants_principals(
    clusters: dict[str, list[dict[str, Any]]], tenants: list[dict[str, Any]]
) -> None:
    by_slug = {t["slug"]: t for t in tenants}
    foreign = []
    for name, items in clusters.items():
        owner = owners(items, tenants)
        for b in of_kind(items, "RoleBinding"):
            if b["metadata"]["namespace"] == world.SANDBOX:
                continue  # nobody's namespace: its group is no tenant's principal
            if b["roleRef"]["name"] == "edit":
                principals = by_slug[owner[b["metadata"]["namespace"]]]["principals"]
                if not all(f"group:{s['name']}" in principals for s in b["subjects"]):
                    foreign.append((name, b["metadata"]["namespace"], b["metadata"]["name"]))
    # The one planted for K8S-008: analytics may edit the clinical namespace.
    assert foreign == [("prod-east", "clinical-imaging", "analytics-dashboards")]


def test_quotas_missing_for_at_least_two_tenant_namespaces(
    clusters: dict[str, list[dict[str, Any]]], tenants: list[dict[str, Any]]
) -> None:
    without = []
    for items in clusters.values():
        quota = {q["metadata"]["namespace"] for q in of_kind(items, "ResourceQuota")}
        for ns in owners(items, tenants):
            if ns in {n["metadata"]["name"] for n in of_kind(items, "Namespace")}:
                if ns not in quota:
                    without.append(ns)
                else:
                    (q,) = [
                        q
                        for q in of_kind(items, "ResourceQuota")
                        if q["metadata"]["namespace"] == ns
                    ]
                    assert any(k.startswith("requests.nvidia.com/") for k in q["spec"]["hard"])
    assert len(without) >= 2  # K8S-001


# --- The risky spots and their clean counterparts ------------------------------------------------


def test_two_tenants_time_slice_one_physical_gpu(
    clusters: dict[str, list[dict[str, Any]]], tenants: list[dict[str, Any]]
) -> None:
    """SHARE-001 for certain, and SHARE-003 between classes that forbid time-slicing."""
    # Pods of a namespace nobody claims are judged as external (GPUPOSTURE_UNCLASSIFIED_CLASS).
    classes = {t["slug"]: t["trust_class"] for t in tenants} | {"unclassified": "external"}
    certain, pairs = [], set()
    for items in clusters.values():
        owner = owners(items, tenants)
        for n in gpu_nodes(items):
            if label(n, "nvidia.com/gpu.sharing-strategy") != "time-slicing":
                continue
            pods = active_gpu_pods(items, n["metadata"]["name"])
            sharing = {owner.get(p["metadata"]["namespace"], "unclassified") for p in pods}
            if len(sharing) > 1:
                pairs.add(frozenset(classes[s] for s in sharing))
                if label(n, "nvidia.com/gpu.count") == "1":
                    certain.append(n["metadata"]["name"])
    assert certain
    assert frozenset({"external", "internal"}) in pairs
    assert frozenset({"internal_trusted", "internal"}) in pairs


def test_sensitive_tenant_only_on_its_own_mig_pool(
    clusters: dict[str, list[dict[str, Any]]], tenants: list[dict[str, Any]]
) -> None:
    sensitive = {t["slug"] for t in tenants if t["trust_class"] == "sensitive"}
    placed = 0
    for items in clusters.values():
        owner = owners(items, tenants)
        nodes = {n["metadata"]["name"]: n for n in of_kind(items, "Node")}
        by_node: dict[str, set[str]] = defaultdict(set)
        for p in of_kind(items, "Pod"):
            if p["metadata"]["namespace"] in owner and p["spec"].get("nodeName"):
                by_node[p["spec"]["nodeName"]].add(owner[p["metadata"]["namespace"]])
        for node_name, slugs in by_node.items():
            if slugs & sensitive:
                placed += 1
                n = nodes[node_name]
                assert slugs <= sensitive  # a dedicated pool
                if label(n, "nvidia.com/vgpu.present") == "true":  # a MIG-backed vGPU
                    assert label(n, "nvidia.com/gpu.product") == "NVIDIA-A100-4-20C"
                else:
                    assert label(n, "nvidia.com/mig.config") == "all-1g.10gb"
                taint = {
                    "effect": "NoSchedule",
                    "key": "gpuposture.io/trust-class",
                    "value": "sensitive",
                }
                assert taint in n["spec"]["taints"]
    assert placed >= 1


def test_pod_hardening_spots(clusters: dict[str, list[dict[str, Any]]]) -> None:
    """POD-001 to POD-005 each have a tenant pod to fire on, and K8S-006 its open notebook."""
    found: dict[str, int] = defaultdict(int)
    platform = {"kube-system", "gpu-operator"}
    for items in clusters.values():
        for p in of_kind(items, "Pod"):
            if p["metadata"]["namespace"] in platform:
                continue
            spec = p["spec"]
            found["hostIPC"] += bool(spec.get("hostIPC"))
            host_paths = [v.get("hostPath", {}).get("path") for v in spec.get("volumes", [])]
            found["dev"] += "/dev" in host_paths
            for c in spec["containers"]:
                sc = c.get("securityContext", {})
                found["privileged"] += bool(sc.get("privileged"))
                for cap in sc.get("capabilities", {}).get("add", []):
                    found[cap] += 1
                env = {e["name"]: e.get("value") for e in c.get("env", [])}
                found["mig-config"] += env.get("NVIDIA_MIG_CONFIG_DEVICES") == "all"
                found["open-jupyter"] += "--IdentityProvider.token=" in c.get("args", [])
    for spot in ("privileged", "hostIPC", "dev", "SYS_ADMIN", "NET_ADMIN", "mig-config"):
        assert found[spot] >= 1, spot
    assert found["open-jupyter"] == 1
    services = [s for s in everywhere(clusters, "Service") if s["apiVersion"] == "v1"]
    node_ports = [s for s in services if s["spec"]["type"] == "NodePort"]  # not Knative's
    assert [s["spec"]["ports"][0]["targetPort"] for s in node_ports] == [8888]


def test_risky_rbac(clusters: dict[str, list[dict[str, Any]]]) -> None:
    """K8S-003 (a group may patch nodes), K8S-004 (a group may update gpu-operator ConfigMaps)."""
    items = clusters["prod-east"]
    roles = {r["metadata"]["name"]: r["rules"] for r in of_kind(items, "ClusterRole")}
    node_patch = [
        b for b in of_kind(items, "ClusterRoleBinding") if can(roles, b, "patch", "nodes")
    ]
    assert [s["kind"] for b in node_patch for s in b["subjects"]] == ["Group"]
    config = [
        b
        for b in of_kind(items, "RoleBinding")
        if b["metadata"]["namespace"] == "gpu-operator" and can(roles, b, "update", "configmaps")
    ]
    assert len(config) == 1


def test_platform_components_run_on_every_gpu_node(
    clusters: dict[str, list[dict[str, Any]]],
) -> None:
    for items in operator_clusters(clusters).values():
        images_on: dict[str, set[str]] = defaultdict(set)
        for p in of_kind(items, "Pod"):
            if p["metadata"]["namespace"] in ("gpu-operator", "kube-system"):
                images = {c["image"] for c in p["spec"]["containers"]}
                images_on[p["spec"].get("nodeName", "")].update(images)
        for n in gpu_nodes(items):
            images = " ".join(images_on[n["metadata"]["name"]])
            for component in ("k8s-device-plugin", "container-toolkit"):
                assert component in images, (n["metadata"]["name"], component)
            # The DCGM exporter runs where the operator's deploy label lets it (pe-l40s-02: off).
            exporter = label(n, "nvidia.com/gpu.deploy.dcgm-exporter") == "true"
            assert ("dcgm-exporter" in images) is exporter, n["metadata"]["name"]
            if label(n, "nvidia.com/mig.capable") == "true":
                assert "k8s-mig-manager" in images
        deployments = {d["metadata"]["name"]: d for d in of_kind(items, "Deployment")}
        operator = deployments["gpu-operator"]["spec"]["template"]["spec"]["containers"][0]
        assert operator["image"] == "nvcr.io/nvidia/gpu-operator:v24.9.2"
        daemonsets = {d["metadata"]["name"] for d in of_kind(items, "DaemonSet")}
        assert {
            "nvidia-device-plugin-daemonset",
            "nvidia-container-toolkit-daemonset",
            "nvidia-dcgm-exporter",
        } <= daemonsets


def test_tenant_pods_have_the_owner_chains_their_controllers_make(
    clusters: dict[str, list[dict[str, Any]]],
) -> None:
    """pod -> ReplicaSet -> Deployment (one ReplicaSet per Deployment, its hash on the pods),
    pod -> Job -> CronJob, and Jobs of their own: what the findings are filed under."""
    items = clusters["prod-east"]
    owners = {
        (o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]): o["metadata"]
        .get("ownerReferences", [{}])[0]
        .get("name")
        for o in items
        if o["kind"] in ("ReplicaSet", "Job", "CronJob")
    }
    vllm = [
        p for p in of_kind(items, "Pod") if p["metadata"].get("labels", {}).get("app") == "vllm-dev"
    ]
    (rs,) = {p["metadata"]["ownerReferences"][0]["name"] for p in vllm}
    assert len(vllm) == 2 and owners[("ReplicaSet", "research-llm", rs)] == "vllm-dev"
    assert {p["metadata"]["labels"]["pod-template-hash"] for p in vllm} == {rs.rsplit("-", 1)[1]}
    assert named(items, "Deployment", "vllm-dev")["metadata"]["namespace"] == "research-llm"
    (etl,) = [
        p
        for p in of_kind(items, "Pod")
        if p["metadata"].get("labels", {}).get("app") == "feature-etl"
    ]
    job = etl["metadata"]["ownerReferences"][0]["name"]
    assert owners[("Job", "analytics-batch", job)] == "feature-etl"
    assert etl["metadata"]["labels"]["batch.kubernetes.io/job-name"] == job
    assert ("CronJob", "analytics-batch", "feature-etl") in owners
    assert owners[("Job", "research-llm", "lora-sweep")] is None  # a Job of its own


def test_a_leaderworkersets_leader_and_worker_run_in_two_statefulsets(
    clusters: dict[str, list[dict[str, Any]]],
) -> None:
    """As the LWS controller makes them: the leader in StatefulSet <lws>, the group's worker
    in StatefulSet <lws>-0 (its leader's name), both labelled with the LWS's name."""
    lws = [
        p
        for p in of_kind(clusters["neo-west"], "Pod")
        if p["metadata"].get("labels", {}).get("leaderworkerset.sigs.k8s.io/name")
        == "llm-multinode"
    ]
    assert sorted(
        (p["metadata"]["name"], p["metadata"]["ownerReferences"][0]["name"]) for p in lws
    ) == [("llm-multinode-0", "llm-multinode"), ("llm-multinode-0-1", "llm-multinode-0")]


# --- Files ------------------------------------------------------------------------------------


def test_write_snapshots_writes_kubectl_lists(tmp_path: Path) -> None:
    paths = world.write_snapshots(tmp_path / "snap", seed=7)
    assert set(paths) == set(world.build_clusters(7))
    for cluster, path in paths.items():
        assert path == tmp_path / "snap" / f"{cluster}.json"
        doc = json.loads(path.read_text())
        assert doc["apiVersion"] == "v1" and doc["kind"] == "List"
        assert doc["metadata"] == {"resourceVersion": ""}
        assert doc["items"] == world.build_clusters(7)[cluster]


def test_normaliser_reads_the_world(
    clusters: dict[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    """When the snapshot normaliser exists, every demo cluster goes through it cleanly, from
    objects and from the written files, and reads the versions the way the world means them."""
    try:
        from inventory.sources.normalise import normalise
        from inventory.sources.snapshot_file import read_snapshot
    except ImportError as exc:
        pytest.skip(f"inventory.sources.normalise is not available yet: {exc}")
    paths = world.write_snapshots(tmp_path)
    nodes = {}
    for cluster, items in clusters.items():
        snapshot = normalise(items)
        assert len(snapshot.nodes) == len(of_kind(items, "Node"))
        assert len(snapshot.pods) == len(of_kind(items, "Pod"))
        assert read_snapshot([paths[cluster]]).nodes == snapshot.nodes
        nodes.update({n.name: n for n in snapshot.nodes})
    gpu = [n for n in nodes.values() if n.is_gpu_node]
    assert len(gpu) >= 12 and len({n.gpu_model for n in gpu}) >= 3
    assert nodes["pe-t4-02"].driver_version == "535.104.05"  # legacy GFD labels
    assert nodes["nw-h100-02"].driver_version == "535.183.01"  # the driver pod's image tag
    assert nodes["pe-t4-02"].container_toolkit_version == "1.16.1"
    assert nodes["pe-t4-02"].device_plugin_version == "0.14.5"
    assert nodes["nw-l40s-01"].container_toolkit_version is None  # digest only: STACK-004
    assert nodes["pe-t4-01"].sharing_strategy == "time_slicing" and nodes["pe-t4-01"].gpu_count == 1
    assert nodes["nw-h100-01"].sharing_strategy == "mps"
    (sliced,) = nodes["pe-h100-03"].resource_sharing  # the renamed subset, as advertised
    assert (sliced.name, sliced.devices, sliced.units) == (world.GPU_TS, ("0", "1", "2", "3"), 4)
    assert (nodes["pe-a100-03"].mig_config_state, nodes["pe-a100-03"].mig_config) == (
        "failed",
        "all-1g.10gb",
    )


def test_kai_fractions_share_the_gpu_their_reservation_pod_holds(
    clusters: dict[str, list[dict[str, Any]]], tenants: list[dict[str, Any]]
) -> None:
    """SHARE-001 for certain between two tenants' fractions; one fraction alone on its GPU."""
    items = clusters["prod-east"]
    owner = owners(items, tenants)
    reserved = {
        p["metadata"]["labels"]["runai-gpu-group"]: p["metadata"]["annotations"]
        for p in of_kind(items, "Pod")
        if p["metadata"]["namespace"] == world.KAI_RESERVATION_NS
    }
    assert all(a["run.ai/reserve_for_gpu_index"].startswith("GPU-") for a in reserved.values())
    namespace = named(items, "Namespace", world.KAI_RESERVATION_NS)
    assert namespace["metadata"]["labels"]["gpuposture.io/platform"] == "true"
    by_group: dict[str, set[str]] = defaultdict(set)
    maps = {c["metadata"]["name"]: c["data"] for c in of_kind(items, "ConfigMap")}
    for p in of_kind(items, "Pod"):
        if "gpu-fraction" not in p["metadata"].get("annotations", {}):
            continue
        group = p["metadata"]["labels"]["runai-gpu-group"]
        by_group[group].add(owner[p["metadata"]["namespace"]])
        (ref,) = [
            e for e in p["spec"]["containers"][0]["env"] if e["name"] == "NVIDIA_VISIBLE_DEVICES"
        ]
        key = ref["valueFrom"]["configMapKeyRef"]
        assert maps[key["name"]][key["key"]] == reserved[group]["run.ai/reserve_for_gpu_index"]
        assert not p["spec"]["containers"][0]["resources"].get("limits", {}).get("nvidia.com/gpu")
    assert sorted(len(t) for t in by_group.values()) == [1, 2]


def test_toolkits_default_on_prod_east_and_hardened_on_neo_west(
    clusters: dict[str, list[dict[str, Any]]],
) -> None:
    """STACK-008 where the toolkit runs its default; the hardened cluster sets it to false."""
    for cluster, hardened in (("prod-east", False), ("neo-west", True)):
        for p in of_kind(clusters[cluster], "Pod"):
            for c in p["spec"]["containers"]:
                if "container-toolkit" in c["image"]:
                    env = {e["name"]: e["value"] for e in c.get("env", [])}
                    accept = env.get("ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED")
                    assert accept == ("false" if hardened else None)


def test_daemonset_pods_run_only_where_their_node_selector_admits(
    clusters: dict[str, list[dict[str, Any]]],
) -> None:
    """The operator's DaemonSets say where they run (nvidia.com/gpu.deploy.<operand>=true):
    gpuposture tells "not installed" from "pod missing" by them, so the world must agree."""
    for items in clusters.values():
        selectors = {
            d["metadata"]["name"]: d["spec"]["template"]["spec"].get("nodeSelector", {})
            for d in of_kind(items, "DaemonSet")
        }
        labels = {
            n["metadata"]["name"]: n["metadata"].get("labels", {}) for n in of_kind(items, "Node")
        }
        for p in of_kind(items, "Pod"):
            owner = next(
                (
                    r["name"]
                    for r in p["metadata"].get("ownerReferences", [])
                    if r["kind"] == "DaemonSet"
                ),
                None,
            )
            if owner:
                node = labels[p["spec"]["nodeName"]]
                assert all(node.get(k) == v for k, v in selectors[owner].items()), p["metadata"][
                    "name"
                ]


def test_the_gke_cluster_has_gkes_labels_and_device_plugin_and_no_operator(
    clusters: dict[str, list[dict[str, Any]]],
) -> None:
    items = clusters["gke-central"]
    (gpu,) = [n for n in of_kind(items, "Node") if label(n, GKE_ACCELERATOR)]
    assert label(gpu, GKE_ACCELERATOR) == "nvidia-l4"
    assert label(gpu, "cloud.google.com/gke-gpu-sharing-strategy") == "time-sharing"
    assert label(gpu, "cloud.google.com/gke-max-shared-clients-per-gpu") == "4"
    assert not [k for k in gpu["metadata"]["labels"] if k.startswith("nvidia.com/")]  # no GFD
    assert gpu["status"]["capacity"]["nvidia.com/gpu"] == "4"  # one L4, four clients
    on_it = [
        p for p in of_kind(items, "Pod") if p["spec"].get("nodeName") == gpu["metadata"]["name"]
    ]
    images = {c["image"] for p in on_it for c in p["spec"]["containers"]}
    assert any(i.startswith("gke.gcr.io/nvidia-gpu-device-plugin:") for i in images)
    assert not [i for i in images if i.startswith("nvcr.io/")]
    assert "gpu-operator" not in {d["metadata"]["name"] for d in of_kind(items, "Deployment")}


def test_each_cluster_runs_its_cni(clusters: dict[str, list[dict[str, Any]]]) -> None:
    """K8S-007 tells NetworkPolicy enforcement from the CNI's DaemonSet: Calico on prod-east
    (a policy engine), flannel alone on neo-west (none), GKE's own DaemonSets on gke-central."""
    agents = {
        name: {
            (d["metadata"]["namespace"], d["metadata"]["name"]): d["spec"]["template"]["spec"][
                "containers"
            ][0]["image"]
            for d in of_kind(items, "DaemonSet")
            if "calico" in d["metadata"]["name"] or "flannel" in d["metadata"]["name"]
        }
        for name, items in clusters.items()
    }
    assert agents["prod-east"] == {("kube-system", "calico-node"): "docker.io/calico/node:v3.28.2"}
    assert agents["neo-west"] == {
        ("kube-flannel", "kube-flannel-ds"): "ghcr.io/flannel-io/flannel:v0.26.1"
    }
    assert agents["gke-central"] == {}
    for name, ds in (("prod-east", "calico-node"), ("neo-west", "kube-flannel-ds")):
        items = clusters[name]
        on = {
            p["spec"]["nodeName"]
            for p in of_kind(items, "Pod")
            if p["metadata"]["name"].startswith(f"{ds}-")
        }
        assert on == {n["metadata"]["name"] for n in of_kind(items, "Node")}, name
    (flannel_ns,) = [
        n
        for n in of_kind(clusters["neo-west"], "Namespace")
        if n["metadata"]["name"] == "kube-flannel"
    ]
    assert flannel_ns["metadata"]["labels"]["gpuposture.io/platform"] == "true"
    # A Calico policy opening clinical's Triton servers to every address (K8S-007).
    (calico,) = [o for o in clusters["prod-east"] if o["apiVersion"] == "crd.projectcalico.org/v1"]
    assert calico["metadata"]["namespace"] == world.CLIN
    assert calico["spec"]["egress"] == [{"action": "Allow"}]


def test_an_interns_pod_takes_every_gpu_through_visible_devices(
    clusters: dict[str, list[dict[str, Any]]],
) -> None:
    """No GPU request, NVIDIA_VISIBLE_DEVICES=all, unprivileged, on a prod-east node whose
    GPUs research's pods hold (its toolkit honours the variable: STACK-008)."""
    items = clusters["prod-east"]
    (pod,) = [p for p in of_kind(items, "Pod") if p["metadata"]["name"] == "gpu-scratch"]
    assert pod["metadata"]["namespace"] == world.SANDBOX
    (ctr,) = pod["spec"]["containers"]
    assert ctr["env"] == [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    assert not any(r.startswith("nvidia.com/") for r in ctr["resources"].get("requests", {}))
    assert not ctr["securityContext"].get("privileged")
    node = pod["spec"]["nodeName"]
    holders = {
        p["metadata"]["namespace"]
        for p in of_kind(items, "Pod")
        if p["spec"].get("nodeName") == node
        and p["status"]["phase"] == "Running"
        and any(
            "nvidia.com/gpu" in c["resources"].get("requests", {}) for c in p["spec"]["containers"]
        )
    }
    assert holders == {world.RES}


def test_two_tenants_service_accounts_are_one_google_identity(
    clusters: dict[str, list[dict[str, Any]]],
) -> None:
    annotated = {
        a["metadata"]["namespace"]: a["metadata"]["annotations"]["iam.gke.io/gcp-service-account"]
        for name, items in clusters.items()
        for a in of_kind(items, "ServiceAccount")
        if a["metadata"].get("annotations")
    }
    gsa = "gpu-burst@acme-ml-prod.iam.gserviceaccount.com"
    assert annotated == {world.EVAL: gsa, world.NB: gsa}


def test_bulletins_carry_a_vendor_fix_and_a_mitigation_or_workaround() -> None:
    from demo.bulletins import BULLETINS

    categories = set()
    for bulletin in BULLETINS:
        for vulnerability in bulletin()["vulnerabilities"]:
            remedies = vulnerability["remediations"]
            fixes = [r for r in remedies if r["category"] == "vendor_fix"]
            # Every affected product has its upgrade, with details and a link.
            affected = vulnerability["product_status"]["known_affected"]
            assert sorted(i for r in fixes for i in r["product_ids"]) == sorted(affected)
            assert all(r["details"] and r["url"].startswith("https://") for r in remedies)
            categories |= {r["category"] for r in remedies}
    assert categories == {"vendor_fix", "mitigation", "workaround"}


def test_orbitals_notebook_has_a_contour_route(clusters: dict[str, list[dict[str, Any]]]) -> None:
    (proxy,) = of_kind(clusters["neo-west"], "HTTPProxy")
    assert proxy["metadata"]["namespace"] == world.ORB
    assert proxy["spec"]["routes"][0]["services"] == [{"name": "jupyter", "port": 8888}]
    assert "authorization" not in proxy["spec"]["virtualhost"]  # nothing authenticates it


def test_research_may_write_secrets_in_the_operators_namespace(
    clusters: dict[str, list[dict[str, Any]]],
) -> None:
    items = clusters["prod-east"]
    (bound,) = [
        b for b in of_kind(items, "RoleBinding") if b["metadata"]["name"] == "research-ngc-secret"
    ]
    assert bound["metadata"]["namespace"] == "gpu-operator"
    assert bound["subjects"][0]["name"] == "research-ml"
    (role,) = [
        r
        for r in of_kind(items, "ClusterRole")
        if r["metadata"]["name"] == bound["roleRef"]["name"]
    ]
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create", "get", "update"]}
    ]
