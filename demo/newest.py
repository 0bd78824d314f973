"""What the demo clusters gained after demo/later_nodes.py, generated after every other object
(demo/additions.py) so those keep the ids they had.

- neo-west: research runs a virtual cluster, vcluster `lab`, in its namespace `research-vc`
  (vcluster's isolated mode: a Pod Security `baseline` label and a GPU quota on the host
  namespace). Its control plane is the StatefulSet pod `lab-0`; its syncer wrote the virtual
  cluster's pods into the host namespace under translated names
  (`<pod>-x-<virtual namespace>-x-lab`), annotated with their virtual name and namespace, with
  the vcluster's Service as their only owner and no controller flag: each is its own bare Pod,
  never one "Service" workload. The NLP team's fine-tune holds one whole H100 of research's
  pool, and runs `python finetune.py --hf-token hf_…`: a token on the command line is in the
  host's pod spec in clear, whatever the virtual cluster shows (POD-008, `args[1]`).
- prod-east: a Jetson AGX Orin edge box of analytics' shelf-camera counting, its GPU reached
  with no device plugin: JetPack's NVIDIA Container Runtime on the host and the RuntimeClass
  `nvidia` (handler `nvidia`, as k3s creates it); the pod picks it and sets
  NVIDIA_VISIBLE_DEVICES=all. A GPU node of unknown model and count, POD-011 for analytics.
- neo-west: an AMD Instinct MI300X node that only AMD's DRA driver (`gpu.amd.com`) serves: no
  device plugin, no labeller, no `amd.com/gpu` capacity; its ResourceSlice publishes the eight
  GPUs and orbital's claim holds one whole.

Pure Python: no Django, no network; deterministic for the `Ids` it is given.
"""

from __future__ import annotations

from dataclasses import replace

from demo import k8s
from demo.cluster_parts import ANA, CLOUD_CLASS_KEY, GPU, HF_TOKEN_ARGS, ORB, REG, Cluster, Work
from demo.k8s import Host, Ids, NodeSpec, Obj
from demo.k8s_dra import API as DRA_API
from demo.k8s_workloads import tenant_pods_of
from demo.later_nodes import count_pods

# ruff: noqa: E501
# fmt: off
# (a) vcluster `lab` in research's host namespace, and the virtual pods its syncer wrote there.
VC_NS, VC = "research-vc", "lab"
VC_IMAGE = "ghcr.io/loft-sh/vcluster-pro:0.21.2"  # the chart's default control-plane image
VC_WORKLOAD_SA = f"vc-workload-{VC}"  # the host ServiceAccount the synced pods run as
VC_GPU_NODE, VC_CPU_NODE = "nw-h100-02", "nw-cpu-01"  # research's H100 pool has one GPU free
# (virtual pod, virtual namespace, image, GPUs, node)
VC_PODS = (
    ("finetune-6f7b9c8d4-k2x7p", "nlp", "research/llama-finetune:0.3.1", 1, VC_GPU_NODE),
    ("asr-eval-0", "speech", "research/asr-eval:1.0.4", 0, VC_CPU_NODE),
)
# The speech eval reads its vocabulary from an OCI artifact mounted as an image volume
# (Kubernetes 1.33+), pulled by a mutable tag from outside research's registry: POD-007.
VC_VOCAB = ("asr-eval-0", "vocab", "ghcr.io/lab-speech/asr-vocab:latest", "/opt/vocab")
# (b) The Jetson: JetPack 6 (L4T 36.4, Ubuntu 22.04), arm64, its GPU integrated in the SoC.
ORIN = NodeSpec("pe-orin-01", "edge-orin", taints=(("gpuposture.io/trust-class", "internal", "NoSchedule"),),
                host=Host("Ubuntu 22.04.5 LTS", "5.15.148-tegra", "containerd://1.7.22", "v1.29.9"))
