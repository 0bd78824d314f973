"""The demo world: two GPU clusters and their tenants, as `kubectl get ... -A -o json` shows them.

A declarative table per cluster (demo/clusters.py) that demo/k8s.py turns into raw objects; this
module assembles them, with the GPU Operator's config and the RBAC every cluster has. The
tenants owning the namespaces are in demo/tenants.yaml. Pure Python: no Django, no network;
deterministic for a seed.
"""

from __future__ import annotations

import json
from pathlib import Path

from demo import k8s
from demo.additions import additions
from demo.cluster_parts import (
    A100,
    ANA,
    CLIN,
    DIGEST_ONLY_TOOLKIT,
    EVAL,
    GENERIC,
    GPU,
    GPU_TS,
    H100,
    H200,
    JUPYTER_OPEN,
    KES,
    L40S,
    MIG_1G,
    MIG_2G,
    MIG_3G,
    MIG_LAYOUTS,
    NAMESPACES,
    NB,
    ORB,
    PRIVILEGED,
    REG,
    RES,
    SANDBOX,
    SHARING_KEYS,
    SYSTEM_NAMESPACES,
    T4,
    VAL,
    Cluster,
    Work,
    adds,
    gpu_node,
)
from demo.clusters import CLUSTERS, NEO_WEST, PROD_EAST
from demo.k8s import Ids, Obj
from demo.k8s_admission import admission_objects
from demo.k8s_dra import dra_objects
from demo.k8s_kai import KAI_RESERVATION_NS, kai_reservations
from demo.k8s_storage import always_there, host_volumes
from demo.k8s_workloads import idle_cronjobs, tenant_pods_of

# The tables below read best one row per line, so the formatter leaves them alone.
# ruff: noqa: E501
# fmt: off

TENANTS_FILE = Path(__file__).with_name("tenants.yaml")

# The device-plugin configs, one per key, as the ClusterPolicy's devicePlugin.config names them.
_TS = "version: v1\nsharing:\n  timeSlicing:\n{strict}    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"
SHARING_CONFIG = {
    "exclusive": "version: v1\n",  # the default: no sharing section, every GPU whole
    "ts-4": _TS.format(strict=""),  # no failRequestsGreaterThanOne: SHARE-005 where used
    "ts-strict": _TS.format(strict="    failRequestsGreaterThanOne: true\n"),
    "mps-2": "version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n",
    # GPUs 0-3 time-sliced under their own name; the device plugin leaves GPUs 4-7 whole.
    "ts-subset": _TS.format(strict="    failRequestsGreaterThanOne: true\n").replace(
        "      replicas: 4\n", "      rename: nvidia.com/gpu-ts\n      devices: [0, 1, 2, 3]\n      replicas: 4\n"),
}
MIG_PARTED_CONFIG = """\
version: v1
mig-configs:
  # MIG off: each GPU is scheduled whole.
  all-disabled:
    - devices: all
      mig-enabled: false
  # Seven of the smallest GPU instances per 80GB A100/H100, each with its own memory and SMs.
  all-1g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
  # One small-to-large mix for 80GB A100 (PCI id 0x20B2) and H100 SXM (0x2330).
  all-balanced:
    - device-filter: ["0x20B210DE", "0x233010DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 2
        "2g.20gb": 1
        "3g.40gb": 1
"""
EDIT = ["create", "delete", "get", "list", "patch", "update", "watch"]
CLUSTER_ROLES = {
    # A minimal `edit`: what a tenant group may do inside its own namespaces.
    "edit": [k8s.rule([""], ["pods", "pods/exec", "pods/log", "services", "configmaps"], EDIT),
             k8s.rule(["apps"], ["deployments", "statefulsets"], EDIT), k8s.rule(["batch"], ["jobs"], EDIT)],
    "gpu-operator": [k8s.rule(["", "apps", "nvidia.com"], ["*"], ["*"])],
    "node-labeler": [k8s.rule([""], ["nodes"], ["get", "list", "patch"])],
    "gpu-sharing-config-editor": [k8s.rule([""], ["configmaps"], ["get", "list", "update"])],
    "gpu-node-reader": [k8s.rule([""], ["nodes"], ["get", "list", "watch"])],
    # The DRA driver's kubelet plugin publishes ResourceSlices and prepares claims.
    "nvidia-dra-driver-gpu-kubelet-plugin": [
        k8s.rule(["resource.k8s.io"], ["resourceslices"], EDIT),
        k8s.rule(["resource.k8s.io"], ["resourceclaims", "deviceclasses"], ["get", "list", "watch"]),
        k8s.rule([""], ["nodes"], ["get"]),
    ],
    # "For the CI runner to act as the team": impersonating any group includes system:masters.
    "ci-impersonator": [k8s.rule([""], ["users", "groups"], ["impersonate"])],
}
_KIND_ORDER = ("Namespace", "Node", "ClusterPolicy", "ConfigMap", "ResourceQuota", "Service", "NetworkPolicy",
               "DaemonSet", "Deployment", "ReplicaSet", "CronJob", "Job", "Pod", "ClusterRole", "ClusterRoleBinding",
               "Role", "RoleBinding", "DeviceClass", "ResourceSlice", "ResourceClaimTemplate", "ResourceClaim",
               "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "KyvernoClusterPolicy",
               "CiliumNetworkPolicy", "HTTPRoute", "HTTPProxy", "PersistentVolume", "PersistentVolumeClaim", "ServiceAccount", "RuntimeClass",
               # demo/k8s_serving.py and demo/k8s_rollouts.py: gateways, serving, injectors
               "Profile", "Notebook", "Gateway", "VirtualService", "AuthorizationPolicy", "RequestAuthentication",
               "InferenceService", "Configuration", "Revision", "Ingress", "StatefulSet", "SidecarSet", "Rollout")
