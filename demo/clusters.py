"""The three demo clusters as declarative tables: their nodes, then the tenant workloads on each node.

demo/world.py turns them into raw objects. Placement is chosen so the posture checks of DESIGN §5
each have something real to find, next to a clean counterpart; a comment names the check each
risky spot is meant to trigger. Pure Python: no Django, no network.
"""

from __future__ import annotations

from dataclasses import replace

from demo import k8s
from demo.cluster_parts import (
    A100,
    ANA,
    CLIN,
    CLOUD_CLASS_KEY,
    DIGEST_ONLY_TOOLKIT,
    EVAL,
    GENERIC,
    GPU,
    GPU_TS,
    H100,
    H200,
    JUPYTER_OPEN,
    KES,
    L4,
    L40S,
    MIG_1G,
    MIG_2G,
    MIG_3G,
    NB,
    ORB,
    PASTED_TOKENS,
    PRIVILEGED,
    RES,
    SANDBOX,
    T4,
    VAL,
    Cluster,
    Work,
    adds,
    gpu_node,
)
from demo.k8s import Host, NodeSpec
from demo.k8s_dra import Claim

# The tables below read best one row per line, so the formatter leaves them alone.
# ruff: noqa: E501
# fmt: off

# On-prem. Drivers are baked into the host images; the GPU Operator runs everything else.
PROD_EAST = Cluster(
    name="prod-east",
    host=Host("Ubuntu 22.04.4 LTS", "5.15.0-119-generic", "containerd://1.7.22", "v1.29.9"),
    mig_strategy="mixed", driver_managed=False, zone=None,
    # The platform team rolled gpuposture's VAP pack out here in Enforce (with two drifts).
    admission_pack="vap",
    host_volumes=(("kubelet-debug", "/var/lib/kubelet", RES, "debug-scratch"),),
    nodes=(
        NodeSpec("pe-cpu-01", "cpu"),
        NodeSpec("pe-cpu-02", "cpu"),
        # Sensitive pool: H100s cut into seven hardware-isolated GPU instances, class-tainted.
        gpu_node("pe-h100-01", "sensitive-h100", H100, 8, "sensitive", mig="all-1g.10gb"),
        gpu_node("pe-h100-02", "sensitive-h100", H100, 8, "sensitive", mig="all-1g.10gb"),
        # External pool on MIG: customers get their own GPU instances, never a time slice.
        gpu_node("pe-a100-01", "external-a100", A100, 8, "external", mig="all-balanced"),
        gpu_node("pe-a100-02", "external-a100", A100, 8, "external", mig="all-balanced"),
        # K8S-002 (generic taint only) and SHARE-005 (ts-4 lacks failRequestsGreaterThanOne).
        gpu_node("pe-l40s-01", "shared-ts", L40S, 4, GENERIC, share="ts-4"),
        # Clean contrast: time-slicing with ts-strict, for one tenant, in a class-tainted pool.
        # Patched to the April 2025 driver, and the DCGM exporter switched off here (it clashes
        # with the team's Nsight profiling): "not installed", so the DCGM Exporter bulletin
        # leaves it `current` (ATTR-003 still says it sends no telemetry).
        gpu_node("pe-l40s-02", "research-ts", L40S, 4, "internal_trusted", share="ts-strict",
                 driver="550.163.01", dcgm_exporter=False),
        # ONE physical GPU as four replicas: K8S-002 (generic taint only), SHARE-005 (ts-4).
        gpu_node("pe-t4-01", "inference-ts", T4, 1, GENERIC, share="ts-4"),
        # The legacy pool: older host, GFD 0.8 legacy driver labels, standalone plugin v0.14.5,
        # toolkit v1.16.1 (its pod predates the OnDelete upgrade). K8S-002: no taint at all.
        gpu_node("pe-t4-02", "legacy-t4", T4, 1, None, driver="535.104.05", driver_labels="legacy",
                 toolkit_image=k8s.TOOLKIT_OLD, legacy_plugin=True,
                 host=Host("Ubuntu 20.04.6 LTS", "5.4.0-196-generic", "containerd://1.6.33", "v1.28.14")),
        # A renamed time-slicing resource: GPUs 0-3 as nvidia.com/gpu-ts (4 replicas each),
        # GPUs 4-7 whole nvidia.com/gpu.
        gpu_node("pe-h100-03", "research-mixed", H100, 8, "internal_trusted", share="ts-subset",
                 sliced_devices=4, sliced_resource=GPU_TS),
        # KAI Scheduler hands out fractions of whole L40S GPUs here (reservation pods hold them).
        gpu_node("pe-l40s-03", "notebooks-kai", L40S, 4, "internal"),
        # SHARE-009: MIG Manager failed to apply all-1g.10gb; the GPUs keep the balanced layout.
        replace(gpu_node("pe-a100-03", "external-a100", A100, 8, "external", mig="all-balanced"),
                mig_config="all-1g.10gb", mig_state="failed"),
    ),
    works={
        # The sensitive tenant: hardened pods on MIG GPU instances in its own tainted pool...
        "pe-h100-01": (
            Work(CLIN, "triton-ct-seg", "clinical/triton-ct-seg:24.05-py3", {MIG_1G: 1}, replicas=3, ports=(8000,)),
        ),
        "pe-h100-02": (
            Work(CLIN, "mri-finetune", "clinical/mri-finetune:1.8.2", {MIG_1G: 2}, "Job"),
            Work(CLIN, "mri-eval", "clinical/mri-finetune:1.8.2", {MIG_1G: 1}, "Job", phase="Succeeded"),
            # ...with one weakness, POD-007: a de-identification job by tag from Docker Hub.
            Work(CLIN, "dicom-deid", "docker.io/pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime", {MIG_1G: 1}, "Job"),
        ),
        # Orbital (external) on its own MIG GPU instances: the right way to share a GPU...
        "pe-a100-01": (Work(ORB, "fold-worker", "orbital/fold-worker:3.1.0", {MIG_3G: 1}, "StatefulSet", replicas=2),),
        "pe-a100-02": (
            Work(ORB, "embed-batch", "orbital/embed-batch:2.0.1", {MIG_2G: 1}, "Job"),
            # ...but POD-005: a helper given every MIG config device (/dev/nvidia-caps), with the
            # SYS_ADMIN the toolkit requires before it hands them over (POD-004 too).
            Work(ORB, "mig-tuner", "orbital/mig-tuner:0.3.0", {MIG_1G: 1}, "Pod", env={"NVIDIA_MIG_CONFIG_DEVICES": "all"},
                 security=adds("SYS_ADMIN")),
        ),
        # internal_trusted research and internal analytics time-slice the same four GPUs:
        # SHARE-001 (different tenants), SHARE-003 (internal may not time-slice with others).
        "pe-l40s-01": (
            # POD-001 on one pod only: a privileged debug container added to it (kubectl debug);
            # the Deployment's template is clean, so the finding names the pod.
            Work(RES, "vllm-dev", "research/vllm-dev:0.6.3", {GPU: 1}, replicas=2, debugged=True),
            # POD-001: a privileged container for Nsight profiling.
            Work(RES, "nsys-profile", "research/nsys-profile:2024.6", {GPU: 1}, "Pod", security=PRIVILEGED),
            # POD-002: hostIPC, a shared-memory shortcut between the ETL and a sidecar; a nightly
            # CronJob, so the finding names the CronJob, not tonight's Job.
            Work(ANA, "feature-etl", "analytics/feature-etl:3.3.1", {GPU: 1}, "CronJob", security={}, host_ipc=True),
            # TEN-001: a GPU pod in a namespace no tenant owns, privileged with SYS_ADMIN and /dev
            # (POD-001, POD-003, POD-004 judged as external), time-sliced beside research and
            # analytics: each shares a GPU with an unknown, external-class party (SHARE-001/003).
            Work(SANDBOX, "llm-playground", "docker.io/vllm/vllm-openai:v0.6.3", {GPU: 1},
                 security={"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}}, host_dev=True),
        ),
        "pe-l40s-02": (
            # POD-008: the sweep's Hugging Face and W&B tokens pasted into its env.
            Work(RES, "lora-sweep", "research/lora-sweep:1.4.0", {GPU: 1}, "Job", replicas=4, env=PASTED_TOKENS),
            Work(RES, "lora-sweep-prev", "research/lora-sweep:1.3.2", {GPU: 1}, "Job", replicas=2, phase="Succeeded"),
            Work(VAL, "gpu-burn-l40s", "platform/gpu-burn:2024.11", {GPU: 1}, "Job", phase="Succeeded"),
        ),
        # External orbital and internal analytics on ONE physical T4: SHARE-001 for certain;
        # SHARE-003 (external shares only whole GPUs or MIG instances); POD-009 for orbital,
        # outside the external pool.
        "pe-t4-01": (
            Work(ORB, "tts-demo", "orbital/tts-demo:0.9.4", {GPU: 1}),
            Work(ANA, "churn-scoring", "analytics/churn-scoring:1.12.0", {GPU: 1}),
        ),
        # POD-003: hostPath /dev in a Kubeflow notebook (unprivileged, so its device cgroup keeps
        # /dev/nvidia-caps shut: no POD-005), and POD-007: a tag from Docker Hub; filed under
        # the Notebook.
        "pe-t4-02": (
            Work(NB, "nb-priya", "docker.io/jupyter/pytorch-notebook:cuda12-python-3.11", {GPU: 1}, "Notebook",
                 security={}, host_dev=True),
        ),
        "pe-cpu-02": (
            Work(ANA, "spark-driver", "analytics/spark:3.5.1"),
            # POD-003: a log shipper of analytics' own reading and writing the node's /var/log
            # (every tenant's pod logs; the log-mount escape).
            Work(ANA, "log-shipper", "analytics/vector:0.41.1", host_paths=(("varlog", "/var/log", False),)),
            # POD-003 through a claim: a "scratch" volume an admin bound to a hostPath PV of the
            # kubelet's state for a debugging session, and never released.
            Work(RES, "dataset-index", "research/dataset-index:0.9.0", kind="Job", claims=(("debug-scratch", "/scratch"),)),
        ),
        # Research and analytics time-slice the renamed GPUs 0-3: SHARE-001, SHARE-003, and
        # K8S-001 for analytics, whose quota bounds nvidia.com/gpu but not nvidia.com/gpu-ts.
        # The whole GPUs beside them stay exclusive (the clean contrast).
        "pe-h100-03": (
            Work(RES, "vllm-canary", "research/vllm-dev:0.6.3", {GPU_TS: 1}, replicas=2),
            Work(ANA, "ab-scoring", "analytics/churn-scoring:1.12.0", {GPU_TS: 1}),
            Work(RES, "pretrain-1b", "research/pretrain:1b-r4", {GPU: 4}, "Job"),
        ),
        # KAI fractions of two tenants on ONE GPU (group 5e0c...): SHARE-001 for certain and
        # SHARE-003; a third fraction alone on another GPU is the clean contrast.
        "pe-l40s-03": (
            Work(RES, "nb-half", "research/notebook:2024.10", kind="Pod", fraction="0.5",
                 gpu_group="5e0c4b7a-kai-a"),
            Work(NB, "nb-quarter", "analytics/notebook:2024.10", kind="Pod", fraction="0.25",
                 gpu_group="5e0c4b7a-kai-a"),
            Work(NB, "nb-solo", "analytics/notebook:2024.10", kind="Pod", fraction="0.5",
                 gpu_group="9b21d3f0-kai-b"),
        ),
        # Orbital's MIG instance on the node whose reconfiguration failed (SHARE-009).
        "pe-a100-03": (Work(ORB, "fold-eval", "orbital/fold-worker:3.1.0", {MIG_1G: 1}, "Job"),),
    },
    reservations=(("pe-l40s-03", "5e0c4b7a-kai-a", 0), ("pe-l40s-03", "9b21d3f0-kai-b", 1)),
    sharing_keys=("exclusive", "ts-4", "ts-strict", "mps-2", "ts-subset"),
    quotas={
        VAL: {"requests.nvidia.com/gpu": "4"},
        RES: {"requests.nvidia.com/gpu": "16", f"requests.{GPU_TS}": "8"},
        ANA: {"requests.nvidia.com/gpu": "8"},
        # analytics-notebooks has no quota: K8S-001.
        ORB: {"requests.nvidia.com/gpu": "2", f"requests.{MIG_1G}": "8",
              f"requests.{MIG_2G}": "4", f"requests.{MIG_3G}": "4"},
        CLIN: {"requests.nvidia.com/gpu": "0", f"requests.{MIG_1G}": "28"},
    },
    services=((CLIN, "triton-ct-seg", 8000, 0),),
    egress_locked=(CLIN,),
    bindings=(
        # K8S-003: analytics may patch nodes, so it can relabel a node into another pool.
        ("analytics-node-labeler", "node-labeler", "Group:analytics-eng", None),
        # K8S-004: research may rewrite the sharing ConfigMaps in gpu-operator.
        ("research-sharing-config", "gpu-sharing-config-editor", "Group:research-ml", k8s.GPU_OPERATOR_NS),
        # K8S-008 (critical): analytics' engineers may edit the sensitive clinical namespace,
        # "for the dashboards".
        ("analytics-dashboards", "edit", "Group:analytics-eng", CLIN),
    ),
)

# At a GPU cloud. The operator installs the drivers (one NVIDIADriver per branch); GFD runs with
# MIG strategy single, but every GPU here is whole (mig.config all-disabled).
NEO_WEST = Cluster(
    name="neo-west",
    host=Host("Ubuntu 22.04.5 LTS", "5.15.0-122-generic", "containerd://1.7.23", "v1.30.5"),
    mig_strategy="single", driver_managed=True, zone="us-west-2a", cdi=True,
    nodes=(
        NodeSpec("nw-cpu-01", "cpu"),
        # The external pool, tainted tenant-class=external by the cloud's convention (an exact
        # taint the external class lists): neither K8S-002 nor POD-009 for kestrel here.
        gpu_node("nw-h200-01", "external-h200", H200, 8, "external", driver="550.127.05",
                 taint_key=CLOUD_CLASS_KEY),
        gpu_node("nw-h200-02", "external-h200", H200, 8, "external", driver="550.127.05",
                 taint_key=CLOUD_CLASS_KEY),
        # Clean contrast for MPS: one tenant only, in a class-tainted pool.
        gpu_node("nw-h100-01", "research-mps", H100, 8, "internal_trusted", share="mps-2", driver="550.127.05"),
        # No driver label at all: the version can come only from the driver pod's image tag.
        gpu_node("nw-h100-02", "research-h100", H100, 8, "internal_trusted", driver="535.183.01", driver_labels="none"),
        # STACK-004: its toolkit pod runs an image pinned only by digest: version unknown.
        gpu_node("nw-l40s-01", "analytics-ts", L40S, 4, "internal", share="ts-strict", driver="550.127.05",
                 toolkit_image=DIGEST_ONLY_TOOLKIT),
        gpu_node("nw-l40s-02", "analytics", L40S, 4, "internal", driver="550.127.05"),
        # The pool the NVIDIA DRA driver manages (Kubernetes 1.34, resource.k8s.io/v1).
        gpu_node("nw-h100-03", "shared-dra", H100, 4, "internal", driver="570.133.20",
                 host=Host("Ubuntu 24.04.2 LTS", "6.8.0-60-generic", "containerd://2.0.5", "v1.34.2")),
    ),
    works={
        # Kestrel, the clean tenant: whole H200s in the tainted external pool, hardened pods,
        # digests from our registry, a quota and locked-down egress.
        "nw-h200-01": (
            Work(KES, "vit-train", "kestrel/vit-train:2.2.0", {GPU: 4}, "Job"),
            Work(KES, "vit-serve", "kestrel/vit-serve:2.2.0", {GPU: 1}, replicas=2, ports=(8080,)),
        ),
        "nw-h200-02": (
            # K8S-006: Jupyter on 0.0.0.0 without token or password behind a NodePort
            # (and POD-007: a tag from Docker Hub).
            Work(ORB, "jupyter", "docker.io/jupyter/base-notebook:2023-10-20", {GPU: 1}, "StatefulSet",
                 security={}, ports=(8888,), args=JUPYTER_OPEN),
            # POD-004: NET_ADMIN added for an InfiniBand benchmark.
            Work(ORB, "ib-bench", "orbital/ib-bench:1.2.0", {GPU: 2}, "Job", security=adds("NET_ADMIN")),
            # Clean contrast for POD-008: the cloud key comes from a Secret, not a literal.
            Work(ORB, "protein-train", "orbital/protein-train:5.2.0", {GPU: 4}, "Job",
                 secret_env={"AWS_SECRET_ACCESS_KEY": "orbital-s3/secret-access-key"}),
        ),
        # Clean contrast for POD-003: the host's time zone, mounted read-only.
        "nw-h100-01": (
            Work(RES, "rag-serve", "research/rag-serve:2.1.0", {GPU: 1}, replicas=3,
                 host_paths=(("tz", "/etc/localtime", True),)),
            # POD-003: research's own GPU-usage exporter reads the kubelet's pod-resources socket
            # (which devices every pod on the node holds).
            Work(RES, "gpu-usage-exporter", "research/gpu-usage-exporter:0.2.1",
                 host_paths=(("pod-resources", "/var/lib/kubelet/pod-resources", True),)),
        ),
        "nw-h100-02": (
            Work(RES, "pretrain-7b", "research/pretrain:7b-r12", {GPU: 4}, "Job"),
            # POD-002: multi-node inference sharing memory over hostIPC, a LeaderWorkerSet whose
            # leader and worker run in two StatefulSets: one finding, on the LeaderWorkerSet.
            Work(RES, "llm-multinode", "research/vllm-dev:0.6.3", {GPU: 1}, "LeaderWorkerSet",
                 replicas=2, host_ipc=True),
            # POD-004: SYS_ADMIN for DCGM profiling counters (implies every NVIDIA capability).
            Work(EVAL, "dcgm-prof-eval", "research/eval-harness:0.4.5", {GPU: 1}, "Pod", security=adds("SYS_ADMIN")),
            Work(VAL, "dcgm-diag", f"{k8s.NVCR}/cloud-native/dcgm:3.3.9-1-ubuntu22.04", {GPU: 8}, "Job", phase="Succeeded"),
        ),
        "nw-l40s-01": (Work(ANA, "embedding-refresh", "analytics/embedding-refresh:0.8.0", {GPU: 1}, replicas=3),),
        "nw-l40s-02": (
            Work(ANA, "xgb-train", "analytics/xgb-train:2.1.1", {GPU: 2}, "Job"),
            Work(VAL, "gpu-burn-l40s", "platform/gpu-burn:2024.11", {GPU: 2}, "Job", phase="Succeeded"),
        ),
        # The Pending pod: eight H100s the cluster does not have free.
        None: (Work(RES, "pretrain-70b", "research/pretrain:70b-r3", {GPU: 8}, "Job", phase="Pending"),),
    },
    quotas={
        VAL: {"requests.nvidia.com/gpu": "4"},
        RES: {"requests.nvidia.com/gpu": "24"},
        # research-eval has no quota: K8S-001.
        # Analytics bounds its DRA GPUs too; research's quota misses the device class: K8S-001.
        ANA: {"requests.nvidia.com/gpu": "8", "gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "4"},
        # Room for a whole H200 node's job (nw-h200-04, demo/later_nodes.py).
        ORB: {"requests.nvidia.com/gpu": "16"},
        KES: {"requests.nvidia.com/gpu": "16"},
    },
    services=((ORB, "jupyter", 8888, 30888), (KES, "vit-serve", 8080, 0)),
    egress_locked=(KES,),
    cilium_egress=("research-eval",),
    # The orbital notebook is also published on the shared gateway (K8S-006 names both ways).
    routes=((ORB, "jupyter", "notebooks.orbital.example.com"),),
    # The clean contrast to K8S-003: reading nodes is harmless.
    bindings=(
        ("research-node-reader", "gpu-node-reader", "Group:research-ml", None),
        # K8S-003 and K8S-004 by escalation: research may impersonate system:masters.
        ("research-ci-impersonator", "ci-impersonator", "Group:research-ml", None),
    ),
    dra_claims=(
        # Research and analytics time-slice H100 0 through their own DRA claims (the driver's
        # GpuConfig sharing TimeSlicing): SHARE-001 and SHARE-003, found from the claims.
        Claim(RES, "rag-ts-gpu", "nw-h100-03", 0, "rag-dra-0", "research/rag-serve", "TimeSlicing"),
        Claim(ANA, "embed-ts-gpu", "nw-h100-03", 0, "embed-dra-0", "analytics/embedding-refresh", "TimeSlicing"),
        # DRA-001: analytics' "GPU monitor" claims the same H100 with adminAccess.
        Claim(ANA, "gpu-peek", "nw-h100-03", 0, "gpu-peek", "analytics/gpu-peek", admin=True),
        # The clean contrast: a whole H100 from research's own template (exclusive).
        Claim(RES, "pretrain-dra-0-gpu-x7k2p", "nw-h100-03", 2, "pretrain-dra-0", "research/pretrain",
              template="one-h100"),
    ),
    sharing_keys=("exclusive", "ts-strict", "mps-2"),  # no lax ts-4 here: SHARE-005 finds nothing
)

# On Google Kubernetes Engine: no GFD and no GPU Operator. GKE's own labels say how a node shares
# its GPU (here time-sharing, four clients per GPU), its device plugin (a GKE build) hands out
# the shares, and GKE installs the driver. GKE enforces one shared GPU per container, so no
# SHARE-005 here.
GKE_TAINT = (("nvidia.com/gpu", "present", "NoSchedule"),)  # GKE's automatic GPU taint
GKE_CENTRAL = Cluster(
    name="gke-central",
    host=Host("Container-Optimized OS from Google", "6.6.56+", "containerd://1.7.24", "v1.31.5-gke.1023000"),
    mig_strategy="none", driver_managed=False, zone="us-central1-a", gke=True,
    nodes=(
        NodeSpec("gke-central-default-pool-3f1a", "default-pool"),
        # ONE physical L4 as four time-shared clients: research's eval harness and analytics'
        # notebook land on it together: SHARE-001 for certain, SHARE-003 (internal may not
        # time-slice with another tenant).
        NodeSpec("gke-central-l4-shared-7c2d", "l4-shared", L4, 1, "time-slicing", 4, taints=GKE_TAINT,
                 gke_accelerator="nvidia-l4"),
    ),
    works={
        "gke-central-l4-shared-7c2d": (
            Work(EVAL, "eval-harness-gke", "research/eval-harness:0.4.5", {GPU: 1}),
            Work(NB, "nb-burst", "analytics/notebook:2024.10", {GPU: 1}, "StatefulSet"),
        ),
    },
    quotas={EVAL: {"requests.nvidia.com/gpu": "4"}, NB: {"requests.nvidia.com/gpu": "2"}},
    egress_locked=(EVAL, NB),
    sharing_keys=(),
)

CLUSTERS = (PROD_EAST, NEO_WEST, GKE_CENTRAL)
# fmt: on
