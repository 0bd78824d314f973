"""normalise(): pods, containers and pod_from_template()."""

from __future__ import annotations

import pytest

from inventory import snapshot as snap
from inventory.snapshot import EnvVar, Volume, VolumeMount
from inventory.sources.normalise import normalise, pod_from_template
from tests.inventory.normalise_helpers import ctr, pod

# --- pods --------------------------------------------------------------------------------------


def test_pod_fields():
    raw = pod(
        "team-alpha",
        "trainer-7d9f-abcde",
        ctr(
            "trainer",
            securityContext={
                "privileged": True,
                "allowPrivilegeEscalation": True,
                "capabilities": {"add": ["cap_sys_admin", "NET_RAW"], "drop": ["ALL"]},
            },
            resources={
                "requests": {"cpu": "4", "nvidia.com/gpu": 1},
                "limits": {"memory": "64Gi", "nvidia.com/gpu": "1"},
            },
            env=[
                {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                {"name": "EMPTY"},
                {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
                {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            ],
            volumeMounts=[{"name": "caps", "mountPath": "/dev/nvidia-caps", "readOnly": True}],
            ports=[{"containerPort": 8888}, {"containerPort": "http"}],
            command=["python", "-m", "train"],
            args=["--epochs", 3],
        ),
        node_name="gpu-h100-01",
        initContainers=[ctr("fetch", "registry.example.com/ml/fetch:1.0")],
        securityContext={"runAsNonRoot": True},
        serviceAccountName="alpha-runner",
        hostPID=True,
        hostNetwork=True,
        nodeSelector={"tenant-class": "internal"},
        tolerations=[
            {
                "key": "nvidia.com/gpu",
                "operator": "Exists",
                "effect": "NoSchedule",
                "tolerationSeconds": 30,
            }
        ],
        volumes=[
            {"name": "caps", "hostPath": {"path": "/dev/nvidia-caps"}},
            {"name": "scratch", "emptyDir": {}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "alpha-data"}},
        ],
    )
    raw["metadata"]["labels"] = {"app": "trainer"}
    raw["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "trainer-7d9f"}]
    (result,) = normalise([raw]).pods
    init, main = result.containers
    assert (init.name, init.init, init.run_as_non_root) == ("fetch", True, True)
    assert (main.privileged, main.allow_privilege_escalation) == (True, True)
    assert (main.capabilities_add, main.capabilities_drop) == (("SYS_ADMIN", "NET_RAW"), ("ALL",))
    assert (main.gpu_requests, main.gpu_limits) == (
        {"nvidia.com/gpu": "1"},
        {"nvidia.com/gpu": "1"},
    )
    assert main.env == (
        EnvVar("NVIDIA_VISIBLE_DEVICES", "all"),
        EnvVar("EMPTY", ""),
        EnvVar("TOKEN", None, "secretKeyRef", source="hf", key="token"),
        EnvVar("NODE", None, "fieldRef"),
    )
    assert main.volume_mounts == (VolumeMount("caps", "/dev/nvidia-caps", True),)
    assert (main.ports, main.command, main.args) == (
        (8888,),
        ("python", "-m", "train"),
        ("--epochs", "3"),
    )
    assert result.volumes == (
        Volume("caps", "/dev/nvidia-caps", "hostPath"),
        Volume("scratch", None, "emptyDir"),
        Volume("data", None, "persistentVolumeClaim", claim="alpha-data"),
    )
    assert (result.node_name, result.phase, result.service_account) == (
        "gpu-h100-01",
        "Running",
        "alpha-runner",
    )
    assert (result.host_pid, result.host_ipc, result.host_network) == (True, False, True)
    assert (result.owner_kind, result.owner_name) == ("ReplicaSet", "trainer-7d9f")
    assert result.labels == {"app": "trainer"}
    assert result.node_selector == {"tenant-class": "internal"}
    assert result.tolerations == (
        {
            "key": "nvidia.com/gpu",
            "operator": "Exists",
            "effect": "NoSchedule",
            "tolerationSeconds": "30",
        },
    )
    assert result.gpu_resources == {"nvidia.com/gpu": 1}


def gpus(n: int, **fields) -> dict:
    """A container asking for `n` whole GPUs (by limit, as is usual)."""
    return {"resources": {"limits": {"nvidia.com/gpu": str(n)}}, **fields}


SIDECAR = {"restartPolicy": "Always"}


# What the scheduler reserves: app containers and native sidecars run together and add up; an
# init container runs alone beside the sidecars declared before it.
@pytest.mark.parametrize(
    ("init", "app", "expected"),
    [
        pytest.param([], [gpus(1), gpus(2)], 3, id="apps-add-up"),
        pytest.param([gpus(4)], [gpus(1)], 4, id="larger-init-wins"),
        pytest.param([gpus(1)], [gpus(2)], 2, id="smaller-init-does-not-add"),
        pytest.param([gpus(1, **SIDECAR)], [gpus(1)], 2, id="sidecar-adds-to-the-app"),
        pytest.param([gpus(1, **SIDECAR)], [{}], 1, id="sidecar-alone"),
        pytest.param([gpus(1, **SIDECAR), gpus(1)], [{}], 2, id="init-after-a-sidecar"),
        pytest.param([gpus(1), gpus(1, **SIDECAR)], [{}], 1, id="init-before-the-sidecar"),
        pytest.param(
            [gpus(1, **SIDECAR), gpus(3)], [gpus(1)], 4, id="init-beside-the-sidecar-wins"
        ),
    ],
)
def test_gpus_held_count_native_sidecars_with_the_app(init, app, expected):
    containers = [ctr(f"app-{i}", **c) for i, c in enumerate(app)]
    init_containers = [ctr(f"init-{i}", **c) for i, c in enumerate(init)]
    (result,) = normalise([pod("team-a", "p", *containers, initContainers=init_containers)]).pods
    assert result.gpu_resources == ({"nvidia.com/gpu": expected} if expected else {})
    sidecars = [c.name for c in result.containers if c.sidecar]
    assert sidecars == [f"init-{i}" for i, c in enumerate(init) if c.get("restartPolicy")]


def test_the_controller_reference_names_the_owner_whatever_its_place():
    raw = pod("team-a", "trainer-0", ctr("main"))
    raw["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "run-state"},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "trainer", "controller": True},
    ]
    (result,) = normalise([raw]).pods
    assert (result.owner_kind, result.owner_name) == ("StatefulSet", "trainer")


def test_pod_defaults():
    raw = {"kind": "Pod", "metadata": {"name": "bare", "namespace": "team-beta"}}
    (result,) = normalise([raw]).pods
    assert (result.phase, result.service_account, result.node_name) == ("Unknown", "default", None)
    assert (result.containers, result.volumes, result.owner_kind) == ((), (), None)


@pytest.mark.parametrize(
    "spec",
    [
        {"containers": None},
        {"containers": "trainer"},
        {"containers": [None, "x", {"name": "c", "securityContext": ["privileged"]}]},
        {"containers": [{"name": "c", "securityContext": {"capabilities": "SYS_ADMIN"}}]},
        {"containers": [{"name": "c", "resources": "lots", "env": {"A": "1"}, "ports": None}]},
        {"containers": [{"name": "c", "resources": {"limits": ["nvidia.com/gpu"]}}]},
        {"containers": [{"name": "c", "env": [{"name": "A", "valueFrom": "secret"}]}]},
        {
            "volumes": [{"name": "v", "hostPath": None}, None],
            "tolerations": "all",
            "nodeSelector": [],
        },
        {"securityContext": "strict", "initContainers": {"name": "x"}},
    ],
)
def test_malformed_pod_subfields_are_tolerated(spec):
    (result,) = normalise(
        [{"kind": "Pod", "metadata": {"name": "odd", "namespace": "ns"}, "spec": spec}]
    ).pods
    for container in result.containers:
        assert (container.privileged, container.capabilities_add, container.gpu_limits) == (
            False,
            (),
            {},
        )


def test_run_as_non_root_container_overrides_pod():
    raw = pod(
        "team-alpha",
        "p",
        ctr("a", securityContext={"runAsNonRoot": False}),
        ctr("b"),
        securityContext={"runAsNonRoot": True},
    )
    (result,) = normalise([raw]).pods
    assert [c.run_as_non_root for c in result.containers] == [False, True]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            {
                "kind": "CronJob",
                "metadata": {"name": "nightly-eval", "namespace": "team-alpha"},
                "spec": {
                    "jobTemplate": {
                        "spec": {
                            "template": {"spec": {"hostIPC": True, "containers": [ctr("eval")]}}
                        }
                    }
                },
            },
            ("team-alpha", "nightly-eval", "CronJob", ("eval",), True),
        ),
        (
            {
                "kind": "StatefulSet",
                "metadata": {"name": "notebook"},
                "spec": {
                    "template": {
                        "metadata": {"labels": {"app": "nb"}},
                        "spec": {"containers": [ctr("jupyter")]},
                    }
                },
            },
            ("default", "notebook", "StatefulSet", ("jupyter",), False),
        ),
    ],
)
def test_pod_from_template(obj, expected):
    result = pod_from_template(obj)
    assert result is not None
    names = tuple(c.name for c in result.containers)
    assert (result.namespace, result.name, result.owner_kind, names, result.host_ipc) == expected
    assert result.owner_name == result.name


