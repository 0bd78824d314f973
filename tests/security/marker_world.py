"""A tenant whose every name carries one marker string, added to the permission matrix's
world (tests/security/matrix_world.py) on alpha's cluster "lab": its namespaces, pods,
ConfigMaps, principals, service account, node selector and affinity, images, a node label
and taint, reset attestations with notes, GPU telemetry, a sharing request, drift, sync-run
warnings and a failed run all say MARKER. Its pods time-slice alpha's GPU, and one of its
pods held alpha's exclusive GPU before alpha without a reset, so alpha's co-tenancy and
handover findings are about it. On a DRA node, alpha and the marker time-slice one GPU through
their own ResourceClaims, so a claim of the marker's is in alpha's evidence too.

tests/security/test_redaction_sweep.py then reads everything viewer_alpha can reach and
asserts MARKER appears nowhere."""

from __future__ import annotations

import copy
from datetime import date, timedelta
from pathlib import Path

from django.utils import timezone

from tests.security.matrix_world import ZZ9_CONFIG

MARKER = "zq7marker"
SLUG = MARKER
TRAIN, SERVE = f"{MARKER}-train", f"{MARKER}-serve"  # registered; labelled only
PRINCIPAL = f"{MARKER}-ops"
EXCLUSIVE_NODE = "gpu-ex-1"
EXCLUSIVE_UUID = "GPU-ex-0000-1111-2222-333333333333"
DRA_NODE = "gpu-dra-1"
DRA_CLAIM = f"{MARKER}-gpu"  # the marker's ResourceClaim
BROKEN_SHARING = "sharing:\n  timeSlicing: [unclosed\n"  # looks like a config, is not YAML
TENANT_SHARING = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 8\n"  # noqa: E501


def _ns(name: str, labels: dict | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "spec": {},
        "status": {"phase": "Active"},
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels or {}},
    }


def _pod(template: dict, namespace: str, name: str, node: str, **spec: object) -> dict:
    pod = copy.deepcopy(template)
    pod["metadata"] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{namespace}-{name}",
        "creationTimestamp": "2026-11-20T08:00:00Z",
        "labels": {"app": f"{MARKER}-app"},
    }
    pod["spec"].update(nodeName=node, serviceAccountName=f"{MARKER}-sa", **spec)
    pod["spec"]["containers"][0]["image"] = f"registry.{MARKER}.example/{name}:1"
    return pod


def _affinity() -> dict:
    term = {"key": f"{MARKER}.example/pool", "operator": "In", "values": [f"{MARKER}-gpus"]}
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [term]}}
            ]
        }
    }


def _configmap(namespace: str, name: str, data: dict) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "data": data,
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
    }


def _rbac() -> list[dict]:
    """The marker's operators may patch nodes cluster-wide, and hold `edit` in alpha's
    namespace (a binding alpha's viewer sees as theirs, naming another tenant's group). `edit`
    is Kubernetes' default (the world holds no ClusterRole of that name), so K8S-008 fires on
    that binding for alpha: its name is alpha's to read (it lives in alpha's namespace, as
    tests/security/test_binding_name_redaction.py allows), so it carries no marker; the
    finding must still not name the marker's group or tenant."""
    group = {"kind": "Group", "name": PRINCIPAL, "apiGroup": "rbac.authorization.k8s.io"}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": f"{MARKER}-node-patcher", "uid": f"uid-{MARKER}-role"},
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}],
    }
    cluster_binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{MARKER}-node-patch", "uid": f"uid-{MARKER}-crb"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": f"{MARKER}-node-patcher",
        },
        "subjects": [group],
    }
    in_alpha = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {
            "name": "ops-edit",
            "namespace": "team-alpha",
            "uid": f"uid-{MARKER}-rb",
        },
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [group, {"kind": "ServiceAccount", "name": f"{MARKER}-sa", "namespace": TRAIN}],
    }
    return [role, cluster_binding, in_alpha]