# fmt: on


def _quota(ids: Ids, ns: str, hard: dict[str, str], pods: list[Obj]) -> Obj:
    used = dict.fromkeys(hard, 0)  # a quota counts Pending pods too, never finished ones
    for p in pods:
        if p["metadata"]["namespace"] == ns and p["status"]["phase"] in ("Pending", "Running"):
            for c in p["spec"]["containers"]:
                for res, qty in c["resources"].get("requests", {}).items():
                    if f"requests.{res}" in used:
                        used[f"requests.{res}"] += int(qty)
    return k8s.resource_quota(ids, ns, hard, {k: str(v) for k, v in used.items()})


def _rbac(ids: Ids, c: Cluster, namespaces: list[str]) -> list[Obj]:
    # The normal case first: each tenant group edits its own namespaces, and only those.
    bindings = [
        (f"{NAMESPACES[ns][0]}-edit", "edit", f"Group:{NAMESPACES[ns][0]}", ns) for ns in namespaces
    ]
    if not c.gke:  # GKE runs no GPU Operator: nothing binds its account there
        bindings.append(
            ("gpu-operator", "gpu-operator", "ServiceAccount:gpu-operator/gpu-operator", None)
        )
    if c.dra_claims:  # its chart binds the kubelet plugin's account cluster-wide
        plugin = k8s.DS_DRA_PLUGIN.name
        account = f"ServiceAccount:{k8s.DRA_DRIVER_NS}/{plugin}"
        bindings.append((plugin, plugin, account, None))
    bindings += c.bindings
    roles = sorted({role for _, role, _, _ in bindings})
    return [k8s.role(ids, r, CLUSTER_ROLES[r]) for r in roles] + [
        k8s.binding(ids, *b) for b in bindings
    ]


def _gpu_operator_config(ids: Ids, c: Cluster) -> list[Obj]:
    """The operator's ClusterPolicy and the ConfigMaps it reads."""
    policy = {
        "daemonsets": {"updateStrategy": "OnDelete"},
        "devicePlugin": {"config": {"default": "exclusive", "name": "time-slicing-config"}},
        "driver": {"enabled": c.driver_managed, "useNvidiaDriverCRD": c.driver_managed},
        "mig": {"strategy": c.mig_strategy},
        "migManager": {"config": {"name": "default-mig-parted-config"}},
        # Helm writes every default into the ClusterPolicy: CDI is stated on or off.
        "cdi": {"enabled": c.cdi, "default": c.cdi},
    }
    if c.cdi:
        policy["devicePlugin"]["env"] = [{"name": "DEVICE_LIST_STRATEGY", "value": "cdi-cri"}]
        policy["toolkit"] = {
            "env": [
                {
                    "name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED",
                    "value": "false",
                },
            ]
        }
    meta = k8s.meta(ids, "ClusterPolicy", "cluster-policy")
    ns = k8s.GPU_OPERATOR_NS
    return [
        k8s.obj("nvidia.com/v1", "ClusterPolicy", meta, spec=policy, status={"state": "ready"}),
        k8s.configmap(
            ids, "time-slicing-config", ns, {k: SHARING_CONFIG[k] for k in c.sharing_keys}
        ),
        k8s.configmap(ids, "default-mig-parted-config", ns, {"config.yaml": MIG_PARTED_CONFIG}),
    ]