@pytest.mark.parametrize(
    "obj",
    [
        {"kind": "Deployment", "metadata": {"name": "empty"}, "spec": {}},
        {"kind": "CronJob", "metadata": {"name": "c"}, "spec": {"jobTemplate": None}},
        {"kind": "Service", "metadata": {"name": "s"}, "spec": {"template": {"spec": {}}}},
        {"kind": "Job", "metadata": {"name": "j"}, "spec": {"template": {"spec": None}}},
    ],
)
def test_pod_from_template_without_pod_spec(obj):
    assert pod_from_template(obj) is None


def test_windows_host_process_container_overrides_pod():
    raw = pod(
        "team-alpha",
        "p",
        ctr("a", securityContext={"windowsOptions": {"hostProcess": False}}),
        ctr("b"),
        ctr("c", securityContext={"windowsOptions": {"hostProcess": True}}),
        securityContext={"windowsOptions": {"hostProcess": True}},
        hostNetwork=True,
    )
    (result,) = normalise([raw]).pods
    assert [c.host_process for c in result.containers] == [None, "pod", "container"]
    (plain,) = normalise([pod("team-alpha", "q", ctr("a"))]).pods
    assert plain.containers[0].host_process is None


def test_security_details_survive_the_stored_form():
    """What POD-001/003/004/005 read (HostProcess, hostUsers, subPath, CAP_-prefixed names)
    comes back from the JSON the sync stores."""
    raw = pod(
        "team-alpha",
        "p",
        ctr(
            "a",
            securityContext={
                "windowsOptions": {"hostProcess": True},
                "capabilities": {"add": ["NET_RAW", "CAP_SYS_ADMIN"]},
            },
            volumeMounts=[{"name": "h", "mountPath": "/h", "subPath": "srv/data"}],
        ),
        hostUsers=False,
        volumes=[{"name": "h", "hostPath": {"path": "/"}}],
    )
    (result,) = normalise([raw]).pods
    stored = snap.from_dict(snap.Pod, snap.to_dict(result))
    assert stored == result
    container = stored.containers[0]
    assert (stored.host_users, container.host_process) == (False, "container")
    assert (container.capabilities_add, container.capabilities_add_prefixed) == (
        ("NET_RAW", "SYS_ADMIN"),
        (1,),
    )
    assert container.volume_mounts[0].sub_path == "srv/data"


