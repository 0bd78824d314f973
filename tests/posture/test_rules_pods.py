"""POD-001..005 over hand-built pods and over real third-party manifests."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from inventory.snapshot import ClusterSnapshot, Container, Namespace
from inventory.sources.normalise import pod_from_template
from posture.inputs import PostureInputs
from posture.rules.pod.host_areas import dangerous_host_path
from tests.posture.builders import (
    container,
    container_entry,
    container_names,
    env,
    gpu_node,
    host_path,
    inputs,
    mount,
    pod,
    run,
    tenant,
)
from tests.realworld import realworld

TEAM = tenant("team", namespaces=("team-a",))
POD_CHECKS = ("POD-001", "POD-002", "POD-003", "POD-004", "POD-005")


def _run_pod(check_id: str, *pods):
    return run(check_id, inputs(pods=pods, tenants=(TEAM,)))


def _fired(*pods) -> set[str]:
    world = inputs(pods=pods, tenants=(TEAM,))
    return {check_id for check_id in POD_CHECKS if run(check_id, world)}


# --- tenant vs platform, active vs finished -------------------------------------------------

ROOT_POD = dict(
    containers=(container(privileged=True, capabilities_add=("SYS_ADMIN",)),),
    volumes=(host_path("root", "/"),),
    host_pid=True,
)


def test_every_pod_check_fires_on_a_root_pod_of_a_tenant():
    assert _fired(pod("team-a", "root", **ROOT_POD)) == set(POD_CHECKS)


@pytest.mark.parametrize(
    ("namespace", "phase"),
    [("kube-system", "Running"), ("gpu-operator", "Pending"), ("team-a", "Succeeded")],
)
def test_platform_and_finished_pods_never_fire(namespace, phase):
    assert _fired(pod(namespace, "root", phase=phase, **ROOT_POD)) == set()


def test_a_platform_class_tenants_pods_are_platform_workloads():
    """The platform team modelled as a tenant of the platform class (DESIGN §3): its
    privileged GPU health DaemonSet is judged as in a platform namespace; another tenant's
    same pod still fires everything."""
    ops = tenant("ops", cls="platform", namespaces=("ops",))
    world = inputs(pods=(pod("ops", "gpu-health", **ROOT_POD),), tenants=(TEAM, ops))
    assert {c for c in POD_CHECKS if run(c, world)} == set()
    assert _fired(pod("team-a", "gpu-health", **ROOT_POD)) == set(POD_CHECKS)


def test_tenant_owning_a_namespace_by_label_counts():
    labelled = Namespace("lab", {"gpuposture.io/tenant": "team"})
    snap = ClusterSnapshot(pods=(pod("lab", "x", **ROOT_POD),), namespaces=(labelled,))
    world = PostureInputs("c", snap, (dataclasses.replace(TEAM, namespaces=()),))
    assert [d.tenants for d in run("POD-001", world)] == [("team",)]


# --- POD-001 -------------------------------------------------------------------------------


def test_pod001_one_finding_listing_each_privileged_container_with_its_path():
    pods = pod(
        "team-a",
        "p",
        containers=(
            Container("setup", "busybox", init=True, privileged=True),
            container("main"),
            container("sidecar", privileged=True),
        ),
    )
    (draft,) = _run_pod("POD-001", pods)
    assert container_names(draft) == ["setup", "sidecar"]
    setup, sidecar = container_entry(draft, "setup"), container_entry(draft, "sidecar")
    assert setup["field"] == "spec.initContainers[0].securityContext.privileged"
    assert setup["init_container"] is True
    assert sidecar["field"] == "spec.containers[1].securityContext.privileged"
    assert draft.subject_kind == "Pod"
    assert (draft.subject_namespace, draft.subject_name, draft.key) == ("team-a", "p", "")
    assert draft.tenants == ("team",)
    assert draft.title == "Containers setup, sidecar of Pod team-a/p are privileged"


def _windows_pod(pod_level: bool | None, container_level: bool | None) -> dict:
    security = (
        {} if container_level is None else {"windowsOptions": {"hostProcess": container_level}}
    )
    spec: dict = {
        "hostNetwork": True,
        "containers": [
            {"name": "agent", "image": "mcr.example/agent:1", "securityContext": security}
        ],
        "nodeSelector": {"kubernetes.io/os": "windows"},
    }
    if pod_level is not None:
        spec["securityContext"] = {"windowsOptions": {"hostProcess": pod_level}}
    meta = {"name": "win", "namespace": "team-a"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


@pytest.mark.parametrize(
    ("pod_level", "container_level", "field"),
    [
        (True, None, "spec.securityContext.windowsOptions.hostProcess"),
        (None, True, "spec.containers[0].securityContext.windowsOptions.hostProcess"),
        (True, False, None),  # the container opts out of the pod's setting
        (False, None, None),
    ],
)
def test_pod001_windows_host_process_is_privileged(pod_level, container_level, field):
    found = _run_pod("POD-001", pod_from_template(_windows_pod(pod_level, container_level)))
    assert [container_entry(d)["field"] for d in found] == ([field] if field else [])
    if field:
        assert "Windows HostProcess" in found[0].title


def test_pod001_negative():
    assert _run_pod("POD-001", pod("team-a", containers=(container(),))) == []


# --- POD-002 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "fields"),
    [
        ({"host_pid": True}, ["spec.hostPID"]),
        ({"host_ipc": True}, ["spec.hostIPC"]),
        ({"host_network": True}, ["spec.hostNetwork"]),
        (
            {"host_pid": True, "host_ipc": True, "host_network": True},
            ["spec.hostPID", "spec.hostIPC", "spec.hostNetwork"],
        ),
        ({}, None),
    ],
)
def test_pod002(flags, fields):
    found = _run_pod("POD-002", pod("team-a", **flags))
    if fields is None:
        assert found == []
    else:
        (draft,) = found
        assert list(draft.evidence["fields"]) == fields


# --- POD-003 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "flagged"),
    [
        ("/", True),
        ("//", True),
        ("/dev", True),
        ("/dev/", True),
        ("/dev/nvidia0", True),
        ("/proc", True),
        ("/proc/1/ns", True),
        ("/sys", True),
        ("/sys/fs/cgroup", True),
        ("/var/run/docker.sock", True),
        ("/run/containerd/containerd.sock", True),
        ("/var/run/crio/crio.sock", True),
        ("/run/crio/crio.sock", True),
        ("/var/run/containerd", True),
        ("/var/run/containerd/", True),
        ("/var/run", True),  # holds the runtime sockets
        ("/run", True),
        ("/device", False),
        ("/devices", False),
        ("/system", False),
        ("/data/models", False),
    ],
)
def test_dangerous_host_path(path, flagged):
    assert (dangerous_host_path(path) is not None) is flagged


def test_pod003_lists_the_dangerous_volume_with_field_and_mounts():
    p = pod(
        "team-a",
        "p",
        containers=(container(volume_mounts=(mount("dev", "/host-dev"),)),),
        volumes=(host_path("data", "/data"), host_path("dev", "/dev/")),
    )
    (draft,) = _run_pod("POD-003", p)
    assert draft.key == ""
    (dev,) = draft.evidence["volumes"]  # /data is no danger
    assert (dev["volume"], dev["type"]) == ("dev", "hostPath")
    assert dev["field"] == "spec.volumes[1].hostPath.path"
    assert dev["host_path"] == "/dev/"
    assert dev["normalised_path"] == "/dev"
    assert dev["mounted_by"] == [
        {"container": "main", "mount_path": "/host-dev", "read_only": False}
    ]


# --- POD-004 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("caps", "severity", "flagged"),
    [
        (("SYS_ADMIN",), "critical", ["SYS_ADMIN"]),
        (("CAP_SYS_ADMIN",), "critical", ["CAP_SYS_ADMIN"]),
        (("all",), "critical", ["all"]),
        (("NET_ADMIN", "SYS_ADMIN"), "critical", ["NET_ADMIN", "SYS_ADMIN"]),
        # Each an escape or the node's kernel on its own (DESIGN §5: critical).
        (("SYS_PTRACE",), "critical", ["SYS_PTRACE"]),
        (("SYS_MODULE",), "critical", ["SYS_MODULE"]),
        (("CAP_SYS_RAWIO",), "critical", ["CAP_SYS_RAWIO"]),
        (("dac_read_search",), "critical", ["dac_read_search"]),
        (("BPF", "PERFMON"), "critical", ["BPF", "PERFMON"]),
        # Dangerous, no escape on their own: high. NET_RAW is in the runtimes' default set.
        (("NET_ADMIN",), "high", ["NET_ADMIN"]),
        (("NET_RAW", "CHOWN"), "high", ["NET_RAW"]),
        (("PERFMON", "SYS_BOOT", "SETPCAP"), "high", ["PERFMON", "SYS_BOOT", "SETPCAP"]),
        (("MAC_ADMIN", "MAC_OVERRIDE"), "high", ["MAC_ADMIN", "MAC_OVERRIDE"]),
        (("CHOWN", "NET_BIND_SERVICE"), None, []),
        ((), None, []),
    ],
)
def test_pod004(caps, severity, flagged):
    found = _run_pod("POD-004", pod("team-a", containers=(container(capabilities_add=caps),)))
    if severity is None:
        assert found == []
        return
    (draft,) = found
    assert container_names(draft) == ["main"]
    assert draft.severity == severity
    assert [f["capability"] for f in container_entry(draft)["flagged"]] == flagged


def test_pod004_field_paths_point_at_the_added_capability():
    c = container("main", capabilities_add=("CHOWN", "SYS_ADMIN"))
    (draft,) = _run_pod("POD-004", pod("team-a", containers=(container("first"), c)))
    assert container_entry(draft)["flagged"] == [
        {
            "capability": "SYS_ADMIN",
            "field": "spec.containers[1].securityContext.capabilities.add[1]",
            "severity": "critical",
            "reason": "every NVIDIA capability (MIG control of the node's GPUs) and the mount "
            "and namespace operations of container escapes",
        }
    ]
    assert container_entry(draft)["other_added"] == ["CHOWN"]


def test_pod004_evidence_gives_each_capability_its_severity_and_reason():
    c = container(capabilities_add=("NET_RAW", "SYS_MODULE", "CHOWN", "SYS_PTRACE"))
    (draft,) = _run_pod("POD-004", pod("team-a", containers=(c,)))
    assert draft.severity == "critical"
    flagged = container_entry(draft)["flagged"]
    reasons = {f["capability"]: (f["severity"], f["reason"]) for f in flagged}
    assert reasons == {
        "NET_RAW": (
            "high",
            "raw sockets: spoofs packets on the pod's network (in containerd's and Docker's "
            "default set)",
        ),
        "SYS_MODULE": ("critical", "loads kernel modules: full node control"),
        "SYS_PTRACE": (
            "critical",
            "reads and injects code into any process it can see (with hostPID, every process "
            "on the node: an escape to the host)",
        ),
    }


def test_pod004_sys_ptrace_with_host_pid_is_critical_and_says_so():
    c = container(capabilities_add=("SYS_PTRACE",))
    (draft,) = _run_pod("POD-004", pod("team-a", containers=(c,), host_pid=True))
    assert draft.severity == "critical"
    (flagged,) = container_entry(draft)["flagged"]
    assert flagged["severity"] == "critical"
    assert flagged["reason"].startswith("with hostPID: reads and injects code into every process")


@pytest.mark.parametrize(
    ("host_users", "severity"),
    [
        (False, "high"),  # its own user namespace: the capability is not valid on the host
        (True, "critical"),
        (None, "critical"),  # unset: the host's user namespace
    ],
)
@pytest.mark.parametrize("capability", ["SYS_ADMIN", "SYS_PTRACE", "SYS_MODULE", "BPF"])
def test_pod004_user_namespace_lowers_critical_capabilities_to_high(
    host_users, severity, capability
):
    spec: dict = {
        "containers": [
            {
                "name": "main",
                "image": "registry.example.com/main:1",
                "securityContext": {"capabilities": {"drop": ["ALL"], "add": [capability]}},
            }
        ]
    }
    if host_users is not None:
        spec["hostUsers"] = host_users
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a"}}
    (draft,) = _run_pod("POD-004", pod_from_template({**manifest, "spec": spec}))
    assert draft.severity == severity
    assert ("user_namespace" in draft.evidence) is (host_users is False)
    (flagged,) = container_entry(draft)["flagged"]
    assert flagged["severity"] == severity
    assert flagged["reason"].endswith("not valid on the host") is (host_users is False)


@pytest.mark.parametrize(
    ("runtime", "added", "severity", "flagged"),
    [
        # containerd prefixes CAP_ itself: CAP_CAP_SYS_ADMIN is unknown to runc, not granted.
        ("containerd://1.7.13", ["CAP_SYS_ADMIN"], None, []),
        ("containerd://1.7.13", ["cap_sys_admin", "NET_RAW"], "high", ["NET_RAW"]),
        ("containerd://1.7.13", ["sys_admin"], "critical", ["SYS_ADMIN"]),
        ("cri-o://1.30.2", ["CAP_SYS_ADMIN"], "critical", ["SYS_ADMIN"]),
        (None, ["CAP_SYS_ADMIN"], "critical", ["SYS_ADMIN"]),  # no node: cannot tell
    ],
)
def test_pod004_cap_prefix_depends_on_the_nodes_runtime(runtime, added, severity, flagged):
    spec: dict = {
        "containers": [
            {
                "name": "main",
                "image": "registry.example.com/main:1",
                "securityContext": {"capabilities": {"add": added}},
            }
        ]
    }
    nodes = ()
    if runtime is not None:
        spec["nodeName"] = "gpu-1"
        nodes = (gpu_node("gpu-1", container_runtime=runtime),)
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a"}}
    running = dataclasses.replace(pod_from_template({**manifest, "spec": spec}), phase="Running")
    found = run("POD-004", inputs(pods=(running,), tenants=(TEAM,), nodes=nodes))
    assert [d.severity for d in found] == ([severity] if severity else [])
    if found:
        (entry,) = found[0].evidence["containers"]
        assert [f["capability"] for f in entry["flagged"]] == flagged
        assert ("note" in entry["flagged"][0]) is (runtime is None)


# --- POD-005 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("volumes", "envs", "fires"),
    [
        ((host_path("caps", "/dev/nvidia-caps"),), (), True),
        ((host_path("caps", "/dev/nvidia-caps/nvidia-cap1"),), (), True),
        ((host_path("dev", "/dev"),), (), True),
        ((host_path("root", "/"),), (), True),
        ((host_path("gpu", "/dev/nvidia0"),), (), False),
        ((host_path("sys", "/sys"),), (), False),
        ((), (env("NVIDIA_MIG_CONFIG_DEVICES", "all"),), True),
        ((), (env("NVIDIA_MIG_MONITOR_DEVICES", "all"),), True),
        ((), (env("NVIDIA_MIG_CONFIG_DEVICES", None, "configMapKeyRef"),), True),
        ((), (env("NVIDIA_MIG_CONFIG_DEVICES", "none"),), False),
        ((), (env("NVIDIA_MIG_MONITOR_DEVICES", "void"),), False),
        ((), (env("NVIDIA_MIG_MONITOR_DEVICES", ""),), False),
        ((), (env("NVIDIA_VISIBLE_DEVICES", "all"),), False),
    ],
)
def test_pod005(volumes, envs, fires):
    # The toolkit serves the MIG variables only to a container holding CAP_SYS_ADMIN.
    c = container(env=envs, capabilities_add=("SYS_ADMIN",))
    p = pod("team-a", containers=(c,), volumes=volumes)
    assert bool(_run_pod("POD-005", p)) is fires


@pytest.mark.parametrize(
    ("security", "fires"),
    [
        ({}, False),  # the toolkit's hook refuses the variable: the container never starts
        ({"capabilities": {"add": ["NET_ADMIN"]}}, False),
        # Critical for POD-004, but the toolkit looks for CAP_SYS_ADMIN alone.
        ({"capabilities": {"add": ["SYS_PTRACE", "SYS_MODULE", "BPF"]}}, False),
        ({"privileged": True}, True),
        ({"capabilities": {"add": ["SYS_ADMIN"]}}, True),
        ({"capabilities": {"drop": ["ALL"], "add": ["ALL"]}}, True),
    ],
)
def test_pod005_mig_variables_reach_only_a_container_the_toolkit_deems_privileged(security, fires):
    spec = {
        "containers": [
            {
                "name": "main",
                "image": "registry.example.com/main:1",
                "env": [{"name": "NVIDIA_MIG_CONFIG_DEVICES", "value": "all"}],
                "securityContext": security,
            }
        ]
    }
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a"}}
    found = _run_pod("POD-005", pod_from_template({**manifest, "spec": spec}))
    assert bool(found) is fires


def test_pod005_evidence_names_the_env_field():
    envs = (env("A", "1"), env("NVIDIA_MIG_CONFIG_DEVICES", "all"))
    c = container(env=envs, privileged=True)
    (draft,) = _run_pod("POD-005", pod("team-a", containers=(c,)))
    assert draft.evidence["env"][0]["field"] == "spec.containers[0].env[1]"
    assert draft.evidence["env"][0]["value"] == "all"


# --- real third-party manifests (k8s-manifests/SOURCES.md) ---------------------------------


def _manifest_pods(name: str, namespace: str | None = "team-a"):
    """The pods a manifest would run, moved into `namespace` (a tenant's) when given."""
    try:
        from inventory.sources.normalise import pod_from_template
    except ImportError:  # being written in parallel
        pytest.skip("inventory.sources.normalise.pod_from_template is not available")
    text = realworld("k8s-manifests", name).read_text()
    pods = []
    for doc in yaml.safe_load_all(text):
        if isinstance(doc, dict) and (found := pod_from_template(doc)) is not None:
            pods.append(dataclasses.replace(found, namespace=namespace) if namespace else found)
    return pods


def _manifest_findings(name: str, namespace: str | None = "team-a"):
    world = inputs(pods=tuple(_manifest_pods(name, namespace)), tenants=(TEAM,))
    return {check_id: run(check_id, world) for check_id in POD_CHECKS}


ROOT = {"POD-001", "POD-002", "POD-003", "POD-005"}  # privileged, host namespaces, hostPath /


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("checkov-PrivilegedContainers__privilegedPod-FAILED.yaml", ROOT),
        ("checkov-PrivilegedContainers__privilegedDaemonSet-FAILED.yaml", ROOT),
        ("checkov-PrivilegedContainers__nginx-deployment-PASSED.yaml", set()),
        ("checkov-AllowedCapabilitiesSysAdmin__pod-FAILED.yaml", {"POD-004"}),
        ("checkov-AllowedCapabilitiesSysAdmin__pod-FAILED2.yaml", set()),
        ("checkov-AllowedCapabilitiesSysAdmin__cronjob-PASSED.yaml", set()),
        ("checkov-ShareHost__cronjob-hostresources-FAILED.yaml", {"POD-002"}),
        ("checkov-ShareHost__privilegedDaemonSet-FAILED.yaml", ROOT),
        ("checkov-ShareHost__privilegedPod-FAILED.yaml", ROOT),
        ("checkov-ShareHost__privilegedPod-PASS.yaml", ROOT - {"POD-002"}),
        ("kubescape-rule-privileged-container__pod__input_pod.yaml", {"POD-004"}),
        ("kubescape-host-pid-ipc-privileges__pod__input_pod.yaml", {"POD-002"}),
        ("kubescape-host-pid-ipc-privileges__workload__input_deployment.yaml", {"POD-002"}),
        # /var holds /var/lib/kubelet (other pods' Secrets) and /var/log: kubescape is right.
        ("kubescape-alert-any-hostpath__pod__input_pod.yaml", {"POD-003"}),
        ("kubescape-insecure-capabilities__pod__input_pod.yaml", {"POD-004"}),
        (
            "kubescape-insecure-capabilities__workloads__input_deployment.yaml",
            {"POD-002", "POD-004"},
        ),
        # A device plugin run by a tenant: its /var/lib/kubelet/device-plugins hostPath lets it
        # register GPUs with the kubelet or ask the real plugin for any of them.
        ("device-plugin-static-daemonset.yml", {"POD-003"}),
        ("device-plugin-privileged-with-service-account.yml", {"POD-001", "POD-003"}),
        ("device-plugin-testdata-job-1.yaml", set()),
        ("gpu-operator-tests-gpu-pod.yaml", set()),
        ("gpu-operator-tests-plugin-test-deployment.yaml", set()),
        ("gpu-operator-golden-driver-minimal.yaml", ROOT),
    ],
)
def test_realworld_manifest_verdicts(name, expected):
    found = _manifest_findings(name)
    assert {check_id for check_id, drafts in found.items() if drafts} == expected