ORIN_WORK = Work(ANA, "shelf-counter", "analytics/shelf-counter:2.0.3-l4t36", env={"NVIDIA_VISIBLE_DEVICES": "all"})
RUNTIME_CLASS = "nvidia"
# (c) The MI300X node, on DRA's GA API (Kubernetes 1.34) like neo-west's other DRA node.
AMD_DRIVER, AMD_NS = "gpu.amd.com", "amd-dra-driver"
MI300X = NodeSpec("nw-mi300x-01", "external-amd", taints=((CLOUD_CLASS_KEY, "external", "NoSchedule"),),
                  host=Host("Ubuntu 24.04.2 LTS", "6.8.0-60-generic", "containerd://2.0.5", "v1.34.2"))
AMD_PLUGIN = k8s.DaemonSetSpec("amd-gpu-dra-driver-kubelet-plugin", "kubelet-plugin", "docker.io/rocm/k8s-gpu-dra-driver:v1.0.0",
                               AMD_NS, host_paths=("/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry", "/var/run/cdi", "/sys", "/dev"))
AMD_GPUS = 8
AMD_CLAIM = ("rocm-md-gpu", "rocm-md-0", "orbital/rocm-md:6.2.4", 3)  # claim, pod, image, GPU
NODES = {"prod-east": (ORIN,), "neo-west": (MI300X,)}
# fmt: on


def newest(ids: Ids, c: Cluster, items: list[Obj], cni: k8s.DaemonSetSpec | None) -> list[Obj]:
    """The objects above for cluster `c`; the DaemonSets of `items` that gain a pod on the new
    nodes count it (in place)."""
    nodes = NODES.get(c.name, ())
    if not nodes:
        return []
    ours = [_node(ids, c, n) for n in nodes]
    agents = k8s.Platform(ids)
    proxy = k8s.DaemonSetSpec(
        "kube-proxy", "kube-proxy", f"registry.k8s.io/kube-proxy:{c.host.kubelet}", "kube-system"
    )
    for n in nodes:
        for ds in (proxy, cni, k8s.DS_NFD):
            if ds is not None:
                agents.place(ds, n.name)
    count_pods(items, agents.pods)
    ours += agents.pods
    if c.name == "prod-east":
        ours += _orin(ids, c)
    if c.name == "neo-west":
        ours += _amd_dra(ids) + _vcluster(ids)
    return ours


def _node(ids: Ids, c: Cluster, n: NodeSpec) -> Obj:
    node = k8s.node(ids, n, c.host, mig_strategy=c.mig_strategy, zone=c.zone)
    labels, status = node["metadata"]["labels"], node["status"]
    if n is ORIN:  # a Jetson AGX Orin 64GB: 12 Arm cores, 64 GiB shared with the GPU
        labels.update({"beta.kubernetes.io/arch": "arm64", "kubernetes.io/arch": "arm64"})
        status["nodeInfo"]["architecture"] = "arm64"
        for key, cpu in (("capacity", "12"), ("allocatable", "11500m")):
            status[key].update(cpu=cpu, memory="64278Mi" if key == "capacity" else "62230Mi")
    if n is MI300X:  # NFD's PCI label for AMD (vendor 1002); no labeller, no capacity
        labels["feature.node.kubernetes.io/pci-1002.present"] = "true"
    return node


def _orin(ids: Ids, c: Cluster) -> list[Obj]:
    """RuntimeClass `nvidia` and analytics' counter on the Jetson, picking it."""
    runtime_class = k8s.obj(
        "node.k8s.io/v1",
        "RuntimeClass",
        k8s.meta(ids, "RuntimeClass", RUNTIME_CLASS),
        handler="nvidia",
    )
    pods, controllers = tenant_pods_of(
        ids, replace(c, nodes=(ORIN,), works={ORIN.name: (ORIN_WORK,)}, reservations=())
    )
    for p in pods:
        p["spec"]["runtimeClassName"] = RUNTIME_CLASS
    return [runtime_class, *pods, *controllers]


