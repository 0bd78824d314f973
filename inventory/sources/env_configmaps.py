"""The ConfigMaps pods take environment from, reduced to what POD-011 needs. PURE.

A container reaches GPUs outside the scheduler with NVIDIA_VISIBLE_DEVICES, which may come from
a ConfigMap: `valueFrom.configMapKeyRef`, or `envFrom.configMapRef` (whose key, after the
source's `prefix`, becomes the variable). For each ConfigMap a pod references that way we keep
its key names and the value of the key that becomes NVIDIA_VISIBLE_DEVICES, and nothing else:
any other value of a ConfigMap may be a credential or private.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from inventory.snapshot import Container, EnvConfigMap, Pod
from inventory.sources.raw import mapping

VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
MAX_VALUE = 1024  # a device list; anything longer is cut (it is evidence, not configuration)


class RawData(Protocol):
    namespace: str
    name: str
    data: object


def references(pods: Iterable[Pod]) -> dict[tuple[str, str], set[str]]:
    """(namespace, ConfigMap) -> the keys whose value becomes NVIDIA_VISIBLE_DEVICES in some
    container (empty: only the key names are needed)."""
    wanted: dict[tuple[str, str], set[str]] = {}
    for pod in pods:
        for container in pod.containers:
            for name, key in container_references(container):
                keys = wanted.setdefault((pod.namespace, name), set())
                if key:
                    keys.add(key)
    return wanted


def container_references(container: Container) -> list[tuple[str, str]]:
    """(ConfigMap, key or "") pairs this container may take NVIDIA_VISIBLE_DEVICES from."""
    found = [
        (var.source, var.key)
        for var in container.env
        if var.name == VISIBLE_DEVICES and var.value_from == "configMapKeyRef" and var.source
    ]
    for kind, name, prefix in container.env_from_sources():
        if kind == "configMapRef" and name:
            key = VISIBLE_DEVICES[len(prefix) :] if VISIBLE_DEVICES.startswith(prefix) else ""
            found.append((name, key))
    return [(name, key or "") for name, key in found]


def env_configmaps(pods: Iterable[Pod], configmaps: Iterable[RawData]) -> list[EnvConfigMap]:
    """The referenced ConfigMaps among `configmaps`, with key names and those values only."""
    wanted = references(pods)
    found = []
    for raw in configmaps:
        keys = wanted.get((raw.namespace, raw.name))
        if keys is None:
            continue
        data = mapping(raw.data)
        values = {k: v[:MAX_VALUE] for k in sorted(keys) if isinstance(v := data.get(k), str)}
        names = tuple(sorted(str(k) for k in data))
        found.append(EnvConfigMap(raw.namespace, raw.name, names, values))
    return sorted(found, key=lambda c: (c.namespace, c.name))