def marker_items(small: list[dict]) -> list[dict]:
    """Kubernetes objects of the marker tenant, plus "lab"'s own nodes as the marker's
    presence changes them: gpu-ts-1 labelled and tainted for it, and an exclusive GPU node
    that alpha now runs on."""
    by_name = {i["metadata"]["name"]: i for i in small}
    trainer = by_name["trainer-0"]
    shared = copy.deepcopy(by_name["gpu-ts-1"])
    shared["metadata"]["labels"]["gpuposture.io/tenant"] = SLUG
    shared["spec"]["taints"] = [
        {"key": "gpuposture.io/tenant", "value": SLUG, "effect": "PreferNoSchedule"}
    ]
    exclusive = copy.deepcopy(by_name["gpu-ts-1"])
    labels = exclusive["metadata"]["labels"]
    labels.pop("nvidia.com/device-plugin.config")
    # GFD's own verdict for an unshared node: without it the device plugin's fallback (the
    # only config in the map) would time-slice this node too.
    labels.update(
        {
            "kubernetes.io/hostname": EXCLUSIVE_NODE,
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.replicas": "1",
            "nvidia.com/gpu.sharing-strategy": "none",
        }
    )
    exclusive["metadata"].update(name=EXCLUSIVE_NODE, uid=f"uid-{EXCLUSIVE_NODE}")
    exclusive["status"]["capacity"]["nvidia.com/gpu"] = "1"
    exclusive["status"]["allocatable"]["nvidia.com/gpu"] = "1"
    alpha_exclusive = copy.deepcopy(trainer)
    alpha_exclusive["metadata"].update(name="trainer-ex-0", uid="uid-team-alpha-trainer-ex-0")
    alpha_exclusive["spec"]["nodeName"] = EXCLUSIVE_NODE
    mig_user = _pod(trainer, TRAIN, f"{MARKER}-mig-0", "mig-lab-1")
    mig_user["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/mig-2g.20gb": "1"},
        "requests": {"nvidia.com/mig-2g.20gb": "1"},
    }
    privileged = {"securityContext": {"privileged": True}}
    server = _pod(trainer, SERVE, f"{MARKER}-server-0", "gpu-ts-1", affinity=_affinity())
    server["spec"]["containers"][0].update(privileged)
    return [
        shared,
        exclusive,
        alpha_exclusive,
        _ns(TRAIN),
        _ns(SERVE, {"gpuposture.io/tenant": SLUG}),
        _pod(
            trainer,
            TRAIN,
            f"{MARKER}-trainer-0",
            "gpu-ts-1",
            nodeSelector={f"{MARKER}.example/pool": f"{MARKER}-gpus"},
        ),
        server,
        mig_user,
        _configmap(SERVE, "default-mig-parted-config", {"config.yaml": ZZ9_CONFIG}),
        _configmap(TRAIN, f"{MARKER}-broken-sharing", {"config.yaml": BROKEN_SHARING}),
        _configmap(SERVE, f"{MARKER}-sharing", {"ts-4": TENANT_SHARING}),
        *_rbac(),
    ]


def dra_items() -> list[dict]:
    """Alpha and the marker time-slice one GPU of node DRA_NODE through their own DRA claims:
    alpha's co-tenancy evidence names the marker's claim (its name carries MARKER, as every
    name of the marker's does)."""
    from tests.posture.dra_world import claim, device_class, dra_pod, gpu_device, resource_slice
    from tests.posture.gpu_access_world import node

    def held(ns: str, name: str, pod: str) -> dict:
        return claim(ns, name, ["gpu-0"], sharing="TimeSlicing", reserved_for=[pod], node=DRA_NODE)

    return [
        node(DRA_NODE, gpus=2),
        device_class(),
        resource_slice(DRA_NODE, [gpu_device(0), gpu_device(1)]),
        held("team-alpha", "train-dra", "trainer-dra-0"),
        held(TRAIN, DRA_CLAIM, f"{MARKER}-dra-0"),
        dra_pod("team-alpha", "trainer-dra-0", "train-dra", node_name=DRA_NODE),
        dra_pod(TRAIN, f"{MARKER}-dra-0", DRA_CLAIM, node_name=DRA_NODE),
    ]


def marker_tenant(personas) -> None:
    from gpuposture.base import roles
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document
    from tests.conftest import make_user

    viewer = make_user(f"viewer-{MARKER}", roles.TENANT_VIEWER)
    personas[f"viewer_{MARKER}"] = viewer
    document = {
        "tenants": [
            {
                "slug": SLUG,
                "name": f"{MARKER.title()} Holdings",
                "trust_class": "external",
                "namespaces": [TRAIN],
                "principals": [f"group:{PRINCIPAL}", f"user:{MARKER}-admin@example.com"],
                "viewers": [viewer.username],
            }
        ]
    }
    tenants_apply(specs=parse_tenants_document(document), actor=f"{MARKER} world")


