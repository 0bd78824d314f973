"""POD-003: the host paths that hand a tenant pod the node or another tenant's data, read-only
and writable, and the benign ones that must stay quiet."""

from __future__ import annotations

import pytest

from inventory.snapshot import VolumeMount
from inventory.sources.normalise import normalise, pod_from_template
from posture.rules.pod.host_areas import canonical_host_path, dangerous_host_path
from tests.posture.builders import container, host_path, inputs, pod, run, tenant

TEAM = tenant("team", namespaces=("team-a",))
RO, RW = False, True


@pytest.mark.parametrize(
    ("path", "writable", "area"),
    [
        # The kubelet's state: other pods' Secret volumes, its certificates, its sockets.
        ("/var/lib/kubelet", RO, "/var/lib/kubelet"),
        ("/var/lib/kubelet/pods", RO, "/var/lib/kubelet"),
        ("/var/lib/kubelet/pki", RO, "/var/lib/kubelet/pki"),
        ("/var/lib/kubelet/device-plugins", RO, "/var/lib/kubelet/device-plugins"),
        ("/var/lib/kubelet/device-plugins/kubelet.sock", RW, "/var/lib/kubelet/device-plugins"),
        ("/var/lib/kubelet/pod-resources", RO, "/var/lib/kubelet/pod-resources"),
        # Parents are judged by what they hold.
        ("/var", RO, "/var/lib/kubelet"),
        ("/var/", RW, "/var/lib/kubelet"),
        ("/var/lib", RO, "/var/lib/kubelet"),
        ("/var/lib/", RO, "/var/lib/kubelet"),
        ("/var//lib/./kubelet", RO, "/var/lib/kubelet"),
        # Runtime storage and sockets, logs, node configuration, homes.
        ("/var/lib/containerd", RO, "/var/lib/containerd"),
        ("/var/lib/docker/overlay2", RO, "/var/lib/docker"),
        ("/var/lib/containers/storage", RO, "/var/lib/containers"),
        ("/var/lib/rancher/k3s/agent", RO, "/var/lib/rancher"),
        ("/var/lib/etcd", RO, "/var/lib/etcd"),
        ("/var/log", RW, "/var/log"),
        ("/var/log", RO, "/var/log"),
        ("/var/log/pods", RO, "/var/log"),
        ("/etc", RO, "/etc"),
        ("/etc/kubernetes", RO, "/etc"),
        ("/etc/kubernetes/pki", RO, "/etc"),
        ("/root", RO, "/root"),
        ("/root/.ssh", RO, "/root"),
        ("/home", RO, "/home"),
        ("/home/ubuntu/.aws", RO, "/home"),
        ("/run", RO, "/run"),
        ("/var/run", RO, "/run"),
        ("/var/run/docker.sock", RO, "/run/docker.sock"),  # ro does not stop connect()
        ("/run/containerd/containerd.sock", RO, "/run/containerd"),
        ("/run/k3s/containerd/containerd.sock", RO, "/run/k3s"),
        ("/run/nvidia/driver", RO, "/run/nvidia"),
        ("/run/nvidia/mps", RW, "/run/nvidia"),
        ("/var/run/dbus/system_bus_socket", RO, "/run"),
        ("/proc", RO, "/proc"),
        ("/sys/fs/cgroup", RO, "/sys"),
        ("/dev/nvidia0", RO, "/dev"),
        ("/dev/infiniband", RO, "/dev/infiniband"),  # RDMA jobs mount it: say what it is
        ("/dev/infiniband/uverbs0", RW, "/dev/infiniband"),
        # Host code, kernel modules and boot files: dangerous only writable.
        ("/boot", RW, "/boot"),
        ("/lib/modules", RW, "/lib/modules"),
        ("/usr/lib/modules/6.8.0-45-generic", RW, "/usr/lib/modules"),
        ("/usr/local/bin", RW, "/usr"),
        ("/opt/cni/bin", RW, "/opt/cni"),
        ("/usr", RW, "/usr"),
    ],
)
def test_dangerous(path, writable, area):
    why = dangerous_host_path(path, writable)
    assert why is not None and area in why