def _platform(ids: Ids, c: Cluster) -> list[Obj]:
    """kube-system and gpu-operator: per-node DaemonSet pods, the operator, CoreDNS. On GKE:
    GKE's own device plugin on each GPU node, and no GPU Operator at all."""
    platform = k8s.Platform(ids)
    proxy = f"registry.k8s.io/kube-proxy:{c.host.kubelet}"
    kube_proxy = k8s.DaemonSetSpec("kube-proxy", "kube-proxy", proxy, "kube-system")
    for n in c.nodes:
        platform.place(kube_proxy, n.name)
        if c.gke:
            if n.model:
                platform.place(k8s.DS_GKE_PLUGIN, n.name)
            continue
        platform.place(k8s.DS_NFD, n.name)
        if n.model:
            k8s.gpu_operator_pods(platform, n, driver_managed=c.driver_managed, hardened=c.cdi)
        if c.dra_claims and n.name == c.dra_claims[0].node:
            platform.place(k8s.DS_DRA_PLUGIN, n.name)
    if c.gke:
        coredns = "registry.k8s.io/coredns/coredns:v1.11.1"
        platform.deploy("coredns", "kube-system", coredns, c.nodes[0].name)
        return platform.objects()
    gpu_nodes = [n.name for n in c.nodes if n.model]
    for node_name in gpu_nodes[:3]:
        platform.one_shot(node_name)
    platform.deploy("gpu-operator", k8s.GPU_OPERATOR_NS, k8s.GPU_OPERATOR, c.nodes[0].name)
    platform.deploy(
        "coredns", "kube-system", "registry.k8s.io/coredns/coredns:v1.11.1", c.nodes[0].name
    )
    dcgm = k8s.service(
        ids, k8s.GPU_OPERATOR_NS, "nvidia-dcgm-exporter", "nvidia-dcgm-exporter", 9400
    )
    return [*platform.objects(), dcgm]


def _dra(ids: Ids, c: Cluster) -> list[Obj]:
    """The NVIDIA DRA driver's node, its claims and the pods using them (demo/k8s_dra.py)."""
    if not c.dra_claims:
        return []
    n = next(n for n in c.nodes if n.name == c.dra_claims[0].node)
    product = (n.model.product if n.model else "").replace("-", " ")
    tolerations = [k8s.toleration(*t) for t in n.taints]
    return dra_objects(ids, n.name, n.count, product, c.dra_claims, tolerations)