def test_realworld_share_host_fields():
    found = _manifest_findings("checkov-ShareHost__cronjob-hostresources-FAILED.yaml")
    (draft,) = found["POD-002"]
    assert set(draft.evidence["fields"]) == {"spec.hostPID", "spec.hostIPC", "spec.hostNetwork"}
    workload = _manifest_findings(
        "kubescape-host-pid-ipc-privileges__workload__input_deployment.yaml"
    )
    assert set(workload["POD-002"][0].evidence["fields"]) == {"spec.hostPID", "spec.hostIPC"}


def test_realworld_kubescape_privileged_capability_path():
    found = _manifest_findings("kubescape-rule-privileged-container__pod__input_pod.yaml")
    (draft,) = found["POD-004"]
    assert container_names(draft) == ["test-container"]
    assert draft.severity == "critical"
    fields = [f["field"] for f in container_entry(draft)["flagged"]]
    assert "spec.containers[0].securityContext.capabilities.add[1]" in fields  # SYS_ADMIN


def test_realworld_kubescape_insecure_capabilities():
    (pod_draft,) = _manifest_findings("kubescape-insecure-capabilities__pod__input_pod.yaml")[
        "POD-004"
    ]
    flagged = container_entry(pod_draft, "test2")["flagged"]
    assert container_names(pod_draft) == ["test2"]
    assert [f["capability"] for f in flagged] == ["SETPCAP", "MAC_OVERRIDE"]
    found = _manifest_findings("kubescape-insecure-capabilities__workloads__input_deployment.yaml")
    (draft,) = found["POD-004"]
    assert (container_names(draft), draft.severity) == (["php"], "high")
    assert container_entry(draft)["flagged"] == [
        {
            "capability": "MAC_OVERRIDE",
            "field": "spec.containers[1].securityContext.capabilities.add[0]",
            "severity": "high",
            "reason": "overrides mandatory access control (Smack)",
        }
    ]
    assert container_entry(draft)["other_added"] == ["AUDIT_CONTROL"]


def test_realworld_golden_driver_host_paths_and_privileged_containers():
    found = _manifest_findings("gpu-operator-golden-driver-minimal.yaml")
    (privileged,) = found["POD-001"]
    assert container_names(privileged) == ["k8s-driver-manager", "nvidia-driver-ctr"]
    flagged = {v["host_path"] for d in found["POD-003"] for v in d.evidence["volumes"]}
    assert {"/", "/sys", "/dev/log", "/var/log", "/run/nvidia"} <= flagged
    # Mounted read-only, the OS release names the distribution and nothing secret.
    assert "/etc/os-release" not in flagged


@pytest.mark.parametrize(
    "name",
    ["gpu-operator-golden-driver-minimal.yaml", "checkov-ShareHost__privilegedPod-FAILED.yaml"],
)
def test_realworld_platform_namespace_is_never_reported(name):
    found = _manifest_findings(name, namespace="gpu-operator")
    assert all(drafts == [] for drafts in found.values())
