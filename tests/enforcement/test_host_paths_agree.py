"""The pack's no-host-paths rule refuses exactly the hostPaths POD-003 reports (its areas,
read-only or writable, however the path is spelled), judged by the CEL engine the preview
uses; before, /proc, /sys, /etc, /var/log, /run/nvidia and a spelling like //dev were admitted
while POD-003 reported them."""

from __future__ import annotations

import pytest

from enforcement.cel import judge
from enforcement.gpu_access import VARIABLES
from enforcement.rules import POD_RULES
from posture.rules.pod.host_areas import dangerous_host_path

RULE = next(r for r in POD_RULES if r.id == "no-host-paths")
PATHS = (
    "/",
    "//",
    "/.",
    "/dev",
    "/dev/",
    "//dev/nvidia0",
    "/./dev/nvidia-caps",
    "dev/nvidia0",
    "/dev/infiniband/uverbs0",
    "/devices",
    "/proc",
    "/proc/1/root",
    "/sys/fs/cgroup",
    "/etc",
    "/etc/kubernetes/pki",
    "/etc/localtime",
    "/etc/ssl/certs",
    "/etc/hosts",
    "/root/.ssh",
    "/home/ubuntu",
    "/var",
    "/var/",
    "/var/lib",
    "/var/lib/kubelet/pods",
    "/var/lib/nvidia",
    "/var/lib/containerd",
    "/var/log/pods",
    "/var/run",
    "/var/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/nvidia/driver",
    "/var/lock",
    "/run/lock",
    "/usr",
    "/usr/lib",
    "/usr/lib/modules",
    "/usr/local/cuda",
    "/lib/modules",
    "/opt",
    "/opt/cni/bin",
    "/opt/data",
    "/boot",
    "/data/datasets",
    "/mnt/nvme",
    "/tmp",
    "/var/lib/rancher/rke2",
    "/var/snap/microk8s",
    "/var.d",
    "/devx/y",
)


def pod(path: str, read_only: bool) -> dict:
    mount = {"name": "h", "mountPath": "/host", **({"readOnly": True} if read_only else {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team-alpha"},
        "spec": {
            "containers": [{"name": "c", "image": "x", "volumeMounts": [mount]}],
            "volumes": [{"name": "h", "hostPath": {"path": path}}],
        },
    }


@pytest.mark.parametrize("read_only", [True, False], ids=["read-only", "writable"])
@pytest.mark.parametrize("path", PATHS)
def test_the_pack_refuses_what_pod003_reports(path, read_only):
    verdict = judge(
        variables=VARIABLES, conditions=(), expression=RULE.expression, obj=pod(path, read_only)
    )
    assert verdict is not None and not verdict.error, verdict
    reported = dangerous_host_path(path, writable=not read_only) is not None
    assert verdict.admitted is not reported