def build_cluster(c: Cluster, seed: int = 7) -> list[Obj]:
    """One cluster's objects, sorted as kubectl lists them."""
    ids = Ids(seed, c.name)
    namespaces = sorted({w.ns for works in c.works.values() for w in works} | set(c.quotas))
    items = [k8s.namespace(ids, ns) for ns in SYSTEM_NAMESPACES]
    items += [k8s.namespace(ids, k8s.DRA_DRIVER_NS)] if c.dra_claims else []
    items += [k8s.namespace(ids, ns, NAMESPACES[ns][1]) for ns in namespaces]
    items += [k8s.node(ids, n, c.host, mig_strategy=c.mig_strategy, zone=c.zone) for n in c.nodes]
    items += _platform(ids, c) + ([] if c.gke else _gpu_operator_config(ids, c))
    tenant_pods, controllers = tenant_pods_of(ids, c)
    items += tenant_pods + controllers + kai_reservations(ids, c.reservations)
    items += idle_cronjobs(ids, namespaces)
    items += _dra(ids, c)
    items += [_quota(ids, ns, hard, tenant_pods) for ns, hard in c.quotas.items()]
    items += [
        k8s.service(ids, ns, app, app, port, node_port) for ns, app, port, node_port in c.services
    ]
    items += _rbac(ids, c, namespaces)
    items += admission_objects(
        ids, namespaces, protected=ORB, audited="research-", handwritten=not c.admission_pack
    )
    if CLIN in namespaces:  # an ordinary app ConfigMap, which a parser must not keep
        data = {"MODEL_REPOSITORY": "s3://clinical-models/ct-seg"}
        items.append(k8s.configmap(ids, "triton-model-repo", CLIN, data))
    for ns in c.egress_locked:  # egress only to the cluster DNS and the namespace itself
        to = [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}}}
            for name in ("kube-system", ns)
        ]
        spec = {"egress": [{"to": to}], "podSelector": {}, "policyTypes": ["Egress"]}
        meta = k8s.meta(ids, "NetworkPolicy", "restrict-egress", ns)
        items.append(k8s.obj("networking.k8s.io/v1", "NetworkPolicy", meta, spec=spec))
    for ns, service, host in c.routes:
        spec = {
            "parentRefs": [{"name": "public", "namespace": "gateway"}],
            "hostnames": [host],
            "rules": [{"backendRefs": [{"name": service, "port": 80}]}],
        }
        meta = k8s.meta(ids, "HTTPRoute", service, ns)
        items.append(k8s.obj("gateway.networking.k8s.io/v1", "HTTPRoute", meta, spec=spec))
    items += host_volumes(ids, c)
    for ns in c.cilium_egress:  # Cilium's own policy: no egress to the world
        spec = {"endpointSelector": {}, "egressDeny": [{"toEntities": ["world"]}]}
        meta = k8s.meta(ids, "CiliumNetworkPolicy", "deny-world-egress", ns)
        items.append(k8s.obj("cilium.io/v2", "CiliumNetworkPolicy", meta, spec=spec))
    # Last, so every object above keeps the ids it had: what every cluster holds unasked.
    items += always_there(ids, [o["metadata"]["name"] for o in items if o["kind"] == "Namespace"])
    # Later still: what the first tables left out (demo/additions.py).
    items += additions(ids, c, items)
    # Last of all (every object above keeps its ids): kube-system's own Role and RoleBinding.
    items += k8s.system_roles(ids)
    return kubectl_sorted(items)


def kubectl_sorted(items: list[Obj]) -> list[Obj]:
    """kubectl lists kind by kind in the order asked, each sorted by namespace and name."""
    return sorted(
        items,
        key=lambda o: (
            _KIND_ORDER.index(_listed_kind(o)),
            o["metadata"].get("namespace", ""),
            o["metadata"]["name"],
        ),
    )


def _listed_kind(o: Obj) -> str:
    # Kyverno's ClusterPolicy is listed on its own, after the admission policies.
    return "KyvernoClusterPolicy" if o["apiVersion"].startswith("kyverno.io/") else o["kind"]


def build_clusters(seed: int = 7) -> dict[str, list[dict]]:
    """Every cluster's raw objects, as `kubectl get ... -A -o json` would list them."""
    return {c.name: build_cluster(c, seed) for c in CLUSTERS}


def write_snapshots(directory: Path, seed: int = 7) -> dict[str, Path]:
    """One kubectl `List` JSON file per cluster, <directory>/<cluster>.json; cluster -> path."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, items in build_clusters(seed).items():
        path = directory / f"{name}.json"
        path.write_text(json.dumps(k8s.kubectl_list(items), indent=4, sort_keys=True) + "\n")
        paths[name] = path
    return paths


__all__ = [
    "TENANTS_FILE",
    "REG",
    "GPU",
    "GPU_TS",
    "KAI_RESERVATION_NS",
    "MIG_1G",
    "MIG_2G",
    "MIG_3G",
    "H100",
    "H200",
    "A100",
    "L40S",
    "T4",
    "MIG_LAYOUTS",
    "SHARING_KEYS",
    "GENERIC",
    "gpu_node",
    "Work",
    "Cluster",
    "NAMESPACES",
    "SYSTEM_NAMESPACES",
    "CLIN",
    "SANDBOX",
    "RES",
    "EVAL",
    "ANA",
    "NB",
    "ORB",
    "KES",
    "VAL",
    "PRIVILEGED",
    "adds",
    "JUPYTER_OPEN",
    "DIGEST_ONLY_TOOLKIT",
    "PROD_EAST",
    "NEO_WEST",
    "CLUSTERS",
    "SHARING_CONFIG",
    "MIG_PARTED_CONFIG",
    "EDIT",
    "CLUSTER_ROLES",
    "build_cluster",
    "kubectl_sorted",
    "build_clusters",
    "write_snapshots",
]
