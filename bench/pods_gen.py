"""Seeded one-Pod manifests for bench/checks_vs_checkov.py, each with its ground truth.

Every pod lives in a tenant namespace and carries a realistic mix: GPU limits, sidecars, init
containers, explicit `privileged: false` / `hostPID: false`, and with some probability one or
more of the risks the checks look for, placed in any container (init containers included).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

# Properties compared, in the order the table prints them.
PROPERTIES = (
    "privileged",
    "hostPID",
    "hostIPC",
    "hostNetwork",
    "hostPath /dev",
    "hostPath docker.sock",
    "SYS_ADMIN",
)
NAMESPACES = tuple(f"team-{i:02d}" for i in range(8))
# (path, under /dev, the Docker socket); weights below. Traps: /device-data starts with "/dev",
# /run/docker.sock is the socket as /var/run is a symlink to /run.
HOST_PATHS = (
    ("/dev", True, False),
    ("/dev/", True, False),
    ("/dev/nvidia-caps", True, False),
    ("/dev/nvidia0", True, False),
    ("/var/lib/kubelet/device-plugins", False, False),
    ("/device-data", False, False),
    ("/data/datasets", False, False),
    ("/var/run/docker.sock", False, True),
    ("/run/docker.sock", False, True),
)
HOST_PATH_WEIGHTS = (4, 1, 3, 2, 3, 3, 2, 1, 1)
# Kubernetes and the app treat the capability name case-insensitively, CAP_ prefix optional.
SYS_ADMIN_SPELLINGS = ("SYS_ADMIN", "SYS_ADMIN", "SYS_ADMIN", "sys_admin", "CAP_SYS_ADMIN")
OTHER_CAPABILITIES = ("NET_BIND_SERVICE", "CHOWN", "NET_ADMIN", "SYS_PTRACE")
GPU_RESOURCES = ("nvidia.com/gpu", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb")


@dataclass
class Manifest:
    name: str
    namespace: str
    obj: dict[str, Any]
    truth: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(PROPERTIES, False))
    shape: list[str] = field(default_factory=list)  # what was put where, for disagreements

    @property
    def file_name(self) -> str:
        return f"{self.name}.yaml"


def _container(rng: random.Random, name: str, gpu: bool) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": "500m", "memory": "2Gi"}}
    if gpu:
        resources["limits"] = {rng.choice(GPU_RESOURCES): rng.choice((1, 1, 2, 4, 8))}
    return {
        "name": name,
        "image": f"registry.example.com/ml/{name}:{rng.randint(1, 40)}.0",
        "resources": resources,
        "env": [{"name": "NCCL_DEBUG", "value": "WARN"}],
    }


def _security(container: dict[str, Any]) -> dict[str, Any]:
    return container.setdefault("securityContext", {})


# The mix spells each risk the canonical way; the trap mix adds the spellings and paths
# a checker must also catch (lower case, the CAP_ prefix, /run/docker.sock).
CANONICAL_PATHS = tuple(p for p in HOST_PATHS if p[0] != "/run/docker.sock")


def generate(index: int, rng: random.Random, traps: bool = True) -> Manifest:
    name, namespace = f"pod-{index:04d}", rng.choice(NAMESPACES)
    containers = [_container(rng, "trainer", gpu=rng.random() < 0.7)]
    if rng.random() < 0.3:
        containers.append(_container(rng, "sidecar", gpu=False))
    init = [_container(rng, "fetch-weights", gpu=False)] if rng.random() < 0.35 else []
    spec: dict[str, Any] = {"restartPolicy": "Never"}
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "train"}},
        "spec": spec,
    }
    manifest = Manifest(name, namespace, obj)
    where = [("containers", c) for c in containers] + [("initContainers", c) for c in init]

    def pick() -> tuple[str, dict[str, Any]]:
        return rng.choice(where)

    if rng.random() < 0.12:
        kind, target = pick()
        _security(target)["privileged"] = True
        manifest.truth["privileged"] = True
        manifest.shape.append(f"privileged in {kind}/{target['name']}")
    for _, c in where:
        if "privileged" not in c.get("securityContext", {}) and rng.random() < 0.15:
            _security(c)["privileged"] = False
    for field_name, odds in (("hostPID", 0.08), ("hostIPC", 0.08), ("hostNetwork", 0.05)):
        roll = rng.random()
        if roll < odds:
            spec[field_name] = True
            manifest.truth[field_name] = True
            manifest.shape.append(f"{field_name}: true")
        elif roll < odds + 0.05:
            spec[field_name] = False  # explicit false, as many manifests carry
    if rng.random() < 0.25:
        paths = HOST_PATHS if traps else CANONICAL_PATHS
        (path, under_dev, socket), *_ = rng.choices(paths, HOST_PATH_WEIGHTS[: len(paths)])
        spec["volumes"] = [{"name": "host", "hostPath": {"path": path}}]
        kind, target = pick()
        target["volumeMounts"] = [{"name": "host", "mountPath": "/host"}]
        manifest.truth["hostPath /dev"] = under_dev
        manifest.truth["hostPath docker.sock"] = socket
        manifest.shape.append(f"hostPath {path} mounted by {kind}/{target['name']}")
    elif rng.random() < 0.2:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    added: list[str] = []
    if rng.random() < 0.12:
        spelling = rng.choice(SYS_ADMIN_SPELLINGS) if traps else "SYS_ADMIN"
        added = [spelling] + (["NET_BIND_SERVICE"] if rng.random() < 0.3 else [])
        manifest.truth["SYS_ADMIN"] = True
    elif rng.random() < 0.1:
        added = [rng.choice(OTHER_CAPABILITIES)]
    if added:
        kind, target = pick()
        _security(target)["capabilities"] = {"add": added, "drop": ["ALL"]}
        manifest.shape.append(f"capabilities.add {added} in {kind}/{target['name']}")
    if init:
        spec["initContainers"] = init
    spec["containers"] = containers
    return manifest


def write_manifests(
    directory: Path, count: int, seed: int, *, traps: bool = True
) -> list[Manifest]:
    """`count` manifests, one file each, into `directory`; the same seed gives the same files."""
    rng = random.Random(seed)
    manifests = [generate(i, rng, traps) for i in range(count)]
    for m in manifests:
        text = yaml.safe_dump(m.obj, sort_keys=False, default_flow_style=False)
        (directory / m.file_name).write_text(text, encoding="utf-8")
    return manifests
