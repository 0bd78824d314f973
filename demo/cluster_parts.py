"""The parts the demo clusters are declared with: GPU models, node and workload specs, the
demo's namespaces and the risky settings the tables reuse. demo/clusters.py declares the clusters
with them. Pure Python: no Django, no network.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from demo import k8s
from demo.k8s import GpuModel, Host, NodeSpec, Obj
from demo.k8s_dra import Claim

# The tables below read best one row per line, so the formatter leaves them alone.
# ruff: noqa: E501
# fmt: off

REG = "registry.example.internal"  # the approved registry; its images are pinned by digest
GPU, MIG_1G, MIG_2G, MIG_3G = (f"nvidia.com/{r}" for r in ("gpu", "mig-1g.10gb", "mig-2g.20gb", "mig-3g.40gb"))
GPU_TS = "nvidia.com/gpu-ts"  # the time-sliced GPUs 0-3 of a node, renamed by the ts-subset config

#               product (GFD label)      MiB     family          compute MIG    gpu.machine              CPU  GiB
H100 = GpuModel("NVIDIA-H100-80GB-HBM3", 81559,  "hopper",       (9, 0), True,  "PowerEdge-XE9680",      224, 2048)
H200 = GpuModel("NVIDIA-H200",           143771, "hopper",       (9, 0), True,  "SYS-821GE-TNHR",        192, 2048)
A100 = GpuModel("NVIDIA-A100-SXM4-80GB", 81920,  "ampere",       (8, 0), True,  "DGX-A100",              256, 2048)
L40S = GpuModel("NVIDIA-L40S",           46068,  "ada-lovelace", (8, 9), False, "ProLiant-DL380a-Gen11", 64,  512)
T4   = GpuModel("Tesla-T4",              15360,  "turing",       (7, 5), False, "PowerEdge-R740",        32,  192)
L4   = GpuModel("NVIDIA-L4",             23034,  "ada-lovelace", (8, 9), False, "g2-standard-8",         8,   32)

# MIG resources per GPU of each mig-parted profile (80GB A100/H100), and what each
# time-slicing-config key does: (GFD sharing-strategy, replicas).
MIG_LAYOUTS = {"all-1g.10gb": {MIG_1G: 7}, "all-balanced": {MIG_1G: 2, MIG_2G: 1, MIG_3G: 1}}
SHARING_KEYS = {"ts-4": ("time-slicing", 4), "ts-strict": ("time-slicing", 4), "mps-2": ("mps", 2),
                "ts-subset": ("time-slicing", 4)}
GENERIC = "generic"  # only nvidia.com/gpu:NoSchedule: keeps CPU pods off, not tenants apart
# neo-west's GPU cloud taints its external pool by its own convention; the demo lists this exact
# taint on the external class (TrustClass.pool_taints), so K8S-002 and POD-009 accept it.
CLOUD_CLASS_KEY = "tenant-class"
EXTERNAL_POOL_TAINT = f"{CLOUD_CLASS_KEY}=external:NoSchedule"


def gpu_node(name: str, pool: str, model: GpuModel, count: int, taint: str | None, *,
             share: str | None = None, mig: str | None = None,
             taint_key: str = "gpuposture.io/trust-class", **extra: Any) -> NodeSpec:
    """taint: a trust class (the pool is tainted for it with `taint_key`), GENERIC, or None (no
    taint at all)."""
    sharing, replicas = SHARING_KEYS.get(share or "", ("none", 1))
    taints = {None: (), GENERIC: (("nvidia.com/gpu", None, "NoSchedule"),)}.get(
        taint, ((taint_key, taint, "NoSchedule"),)
    )
    return NodeSpec(name, pool, model, count, sharing, replicas, share,
                    mig if model.mig_capable else None, MIG_LAYOUTS.get(mig or "", {}), taints,
                    **extra)


@dataclass(frozen=True)
class Work:
    """A tenant workload: `replicas` pods on the node it is listed under."""

    ns: str
    name: str
    image: str  # "team/app:tag" in our registry (pinned by digest), or a full reference as is
    gpus: dict[str, int] = field(default_factory=dict)
    # Deployment, StatefulSet, Job, CronJob, Pod (a bare pod), LeaderWorkerSet (one group:
    # a leader and replicas - 1 workers) or Notebook (Kubeflow's, run as a StatefulSet)
    kind: str = "Deployment"
    replicas: int = 1
    phase: str = "Running"
    security: Obj | None = None  # None: the hardened context; otherwise this (risky) one
    host_ipc: bool = False
    host_dev: bool = False
    host_paths: tuple[tuple[str, str, bool], ...] = ()  # (volume, host path, mounted read-only)
    env: dict[str, str] = field(default_factory=dict)
    secret_env: dict[str, str] = field(default_factory=dict)  # variable -> "secret/key"
    ports: tuple[int, ...] = ()
    args: tuple[str, ...] = ()
    # A KAI Scheduler fraction (`gpu-fraction` annotation) bound to the GPU of this group.
    fraction: str | None = None
    gpu_group: str | None = None
    # A privileged debug container `kubectl debug --profile=sysadmin` added to the first pod.
    debugged: bool = False
    # PersistentVolumeClaims it mounts: (claim, mount path); Cluster.host_volumes binds them.
    claims: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Cluster:
    name: str
    host: Host
    mig_strategy: str  # the ClusterPolicy's; GFD labels it on every GPU node
    driver_managed: bool  # the operator installs the driver (driver pods), else it is on the host
    zone: str | None  # set at the GPU cloud, whose nodes carry topology labels
    nodes: tuple[NodeSpec, ...]
    works: dict[str | None, tuple[Work, ...]]  # node name (None: Pending) -> workloads on it
    quotas: dict[str, dict[str, str]]  # namespace -> hard limits of its GPU quota
    services: tuple[tuple[str, str, int, int], ...] = ()  # namespace, app, port, nodePort
    egress_locked: tuple[str, ...] = ()  # namespaces with a restrictive egress NetworkPolicy
    routes: tuple[tuple[str, str, str], ...] = ()  # Gateway API HTTPRoutes: namespace, Service, host
    # Namespaces whose egress a CiliumNetworkPolicy restricts, which gpuposture does not
    # evaluate: K8S-007 says their egress is unknown.
    cilium_egress: tuple[str, ...] = ()
    bindings: tuple[tuple[str, str, str, str | None], ...] = ()  # name, ClusterRole, subject, ns
    sharing_keys: tuple[str, ...] = ("exclusive", "ts-4", "ts-strict", "mps-2")  # in the ConfigMap
    cdi: bool = False  # the ClusterPolicy turns CDI on, with NVIDIA's device-list hardening
    # KAI Scheduler's reservation pods: (node, GPU group, index of the GPU it holds).
    reservations: tuple[tuple[str, str, int], ...] = ()
    # GPUs allocated through the NVIDIA DRA driver (demo/k8s_dra.py) on these claims.
    dra_claims: tuple[Claim, ...] = ()
    # The dialect of gpuposture's admission pack deployed here ("": none of ours). The pack is
    # generated, so the demo command adds it after a first sync (demo/k8s_pack.py).
    admission_pack: str = ""
    # PersistentVolumes of type hostPath bound to a tenant's claim: (PV, node path, namespace,
    # claim). Pod Security's baseline forbids a hostPath volume, not a claim bound to one.
    host_volumes: tuple[tuple[str, str, str, str], ...] = ()
    # Google Kubernetes Engine: GKE's own GPU labels, device plugin and driver; no GPU Operator.
    gke: bool = False


# namespace -> (the tenant group that edits it, extra labels). Namespaces labelled
# gpuposture.io/tenant are NOT listed in tenants.yaml: they exercise the label mapping.
NAMESPACES: dict[str, tuple[str, dict[str, str]]] = {
    "gpu-validation": ("gpu-platform-admins", {}),
    "research-llm": ("research-ml", {}),
    "research-eval": ("research-ml", {"gpuposture.io/tenant": "research"}),
    # Labelled for DRA admin access so analytics' GPU monitor is admitted: DRA-001.
    "analytics-batch": ("analytics-eng", {"resource.kubernetes.io/admin-access": "true"}),
    "analytics-notebooks": ("analytics-eng", {"gpuposture.io/tenant": "analytics"}),
    "cust-orbital": ("cust-orbital-users", {}),
    "cust-kestrel": ("cust-kestrel-users", {"pod-security.kubernetes.io/enforce": "restricted"}),
    "clinical-imaging": ("clinical-ml", {"pod-security.kubernetes.io/enforce": "restricted"}),
    # Nobody claims it (not in tenants.yaml, no tenant label) and it is not the platform's: the
    # interns' sandbox is UNCLASSIFIED, its pods judged as external (TEN-001). HNC made it a
    # child of research-llm: TEN-001's evidence names that ancestor as a hint, never a claim.
    "ml-sandbox": ("ml-interns", {"owner": "summer-interns",
                                  "ml-sandbox.tree.hnc.x-k8s.io/depth": "0",
                                  "research-llm.tree.hnc.x-k8s.io/depth": "1"}),
}
SYSTEM_NAMESPACES = ("default", "kube-public", "kube-system", k8s.GPU_OPERATOR_NS)
CLIN, RES, EVAL, ANA, NB, ORB, KES, VAL, SANDBOX = (
    "clinical-imaging", "research-llm", "research-eval", "analytics-batch",
    "analytics-notebooks", "cust-orbital", "cust-kestrel", "gpu-validation", "ml-sandbox",
)
PRIVILEGED = {"privileged": True}


def adds(*capabilities: str) -> Obj:
    return {"capabilities": {"add": list(capabilities)}}


JUPYTER_OPEN = ("start-notebook.py", "--IdentityProvider.token=", "--ServerApp.password=",
                "--ServerApp.ip=0.0.0.0")
DIGEST_ONLY_TOOLKIT = f"{k8s.NVCR}/k8s/container-toolkit@sha256:" + "7d3f0c1a9be24e8f" * 4


def _made_up(seed: str, length: int) -> str:
    """A token-shaped hex string that is no one's secret (derived from a fixed seed)."""
    return hashlib.sha256(f"gpuposture-demo:{seed}".encode()).hexdigest()[:length]


# POD-008: tokens pasted into a Job's env (made up, in the vendors' shapes).
PASTED_TOKENS = {"HF_TOKEN": "hf_" + _made_up("hf", 34), "WANDB_API_KEY": _made_up("wandb", 40),
                 "WANDB_PROJECT": "lora-sweep"}
# POD-008 on the command line: a fine-tune given its Hugging Face token as a flag (made up).
HF_TOKEN_ARGS = ("--hf-token", "hf_" + _made_up("hf-args", 34))
# fmt: on
