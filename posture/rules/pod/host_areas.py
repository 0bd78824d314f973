"""Which host paths hand a tenant pod the node or another tenant's data (POD-003). PURE.

A hostPath is judged by where it lies on the node once normalised ("/dev//" is /dev, /var/run is
/run). It is dangerous when it lies inside a dangerous area, or when it holds one: mounting a
parent is the same as mounting the child (Falco documents /var/run bypassing its docker.sock
rule), so /var and /var/lib are judged by the /var/lib/kubelet and /var/log they hold.

Three tiers, so the check shouts only where a tenant really gains something:
- areas dangerous even read-only: devices and kernel interfaces, the node's configuration and
  credentials, the kubelet's and the runtime's state (other pods' Secret volumes and root
  filesystems), logs, runtime sockets (a read-only bind mount does not stop connect());
- areas dangerous only when a container may write there: the programs, libraries, kernel
  modules and boot files root on the node runs (read-only they disclose nothing secret);
- files harmless inside a dangerous area when every mount is read-only: the time zone, the OS
  release and the public CA bundles that many charts mount.
Anything else (/data, /mnt, /var/lib/nvidia with its driver libraries, ...) is not judged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from posture.rules.common import normalise_host_path, path_within

# Symlinks every current distribution ships: a path under the link is the path under its target.
HOST_SYMLINKS = (("/var/run", "/run"), ("/var/lock", "/run/lock"))


@dataclass(frozen=True)
class HostArea:
    root: str
    reason: str
    writable_only: bool = False  # dangerous only when a container may write there


_RUNTIME_FS = "the container runtime's storage: every container's root filesystem"
_KERNEL_MODULES = "the kernel modules the node loads"
_HOST_CODE = "programs and libraries root runs on the node"
_SOCKET = "the container runtime socket: start a privileged container on the node"
AREAS = (
    HostArea("/dev", "host device nodes: every GPU (/dev/nvidia*), /dev/nvidia-caps, disks"),
    HostArea(
        "/dev/infiniband",
        "the node's RDMA verbs devices: every InfiniBand / RoCE adapter, outside the RDMA device "
        "plugin's allocation and beyond NetworkPolicy",
    ),
    # A tmpfs, no device nodes: the POSIX shared memory of the host's processes and of every
    # pod sharing the host's IPC namespace (NCCL's and CUDA IPC's buffers among them).
    HostArea(
        "/dev/shm",  # noqa: S108 (the node's shared memory, a path on the node)
        "the node's shared memory: the host's and hostIPC pods' shared-memory segments",
    ),
    HostArea("/proc", "the host's processes and kernel settings"),
    HostArea("/sys", "the host's kernel and device interfaces (sysfs, cgroups)"),
    HostArea(
        "/etc",
        "the node's configuration: the kubelet's kubeconfig and certificates "
        "(/etc/kubernetes), static pod manifests, /etc/shadow, cron",
    ),
    HostArea("/root", "root's home: SSH keys, kubeconfigs, cloud credentials"),
    HostArea("/home", "users' home directories: SSH keys, kubeconfigs, cloud credentials"),
    HostArea(
        "/var/lib/kubelet",
        "the kubelet's state: every pod's Secret and service-account "
        "token volumes, the kubelet's client certificates",
    ),
    HostArea("/var/lib/kubelet/pki", "the kubelet's client and serving certificates"),
    HostArea(
        "/var/lib/kubelet/device-plugins",
        "the kubelet's device-plugin sockets: register "
        "a device plugin, or ask the NVIDIA plugin for any GPU",
    ),
    HostArea(
        "/var/lib/kubelet/pod-resources",
        "the kubelet's pod-resources socket: the devices every pod holds",
    ),
    HostArea("/var/lib/containerd", _RUNTIME_FS),
    HostArea("/var/lib/docker", _RUNTIME_FS),
    HostArea("/var/lib/containers", _RUNTIME_FS),  # CRI-O and Podman
    HostArea(
        "/var/lib/rancher",
        "k3s / RKE2 state: the runtime, the node's credentials, the cluster token",
    ),
    HostArea("/var/lib/k0s", "k0s state: the runtime, the kubelet and its credentials"),
    HostArea("/var/lib/etcd", "etcd's data: every Secret of the cluster"),
    HostArea("/var/snap/microk8s", "MicroK8s state: its credentials and the containerd socket"),
    HostArea(
        "/var/log",
        "node and pod logs: other tenants' logs; writable, a symlink there makes "
        "the kubelet serve any host file (the log-mount escape)",
    ),
    HostArea(
        "/run", "the host's runtime state: sockets of the container runtime, D-Bus and systemd"
    ),
    HostArea("/run/containerd", _SOCKET),  # containerd.sock and the shim sockets
    HostArea("/run/docker.sock", _SOCKET),
    HostArea("/run/crio", _SOCKET),
    HostArea("/run/cri-dockerd.sock", _SOCKET),
    HostArea("/run/k3s", _SOCKET),  # k3s and RKE2 run containerd under /run/k3s/containerd
    HostArea(
        "/run/nvidia",
        "the GPU Operator's driver root (libraries injected into every GPU "
        "container) and the MPS daemon's pipes",
    ),
    HostArea("/boot", "the kernel and the boot loader", writable_only=True),
    HostArea("/lib/modules", _KERNEL_MODULES, writable_only=True),
    HostArea("/usr/lib/modules", _KERNEL_MODULES, writable_only=True),
    HostArea("/usr", _HOST_CODE, writable_only=True),
    HostArea("/bin", _HOST_CODE, writable_only=True),
    HostArea("/sbin", _HOST_CODE, writable_only=True),
    HostArea("/lib", _HOST_CODE, writable_only=True),
    HostArea("/lib64", _HOST_CODE, writable_only=True),
    HostArea("/opt/cni", "the CNI plugins the kubelet runs as root", writable_only=True),
)
# Directories of /dev that hold device nodes (or the node's shared memory and terminals): a
# local PersistentVolume naming one is a directory the kubelet bind-mounts, handing over its
# nodes as a hostPath would. Anything else under /dev is one device (below).
DEVICE_DIRECTORIES = (
    "/dev/nvidia-caps",
    "/dev/dri",
    "/dev/vfio",
    "/dev/infiniband",
    "/dev/snd",
    "/dev/input",
    "/dev/net",
    "/dev/bus",
    "/dev/shm",  # noqa: S108 (the node's shared memory, a path on the node)
    "/dev/mqueue",
    "/dev/hugepages",
    "/dev/pts",
)
# Public, secret-free files inside /etc that charts commonly mount read-only.
READ_ONLY_SAFE = (
    "/etc/localtime",
    "/etc/timezone",
    "/etc/os-release",
    "/etc/ssl/certs",
    "/etc/pki/tls/certs",
    "/etc/pki/ca-trust/extracted",
)


def canonical_host_path(path: str) -> str:
    """The normalised path with the distributions' symlinks resolved; a relative path is taken
    from / (the kubelet resolves it against its own working directory, the root)."""
    path = normalise_host_path(path)
    if path and not path.startswith("/"):
        path = "/" + path
    for link, target in HOST_SYMLINKS:
        if path_within(path, link):
            return target + path.removeprefix(link)
    return path


def local_volume_node_path(path: str) -> str | None:
    """The node path a local PersistentVolume hands its pod, or None when it names one disk.
    A local PV "represents a mounted local storage device such as a disk, partition or
    directory": a disk or partition under /dev (/dev/vdb1, /dev/nvme1n1p2, /dev/disk/by-id/...,
    /dev/mapper/vg-lv) the kubelet mounts (Filesystem) or passes as one block device (Block).
    The pod gets that disk, never the node's /dev nor a GPU's node, so no host area is
    reached. Anything else under /dev is taken as what it may be, a directory of device nodes
    (/dev/cpu, /dev/nvidia-caps-imex-channels, ...): fail closed, judged as the node path."""
    canonical = canonical_host_path(path)
    if not path_within(canonical, "/dev") or canonical == "/dev":
        return path
    if any(path_within(canonical, d) for d in DEVICE_DIRECTORIES):
        return path
    return None if _names_a_disk(canonical) else path


# Block devices by the names the kernel gives them (SCSI/SATA, virtio, Xen, IDE, NVMe, eMMC,
# software RAID, device-mapper, loop, NBD, Ceph RBD, ZFS zvols, persistent memory), with a
# partition number or not; and the udev and device-mapper directories that only name disks.
_DISK_NAME = re.compile(
    r"(?:sd|vd|xvd|hd)[a-z]+\d*|nvme\d+n\d+(?:p\d+)?|mmcblk\d+(?:p\d+)?|md\d+(?:p\d+)?"
    r"|dm-\d+|loop\d+|nbd\d+(?:p\d+)?|rbd\d+(?:p\d+)?|zd\d+(?:p\d+)?|pmem\d+(?:\.\d+)?(?:s)?"
)
_DISK_DIRECTORIES = ("/dev/disk", "/dev/mapper", "/dev/zvol")


def _names_a_disk(canonical: str) -> bool:
    if any(path_within(canonical, d) and canonical != d for d in _DISK_DIRECTORIES):
        return True
    parent, _, name = canonical.rpartition("/")
    return parent == "/dev" and _DISK_NAME.fullmatch(name) is not None


def dangerous_host_path(path: str, writable: bool = True) -> str | None:
    """Why a hostPath hands the container the node or other tenants' data, or None. `writable`:
    some container mounts it without readOnly (the default when nothing says otherwise)."""
    canonical = canonical_host_path(path)
    if canonical == "/":
        return "the host's root filesystem"
    if not writable and any(path_within(canonical, safe) for safe in READ_ONLY_SAFE):
        return None
    areas = [a for a in AREAS if writable or not a.writable_only]
    inside = [a for a in areas if path_within(canonical, a.root)]
    if inside:
        area = max(inside, key=lambda a: len(a.root))  # the most specific says the most
        where = area.root if canonical == area.root else f"under {area.root}"
        return f"{where}: {area.reason}"
    held = [a for a in areas if path_within(a.root, canonical)]
    if held:
        return f"a directory holding {held[0].root}: {held[0].reason}"
    return None
