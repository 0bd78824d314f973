"""POD-008 for variables a container takes from a ConfigMap (`valueFrom.configMapKeyRef`, or
`envFrom.configMapRef` with its prefix). PURE.

A ConfigMap is no Secret (the Kubernetes documentation says so): its data is stored and shown in
clear to anyone who may get ConfigMaps in the namespace, so a credential put there is as exposed
as a literal `env[].value`. The sync kept no value of it, only per key the facts the credential
rules judge (inventory/sources/env_configmaps.py); the variable's name is the pod's, so the rule
runs here with the name the container sees. A ConfigMap the snapshot does not hold (not read, or
absent from the cluster) says nothing: no finding on a guess. A Secret reference is fine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inventory.credential_shapes import CredentialMatch, ValueFacts, facts_match
from inventory.snapshot import Container, EnvConfigMap

ConfigMaps = Mapping[tuple[str, str], EnvConfigMap]


def configmap_credentials(
    container: Container, path: str, namespace: str, configmaps: ConfigMaps
) -> list[dict[str, Any]]:
    """The variables this container takes from a ConfigMap whose value is a credential: the
    variable, the field, the ConfigMap and key, the rule that matched and the value's length;
    never the value (the sync never kept it)."""
    found = []
    for index, var in enumerate(container.env):
        if var.value_from != "configMapKeyRef" or not var.source or not var.key:
            continue
        field = f"{path}.env[{index}].valueFrom.configMapKeyRef"
        entry = _judged(var.name, field, configmaps.get((namespace, var.source)), var.key)
        if entry:
            found.append(entry)
    found += _from_env_from(container, path, namespace, configmaps)
    return found


def _from_env_from(
    container: Container, path: str, namespace: str, configmaps: ConfigMaps
) -> list[dict[str, Any]]:
    """Each key of an `envFrom` ConfigMap becomes `prefix + key`; a later source wins over an
    earlier one and any `env` entry of the name over all (as the kubelet sets them)."""
    explicit = {var.name for var in container.env}
    chosen: dict[str, dict[str, Any] | None] = {}
    for index, (kind, name, prefix) in enumerate(container.env_from_sources()):
        if kind != "configMapRef":
            continue
        configmap = configmaps.get((namespace, name))
        for key in configmap.keys if configmap else ():
            variable = prefix + key
            field = f"{path}.envFrom[{index}].configMapRef"
            entry = _judged(variable, field, configmap, key)
            if entry and prefix:
                entry["prefix"] = prefix
            chosen[variable] = entry  # a later source's key replaces an earlier one's
    return [e for name, e in sorted(chosen.items()) if e and name not in explicit]


def _judged(
    variable: str, field: str, configmap: EnvConfigMap | None, key: str
) -> dict[str, Any] | None:
    if configmap is None or key not in configmap.keys:
        return None  # not in the snapshot, or an optional key that is unset: nothing to judge
    stored = configmap.credentials.get(key)
    if not stored:
        return None  # empty or a placeholder (or synced before the facts were kept)
    facts = ValueFacts.from_dict(stored)
    match = facts_match(variable, facts)
    return None if match is None else _entry(variable, field, configmap, key, match, facts)


def _entry(
    variable: str,
    field: str,
    configmap: EnvConfigMap,
    key: str,
    match: CredentialMatch,
    facts: ValueFacts,
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": variable,
        "field": field,
        "configmap": configmap.name,
        "key": key,
        "rule": match.rule,
        "kind": match.what,
        "hint": match.hint,
        "value_length": facts.length,
    }
    if match.example:
        entry["value_kind"] = "documented_example"
        entry["example_of"] = match.example
    return entry
