"""EKS's `aws-auth` ConfigMap (kube-system): which Kubernetes user and groups an IAM role signs
in as. PURE.

EKS's authenticator reads `mapRoles`, a YAML list of {rolearn, username, groups}: whoever
assumes the role is that user in those groups, `system:masters` included (cluster-admin without
any binding: the API server's authoriser lets the group do everything). A tenant whose pods
assume such a role (IRSA) holds those rights (posture/rules/k8s/aws_auth.py). Only the role ARN,
the username and the groups are kept, as JSON per role; nothing else of the map. `mapUsers`
maps IAM users, whose keys no workload assumes through the cluster: not kept. EKS access
entries (the newer API) live in EKS, not in the cluster: not seen.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from gpuposture.base.safe_parse import SafeParseError, load_yaml
from inventory.snapshot import ConfigMap
from inventory.sources.gpu_config import RawConfigMap
from inventory.sources.raw import mapping, text

AWS_AUTH = ("kube-system", "aws-auth")
AWS_AUTH_PURPOSE = "aws_auth"
MAP_ROLES = "mapRoles"
MAX_BYTES = 1_000_000  # a few hundred roles are a few tens of kB


def aws_auth_configmaps(raw: Iterable[RawConfigMap]) -> list[ConfigMap]:
    """The aws-auth ConfigMap with its role mappings ({role ARN: JSON of username and
    groups}); a mapRoles that cannot be read is said in `unreadable`."""
    for cm in raw:
        if (cm.namespace, cm.name) != AWS_AUTH:
            continue
        value = mapping(cm.data).get(MAP_ROLES)
        if not isinstance(value, str):
            return [ConfigMap(cm.namespace, cm.name, AWS_AUTH_PURPOSE)]
        try:
            entries = load_yaml(value, max_bytes=MAX_BYTES)
        except SafeParseError as error:
            unread = {MAP_ROLES: str(error)}
            return [
                ConfigMap(cm.namespace, cm.name, AWS_AUTH_PURPOSE, (MAP_ROLES,), unreadable=unread)
            ]
        if entries is not None and not isinstance(entries, list):
            unread = {MAP_ROLES: f"not a YAML list but a {type(entries).__name__}"}
            return [
                ConfigMap(cm.namespace, cm.name, AWS_AUTH_PURPOSE, (MAP_ROLES,), unreadable=unread)
            ]
        data = _roles(entries or [])
        return [ConfigMap(cm.namespace, cm.name, AWS_AUTH_PURPOSE, (MAP_ROLES,), data=data)]
    return []


def aws_auth_warnings(configmaps: Iterable[ConfigMap]) -> list[str]:
    """A mapRoles that cannot be read, said in the sync's warnings: without its roles every
    tenant looks free of what aws-auth grants (system:masters among it), which is not known."""
    return [
        f"ConfigMap {cm.namespace}/{cm.name} {key} could not be read: {error}; the roles it "
        "maps are unknown, so no tenant is judged through aws-auth (K8S-003/004/008, DRA-001)"
        for cm in configmaps
        if (cm.namespace, cm.name) == AWS_AUTH and cm.purpose == AWS_AUTH_PURPOSE
        for key, error in sorted(cm.unreadable.items())
    ]


def _roles(entries: list) -> dict[str, str]:
    found: dict[str, dict] = {}
    for entry in entries:
        entry = mapping(entry)
        arn = (text(entry.get("rolearn"), "") or "").strip()
        if not arn:
            continue
        groups = entry.get("groups")
        names = [g for g in (text(g, "") for g in (groups if isinstance(groups, list) else []))]
        kept = found.setdefault(arn, {"username": "", "groups": []})
        kept["username"] = kept["username"] or (text(entry.get("username"), "") or "").strip()
        kept["groups"] = sorted({*kept["groups"], *(n.strip() for n in names if n and n.strip())})
    return {arn: json.dumps(v, sort_keys=True) for arn, v in sorted(found.items())}


def role_mappings(configmaps: Iterable[ConfigMap]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Role ARN -> (username, groups) from the kept aws-auth; {} without one."""
    found = {}
    for cm in configmaps:
        if (cm.namespace, cm.name) != AWS_AUTH or cm.purpose != AWS_AUTH_PURPOSE:
            continue
        for arn, value in cm.data.items():
            entry = mapping(json.loads(value))
            found[arn] = (str(entry.get("username") or ""), tuple(entry.get("groups") or ()))
    return found