def _amd_dra(ids: Ids) -> list[Obj]:
    """AMD's DRA driver: its namespace, kubelet plugin, DeviceClass and the node's slice, and
    orbital's claim with the pod using it."""
    platform = k8s.Platform(ids)
    platform.place(AMD_PLUGIN, MI300X.name)
    namespace = k8s.namespace(ids, AMD_NS, {"gpuposture.io/platform": "true"})
    account = k8s.obj(
        "v1", "ServiceAccount", k8s.meta(ids, "ServiceAccount", AMD_PLUGIN.name, AMD_NS)
    )
    selector = {"cel": {"expression": f"device.driver == '{AMD_DRIVER}'"}}
    device_class = k8s.obj(
        DRA_API,
        "DeviceClass",
        k8s.meta(ids, "DeviceClass", AMD_DRIVER),
        spec={"selectors": [selector]},
    )
    return [
        namespace,
        account,
        *platform.objects(),
        device_class,
        _amd_slice(ids),
        *_amd_claim(ids),
    ]


def _amd_slice(ids: Ids) -> Obj:
    """The eight MI300X as the driver publishes them: no uuid; named by index and render
    minor, with the PCI address each GPU sits at."""
    devices = [
        {
            "name": f"gpu-{i}-{128 + 8 * i}",
            "attributes": {
                "type": {"string": "amdgpu"},
                "productName": {"string": "AMD Instinct MI300X"},
                "family": {"string": "AI"},
                "deviceID": {"string": "0x74a1"},
                "resource.kubernetes.io/pciBusID": {"string": f"0000:{0x11 + 0x10 * i:02x}:00.0"},
            },
            "capacity": {"memory": {"value": "192Gi"}},
        }
        for i in range(AMD_GPUS)
    ]
    name = f"{MI300X.name}-{AMD_DRIVER}-{ids.suffix()}"
    m = k8s.meta(ids, "ResourceSlice", name, owner=("v1", "Node", MI300X.name))
    spec = {
        "driver": AMD_DRIVER,
        "nodeName": MI300X.name,
        "devices": devices,
        "pool": {"name": MI300X.name, "generation": 1, "resourceSliceCount": 1},
    }
    return k8s.obj(DRA_API, "ResourceSlice", m, spec=spec)


def _amd_claim(ids: Ids) -> list[Obj]:
    """Orbital's molecular dynamics run on one whole MI300X: the claim and its bare pod."""
    claim, pod_name, image, index = AMD_CLAIM
    exactly = {"deviceClassName": AMD_DRIVER, "allocationMode": "ExactCount", "count": 1}
    result = {
        "request": "gpu",
        "driver": AMD_DRIVER,
        "pool": MI300X.name,
        "device": f"gpu-{index}-{128 + 8 * index}",
    }
    selector = {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [MI300X.name]}]}
        ]
    }
    reserved = [{"resource": "pods", "name": pod_name, "uid": ids.uid(f"Pod/{ORB}/{pod_name}")}]
    status = {
        "allocation": {"devices": {"results": [result], "config": []}, "nodeSelector": selector},
        "reservedFor": reserved,
    }
    spec = {"devices": {"requests": [{"name": "gpu", "exactly": exactly}], "config": []}}
    held = k8s.obj(
        DRA_API,
        "ResourceClaim",
        k8s.meta(ids, "ResourceClaim", claim, ORB),
        spec=spec,
        status=status,
    )
    ctr = k8s.container(
        pod_name,
        ids.pinned(f"{REG}/{image}"),
        cpu="8",
        memory="64Gi",
        security=k8s.HARDENED_CONTAINER,
    )
    ctr["resources"]["claims"] = [{"name": "gpu"}]
    pod = k8s.pod(
        ids,
        pod_name,
        ORB,
        node=MI300X.name,
        containers=[ctr],
        labels={"app": "rocm-md"},
        tolerations=[k8s.toleration(*t) for t in MI300X.taints],
        pod_security=k8s.HARDENED_POD,
        restart_policy="Never",
    )
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
    pod["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": claim}]
    return [held, pod]