# NVIDIA's Network Operator advertises NICs under nvidia.com/: a pod holding only those holds
# no GPU (the quota, egress, admission and pool checks would otherwise judge it a GPU pod).
@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        pytest.param({"nvidia.com/hostdev": "1"}, {}, id="sriov-hostdev"),
        pytest.param({"nvidia.com/sriov_rdma_vf": "2"}, {}, id="sriov-rdma-vf"),
        pytest.param({"nvidia.com/rdma_shared_device_a": "1"}, {}, id="rdma-shared"),
        pytest.param({"nvidia.com/mlnx_sriov_netdevice": "1"}, {}, id="netdevice"),
        pytest.param({"nvidia.com/ib_sriov": "1"}, {}, id="infiniband-vf"),
        pytest.param(
            {"nvidia.com/gpu": "8", "nvidia.com/hostdev": "8"}, {"nvidia.com/gpu": 8}, id="dgx"
        ),
        # GPU names a device-plugin config or the sandbox plugin advertises stay GPUs.
        pytest.param({"nvidia.com/a100": "1"}, {"nvidia.com/a100": 1}, id="renamed-gpu"),
        pytest.param({"nvidia.com/gpu-ts": "1"}, {"nvidia.com/gpu-ts": 1}, id="renamed-shared"),
        pytest.param(
            {"nvidia.com/NVIDIA_A10-12Q": "1"}, {"nvidia.com/NVIDIA_A10-12Q": 1}, id="vgpu-type"
        ),
        pytest.param(
            {"nvidia.com/mig-1g.10gb": "1"}, {"nvidia.com/mig-1g.10gb": 1}, id="mig-profile"
        ),
    ],
)
def test_network_operator_nics_are_not_gpus(limits, expected):
    raw = pod("team-a", "p", ctr("mpi", resources={"limits": limits, "requests": limits}))
    (result,) = normalise([raw]).pods
    assert result.gpu_resources == expected
    assert result.uses_gpu is bool(expected)


def test_other_vendors_accelerators_are_kept_apart_from_nvidia_gpus():
    # LEAK-002 needs who holds an AMD GPU; no NVIDIA check counts it as one of theirs.
    amd = {"amd.com/gpu": "2", "cpu": "4"}
    raw = pod("team-a", "p", ctr("rocm", resources={"limits": amd, "requests": amd}))
    (result,) = normalise([raw]).pods
    assert result.other_accelerators == {"amd.com/gpu": 2}
    assert result.gpu_resources == {} and not result.uses_gpu


def test_pod_scope_facts_for_scoped_quotas_are_read_and_stored():
    raw = pod(
        "team-alpha",
        "job-1",
        ctr("main", resources={"limits": {"nvidia.com/gpu": "1"}}),
        activeDeadlineSeconds=600,
        priorityClassName="batch",
        affinity={
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "podAffinityTerm": {"topologyKey": "x", "namespaces": ["b"]}}
                ]
            }
        },
    )
    (found,) = normalise([raw]).pods
    assert found.quota_scope == snap.PodScope(
        terminating=True, best_effort=True, cross_namespace_affinity=True, priority_class="batch"
    )
    assert snap.from_dict(snap.Pod, snap.to_dict(found)) == found
    # A pod stored before the facts were kept reads them as unknown, not as a guess.
    stored = {k: v for k, v in snap.to_dict(found).items() if k != "quota_scope"}
    assert snap.from_dict(snap.Pod, stored).quota_scope is None