@pytest.mark.parametrize(
    ("path", "writable"),
    [
        ("/etc/localtime", RO),  # the time zone, read-only: harmless
        ("/etc/timezone", RO),
        ("/etc/os-release", RO),
        ("/etc/ssl/certs", RO),  # public CA bundles
        ("/etc/ssl/certs/ca-certificates.crt", RO),
        ("/etc/pki/tls/certs", RO),
        ("/usr/share/zoneinfo", RO),
        ("/boot", RO),
        ("/lib/modules", RO),
        ("/usr", RO),
        ("/opt", RO),
        # Driver libraries or state without devices or credentials, and plain data.
        ("/var/lib/nvidia", RW),
        ("/var/lib/nvidia-docker/volumes", RO),
        ("/data/models", RW),
        ("/mnt/datasets", RW),
        ("/scratch", RW),
        ("/var/lib/kubeletx", RW),  # a sibling, not the kubelet's directory
        ("/running", RW),
        ("/etcd-backup", RW),
    ],
)
def test_not_dangerous(path, writable):
    assert dangerous_host_path(path, writable) is None


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/etc/localtime", "under /etc"),  # writable, the host's time zone can be rewritten
        ("/etc/ssl/certs", "under /etc"),  # writable, a CA of the tenant's choosing
        ("/etc/ssl/private", "under /etc"),
        ("/etc/shadow", "under /etc"),
        ("/opt", "a directory holding /opt/cni"),
    ],
)
def test_read_only_safe_files_count_when_writable(path, why):
    assert why in (dangerous_host_path(path, RW) or "")


@pytest.mark.parametrize(
    ("path", "canonical"),
    [
        ("/var/run/containerd/", "/run/containerd"),
        ("/var/lock", "/run/lock"),
        ("//var///log/", "/var/log"),
        ("var/log", "/var/log"),
        ("/var/lib/kubelet/../kubelet/pods", "/var/lib/kubelet/pods"),
    ],
)
def test_canonical_host_path(path, canonical):
    assert canonical_host_path(path) == canonical


def _pod(path: str, read_only: bool | None) -> object:
    mounts = () if read_only is None else (VolumeMount("host", "/host", read_only),)
    return pod(
        "team-a",
        containers=(container(volume_mounts=mounts),),
        volumes=(host_path("host", path),),
    )


@pytest.mark.parametrize(
    ("path", "read_only", "fires"),
    [
        ("/var/lib/kubelet", True, True),
        ("/var/lib/kubelet/device-plugins", False, True),
        ("/var", True, True),
        ("/var/log", False, True),
        ("/etc/localtime", True, False),
        ("/etc/localtime", False, True),
        ("/usr/lib/x86_64-linux-gnu", True, False),
        ("/usr/lib/x86_64-linux-gnu", False, True),
        ("/var/lib/nvidia", False, False),
        # A volume no container mounts gives nothing writable, but / and /dev are never safe.
        ("/usr", None, False),
        ("/dev", None, True),
    ],
)
def test_pod003_reads_the_mounts_to_judge_writability(path, read_only, fires):
    found = run("POD-003", inputs(pods=(_pod(path, read_only),), tenants=(TEAM,)))
    assert bool(found) is fires


def test_pod003_evidence_says_why_and_whether_writable():
    world = inputs(pods=(_pod("/var/lib/kubelet/", True),), tenants=(TEAM,))
    (draft,) = run("POD-003", world)
    assert draft.evidence["volumes"][0]["normalised_path"] == "/var/lib/kubelet"
    assert draft.evidence["volumes"][0]["writable"] is False
    assert "Secret" in draft.evidence["volumes"][0]["reason"]
    assert draft.evidence["volumes"][0]["mounted_by"] == [
        {"container": "main", "mount_path": "/host", "read_only": True}
    ]


def _sub_path_pod(path: str, *mounts: dict) -> object:
    """A Pod manifest whose one container mounts hostPath `path` as `mounts` say, read the way a
    sync reads it."""
    volume_mounts = [{"name": "host", "mountPath": f"/m{i}", **m} for i, m in enumerate(mounts)]
    spec = {
        "containers": [
            {"name": "main", "image": "registry.example.com/main:1", "volumeMounts": volume_mounts}
        ],
        "volumes": [{"name": "host", "hostPath": {"path": path, "type": "Directory"}}],
    }
    meta = {"name": "p", "namespace": "team-a"}
    return pod_from_template({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})


@pytest.mark.parametrize(
    ("path", "mounts", "fired"),
    [
        # Only /srv/data/team-a of the node reaches the container: nothing to report.
        ("/", [{"subPath": "srv/data/team-a"}], set()),
        ("/", [{"subPath": "srv/data", "readOnly": True}], set()),
        ("/var", [{"subPath": "cache/app"}], set()),
        # The subPath leads into a dangerous area, or another mount takes the whole volume.
        ("/", [{"subPath": "var/run/docker.sock"}], {"POD-003"}),
        ("/", [{"subPath": "dev/nvidia-caps"}], {"POD-003", "POD-005"}),
        # All of / in an unprivileged container: POD-003; /dev/nvidia-caps stays shut to it
        # (its device cgroup), so no POD-005 (test_rules_mig_caps.py).
        ("/", [{"subPath": "srv/data"}, {}], {"POD-003"}),
        ("/var/lib", [{"subPath": "kubelet/pods", "readOnly": True}], {"POD-003"}),
        ("/usr", [{"subPath": "lib", "readOnly": True}], set()),
        ("/usr", [{"subPath": "lib"}], {"POD-003"}),
        # subPathExpr expands env at start: it may be anything inside the volume.
        ("/", [{"subPathExpr": "$(POD_NAME)"}], {"POD-003"}),
    ],
)
def test_pod003_pod005_judge_the_part_a_sub_path_mounts(path, mounts, fired):
    world = inputs(pods=(_sub_path_pod(path, *mounts),), tenants=(TEAM,))
    assert {check for check in ("POD-003", "POD-005") if run(check, world)} == fired