def _vcluster(ids: Ids) -> list[Obj]:
    """The host side of vcluster `lab`: namespace, quota, Service, ServiceAccounts, the control
    plane pod and the pods its syncer wrote."""
    # Claimed by research in demo/tenants.yaml; vcluster's isolated mode labels it baseline.
    namespace = k8s.namespace(ids, VC_NS, {"pod-security.kubernetes.io/enforce": "baseline"})
    accounts = [
        k8s.obj("v1", "ServiceAccount", k8s.meta(ids, "ServiceAccount", name, VC_NS))
        for name in (f"vc-{VC}", VC_WORKLOAD_SA)
    ]
    service = k8s.service(ids, VC_NS, VC, "vcluster", 443)
    service["spec"]["ports"][0]["targetPort"] = 8443
    service["spec"]["selector"] = {"app": "vcluster", "release": VC}
    plane = _control_plane(ids)
    synced = [_synced(ids, *spec) for spec in VC_PODS]
    gpus = sum(g for *_, g, _ in VC_PODS)
    hard = {"requests.nvidia.com/gpu": "2"}
    quota = k8s.resource_quota(ids, VC_NS, hard, {"requests.nvidia.com/gpu": str(gpus)})
    quota["metadata"]["name"] = f"vc-{VC}"
    return [namespace, *accounts, service, quota, plane, *synced]


def _control_plane(ids: Ids) -> Obj:
    ctr = k8s.container("syncer", VC_IMAGE, cpu="1", memory="2Gi", security=k8s.HARDENED_CONTAINER)
    return k8s.pod(
        ids,
        f"{VC}-0",
        VC_NS,
        node=VC_CPU_NODE,
        containers=[ctr],
        owner=("apps/v1", "StatefulSet", VC),
        labels={"app": "vcluster", "release": VC},
        service_account=f"vc-{VC}",
        pod_security=k8s.HARDENED_POD,
    )


def _synced(ids: Ids, name: str, virtual_ns: str, image: str, gpus: int, node: str) -> Obj:
    """A virtual pod as the syncer writes it into the host namespace."""
    host_name = f"{name}-x-{virtual_ns}-x-{VC}"
    ctr = k8s.container(
        name.split("-")[0],
        ids.pinned(f"{REG}/{image}"),
        gpus={GPU: gpus} if gpus else None,
        cpu="4",
        memory="32Gi",
        security=k8s.HARDENED_CONTAINER,
    )
    tolerations = (
        [k8s.toleration("gpuposture.io/trust-class", "internal_trusted", "NoSchedule")]
        if gpus
        else None
    )
    if name == VC_PODS[0][0]:  # the fine-tune: its token given on the command line
        ctr["command"], ctr["args"] = ["python", "finetune.py"], list(HF_TOKEN_ARGS)
    labels = {"vcluster.loft.sh/managed-by": VC, "vcluster.loft.sh/namespace": virtual_ns}
    volumes = None
    if name == VC_VOCAB[0]:
        _, volume, reference, path = VC_VOCAB
        volumes = [
            {"name": volume, "image": {"reference": reference, "pullPolicy": "IfNotPresent"}}
        ]
        ctr["volumeMounts"] = [{"name": volume, "mountPath": path, "readOnly": True}]
    pod = k8s.pod(
        ids,
        host_name,
        VC_NS,
        node=node,
        containers=[ctr],
        labels=labels,
        tolerations=tolerations,
        service_account=VC_WORKLOAD_SA,
        pod_security=k8s.HARDENED_POD,
        node_selector={"gpuposture.io/pool": "research-h100"} if gpus else None,
        volumes=volumes,
    )
    m = pod["metadata"]
    m["annotations"] = {
        "vcluster.loft.sh/object-name": name,
        "vcluster.loft.sh/object-namespace": virtual_ns,
        "vcluster.loft.sh/object-host-name": host_name,
        "vcluster.loft.sh/object-host-namespace": VC_NS,
        "vcluster.loft.sh/object-kind": "/v1, Kind=Pod",
    }
    # The syncer's only owner: the vcluster's Service, for garbage collection, no controller flag.
    m["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Service", "name": VC, "uid": ids.uid(f"Service/{VC_NS}/{VC}")}
    ]
    return pod
