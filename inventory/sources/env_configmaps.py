"""The ConfigMaps pods take environment from, reduced to what POD-011 and POD-008 need. PURE.

A container reaches GPUs outside the scheduler with NVIDIA_VISIBLE_DEVICES, which may come from
a ConfigMap: `valueFrom.configMapKeyRef`, or `envFrom.configMapRef` (whose key, after the
source's `prefix`, becomes the variable). A tenant may also put a credential there in clear
(POD-008: a ConfigMap is no Secret). For each ConfigMap a pod references either way we keep
its key names, the value of the key that becomes NVIDIA_VISIBLE_DEVICES, and for every other
key only the facts the credential rules need (inventory.credential_shapes.ValueFacts: length,
vendor shape and public prefix, never the value): any value of a ConfigMap may be a credential
or private.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from inventory.credential_shapes import value_facts
from inventory.snapshot import Container, EnvConfigMap, Pod
from inventory.sources.raw import mapping

VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
MAX_VALUE = 1024  # a device list; anything longer is cut (it is evidence, not configuration)


class RawData(Protocol):
    # Read-only members: a frozen record (gpu_config.RawConfigMap) is one.
    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def data(self) -> object: ...


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


def env_sources(pods: Iterable[Pod]) -> set[tuple[str, str]]:
    """(namespace, ConfigMap) of every ConfigMap some container takes a variable from."""
    return {
        (pod.namespace, name)
        for pod in pods
        for container in pod.containers
        for name in container_sources(container)
    }


def container_sources(container: Container) -> set[str]:
    """The ConfigMaps this container takes any variable from (configMapKeyRef, envFrom)."""
    found = {v.source for v in container.env if v.value_from == "configMapKeyRef" and v.source}
    found |= {n for kind, n, _ in container.env_from_sources() if kind == "configMapRef" and n}
    return found


def env_configmaps(pods: Iterable[Pod], configmaps: Iterable[RawData]) -> list[EnvConfigMap]:
    """The referenced ConfigMaps among `configmaps`, with key names, those values, and the
    credential facts of each key's value."""
    pods = list(pods)
    wanted = references(pods)
    sources = env_sources(pods)
    found = []
    for raw in configmaps:
        where = (raw.namespace, raw.name)
        if where not in sources:  # every ConfigMap `wanted` names is a source too
            continue
        keys = wanted.get(where, set())
        data = mapping(raw.data)
        values = {k: v[:MAX_VALUE] for k in sorted(keys) if isinstance(v := data.get(k), str)}
        names = tuple(sorted(str(k) for k in data))
        found.append(EnvConfigMap(raw.namespace, raw.name, names, values, _credentials(data)))
    return sorted(found, key=lambda c: (c.namespace, c.name))


def _credentials(data: dict) -> dict[str, dict]:
    """Per key, the facts POD-008 judges its value by (none for a placeholder or empty value:
    no name makes those a credential). The value itself is dropped here."""
    found = {}
    for key, value in data.items():
        facts = value_facts(value) if isinstance(value, str) else None
        if facts is not None:
            found[str(key)] = facts.as_dict()
    return dict(sorted(found.items()))