def test_pod003_sub_path_evidence_names_the_path_reached():
    world = inputs(pods=(_sub_path_pod("/", {"subPath": "run/containerd"}),), tenants=(TEAM,))
    (draft,) = run("POD-003", world)
    assert (
        draft.evidence["volumes"][0]["normalised_path"],
        draft.evidence["volumes"][0]["reached_path"],
    ) == (
        "/",
        "/run/containerd",
    )
    assert draft.evidence["volumes"][0]["mounted_by"][0]["sub_path"] == "run/containerd"


def test_pod003_platform_namespace_is_never_reported():
    found = run("POD-003", inputs(pods=(pod("kube-system", volumes=(host_path("h", "/var"),)),)))
    assert found == []


def test_demo_world_host_paths():
    from tests.posture.test_rules_rbac import demo_worlds

    found = {
        (cluster, d.subject_name, v["normalised_path"])
        for cluster, world in demo_worlds().items()
        for d in run("POD-003", world)
        for v in d.evidence["volumes"]
    }
    assert found == {
        ("prod-east", "nb-priya", "/dev"),
        ("prod-east", "llm-playground", "/dev"),  # the sandbox nobody owns, judged as external
        ("prod-east", "log-shipper", "/var/log"),
        (
            "prod-east",
            "dataset-index",
            "/var/lib/kubelet",
        ),  # through a claim bound to a hostPath PV
        # through a generic ephemeral volume's claim, bound to a hostPath PV
        ("prod-east", "shard-tokenize", "/var/lib"),
        ("neo-west", "gpu-usage-exporter", "/var/lib/kubelet/pod-resources"),
        # injected by OpenKruise SidecarSet vllm-log-agent (demo/k8s_rollouts.py)
        ("prod-east", "vllm-dev", "/var/log/pods"),
        ("prod-east", "vllm-canary", "/var/log/pods"),
    }  # and not rag-serve's read-only /etc/localtime


def _pv(name: str, claim: str, *, path: str, kind: str = "hostPath", phase: str = "Bound") -> dict:
    spec = {
        kind: {"path": path},
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "team-a", "name": claim},
    }
    meta = {"name": name}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase},
    }


def _claiming_pod(claim: str, read_only: bool = False) -> dict:
    mount = {"name": "data", "mountPath": "/data", "readOnly": read_only}
    spec = {
        "nodeName": "gpu-1",
        "containers": [
            {"name": "main", "image": "registry.example.com/main:1", "volumeMounts": [mount]}
        ],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
    }
    meta = {"name": "p", "namespace": "team-a"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Running"},
    }


@pytest.mark.parametrize(
    ("pv", "fired"),
    [
        # / in an unprivileged container: POD-005 needs a privileged one (test_rules_mig_caps.py)
        (_pv("pv-root", "data", path="/"), {"POD-003"}),
        (_pv("pv-kubelet", "data", path="/var/lib/kubelet", kind="local"), {"POD-003"}),
        # A provisioner's own directory, a PV bound to another claim, a Released PV: nothing.
        (_pv("pvc-123", "data", path="/opt/local-path-provisioner/pvc-123"), set()),
        (_pv("pv-root", "other", path="/"), set()),
        (_pv("pv-root", "data", path="/", phase="Released"), set()),
        (None, set()),  # the PV is not in the snapshot: nothing is assumed
    ],
)
def test_pod003_pod005_follow_a_claim_to_its_hostpath_or_local_pv(pv, fired):
    objects = [_claiming_pod("data")] + ([pv] if pv else [])
    pods = normalise(objects).pods
    world = inputs(pods=pods, tenants=(TEAM,))
    assert {check for check in ("POD-003", "POD-005") if run(check, world)} == fired


def test_pod003_claim_evidence_names_the_claim_and_the_pv():
    pods = normalise([_claiming_pod("data"), _pv("pv-etc", "data", path="/etc")]).pods
    (draft,) = run("POD-003", inputs(pods=pods, tenants=(TEAM,)))
    assert (
        draft.evidence["volumes"][0]["field"] == "spec.volumes[0].persistentVolumeClaim.claimName"
    )
    assert draft.evidence["volumes"][0]["host_path"] == "/etc"
    assert draft.evidence["volumes"][0]["through"] == {
        "claim": "data",
        "persistent_volume": "pv-etc",
    }
    assert "PersistentVolume pv-etc" in draft.title