def _telemetry(lab) -> None:
    """The marker held alpha's exclusive GPU before alpha, with no reset between (LEAK-001),
    and used the shared GPU; rolled up so the utilisation page has its hours."""
    from telemetry.rollup import telemetry_rollup
    from telemetry.samples import GpuSample
    from telemetry.services import samples_ingest

    start = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=4)

    def series(offset: int, namespace: str, pod: str, host: str, uuid: str) -> list[GpuSample]:
        return [
            GpuSample(
                time=start + timedelta(minutes=offset + m),
                hostname=host,
                gpu="0",
                uuid=uuid,
                model="NVIDIA H100",
                util=3.0,
                namespace=namespace,
                pod=pod,
            )
            for m in range(0, 61, 5)
        ]

    samples = [
        *series(0, TRAIN, f"{MARKER}-old-0", EXCLUSIVE_NODE, EXCLUSIVE_UUID),
        *series(90, "team-alpha", "trainer-ex-0", EXCLUSIVE_NODE, EXCLUSIVE_UUID),
        *series(0, TRAIN, f"{MARKER}-trainer-0", "gpu-ts-1", "GPU-ts-0000"),
        *series(0, "team-alpha", "trainer-0", "gpu-ts-1", "GPU-ts-0000"),
    ]
    samples_ingest(cluster=lab, samples=samples)
    telemetry_rollup()


def _records(lab, personas) -> None:
    """What people and earlier syncs recorded about the marker on "lab"."""
    from inventory.models import DriftEvent, SyncRun
    from sharing.services import sharing_request_create
    from telemetry.models import GpuUsageDaily, ResetAttestation
    from tenants.models import Tenant

    alpha, marker = Tenant.objects.get(slug="alpha"), Tenant.objects.get(slug=SLUG)
    now = timezone.now()
    note = f"handover after {TRAIN}/{MARKER}-trainer-0; {SLUG} asked for it"
    for previous, following in ((marker, alpha), (alpha, marker)):
        ResetAttestation.objects.create(
            cluster=lab,
            node="gpu-ts-1",
            reset_at=now - timedelta(days=1),
            method="reboot",
            previous_tenant=previous,
            next_tenant=following,
            recorded_by="plat",
            note=note,
        )
    GpuUsageDaily.objects.create(
        cluster=lab,
        day=date.today() - timedelta(days=1),
        hostname="gpu-ts-1",
        uuid="GPU-ts-0000",
        tenant=marker,
        attribution="tenant",
        confidence="shared",
        gpu_hours=30.0,
        busy_gpu_hours=0.2,
        samples=360,
    )
    sharing_request_create(
        tenant=marker,
        cluster=lab,
        mode="mig_gi",
        user=personas["platform_engineer"],
        justification=f"{SLUG} batch jobs in {SERVE} fit one GPU instance each.",
    )
    run = SyncRun.objects.filter(cluster=lab).order_by("-id").first()
    DriftEvent.objects.create(
        cluster=lab,
        sync_run=run,
        kind="config",
        check_id="DRIFT-001",
        subject_kind="ConfigMap",
        subject_namespace=SERVE,
        subject_name=f"{MARKER}-sharing",
        summary=f"{SERVE}/{MARKER}-sharing key ts-4: replicas 4 -> 8",
        before={"configmap": f"{SERVE}/{MARKER}-sharing", "replicas": 4},
        after={"configmap": f"{SERVE}/{MARKER}-sharing", "replicas": 8},
        nodes=["gpu-ts-1"],
        detected_at=now,
    )
    SyncRun.objects.create(
        cluster=lab,
        status="failed",
        trigger="cli",
        source="lab.json",
        finished_at=now,
        error=f"Pod {TRAIN}/{MARKER}-trainer-0 could not be read; {SLUG}'s ConfigMap "
        f"{SERVE}/{MARKER}-sharing neither",
        warnings=[f"ConfigMap {TRAIN}/{MARKER}-broken-sharing key 'config.yaml' is not YAML"],
    )


def add_marker_tenant(personas, directory: Path):
    """The marker tenant, synced into "lab" next to alpha, with its records; then scored."""
    from inventory.models import Cluster
    from posture.services import posture_evaluate
    from tests.conftest import load_json
    from tests.security.matrix_world import _mig_items, _sync

    marker_tenant(personas)
    small = load_json("small-cluster.json")["items"]
    mig = _mig_items("mig-lab-1", "team-alpha", "trainer-mig-0")
    replaced = {"gpu-ts-1"}
    kept = [i for i in small if i["metadata"]["name"] not in replaced]
    lab = _sync("lab", [*kept, *mig, *marker_items(small), *dra_items()], directory)
    assert lab.pk == Cluster.objects.get(name="lab").pk
    _telemetry(lab)
    _records(lab, personas)
    posture_evaluate()
    return lab
