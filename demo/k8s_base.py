"""The shared ground of the demo's Kubernetes builders: image references, seeded ids, metadata.

Pure Python: no Django, no network. Everything random comes from `Ids`, seeded per cluster, so a
seed always gives the same objects.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

Obj = dict[str, Any]

# The moment the demo snapshot was "taken"; fixed so the output never depends on the clock.
SNAPSHOT_AT = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)

GPU_OPERATOR_NS = "gpu-operator"
# The NVIDIA DRA driver, installed by its chart in a namespace of its own.
DRA_DRIVER_NS = "nvidia-dra-driver-gpu"
NVCR = "nvcr.io/nvidia"
GPU_OPERATOR = f"{NVCR}/gpu-operator:v24.9.2"
VALIDATOR = f"{NVCR}/cloud-native/gpu-operator-validator:v24.9.2"
DEVICE_PLUGIN = f"{NVCR}/k8s-device-plugin:v0.17.0"  # since v0.15 also the GFD image
DEVICE_PLUGIN_OLD = f"{NVCR}/k8s-device-plugin:v0.14.5"
DRA_DRIVER = f"{NVCR}/k8s-dra-driver-gpu:v25.3.2"
GFD_OLD = f"{NVCR}/gpu-feature-discovery:v0.8.2"  # the standalone GFD paired with plugin v0.14
TOOLKIT = f"{NVCR}/k8s/container-toolkit:v1.17.4-ubuntu20.04"
TOOLKIT_OLD = f"{NVCR}/k8s/container-toolkit:v1.16.1-ubuntu20.04"
DCGM_EXPORTER = f"{NVCR}/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04"
MIG_MANAGER = f"{NVCR}/cloud-native/k8s-mig-manager:v0.10.0-ubuntu20.04"
NFD = "registry.k8s.io/nfd/node-feature-discovery:v0.16.6"

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # what Kubernetes uses in generated names
_CLUSTER_SCOPED = {"ClusterPolicy", "ClusterRole", "ClusterRoleBinding", "Namespace", "Node"}


def driver_image(version: str) -> str:
    return f"{NVCR}/driver:{version}-ubuntu22.04"


class Ids:
    """Seeded source of uids, digests, generated name suffixes, IPs and timestamps."""

    def __init__(self, seed: int, cluster: str) -> None:
        self.seed, self.cluster = seed, cluster
        self._rng = random.Random(f"{seed}:{cluster}")
        self._resource_version = 100_000 + self._rng.randrange(900_000)
        self._node_ips: dict[str, str] = {}

    def uid(self, key: str) -> str:
        # Derived from the object's identity, so owner references are computed, not looked up.
        digest = hashlib.sha256(f"{self.seed}:{self.cluster}:{key}".encode()).digest()
        return str(uuid.UUID(bytes=digest[:16], version=4))

    def digest(self, image: str) -> str:
        # The same image has the same digest in every cluster, as a registry would answer.
        return hashlib.sha256(f"{self.seed}:image:{image}".encode()).hexdigest()

    def pinned(self, image: str) -> str:
        """`repo:tag` -> `repo@sha256:...`: the tag dropped, as an admission policy would."""
        repo, _, _tag = image.rpartition(":")
        return f"{repo}@sha256:{self.digest(image)}"

    def suffix(self, length: int = 5, alphabet: str = _SUFFIX_ALPHABET) -> str:
        return "".join(self._rng.choice(alphabet) for _ in range(length))

    def hex(self, length: int = 10) -> str:
        return self.suffix(length, "0123456789abcdef")

    def resource_version(self) -> str:
        self._resource_version += self._rng.randrange(1, 400)
        return str(self._resource_version)

    def ago(self, low_hours: float, high_hours: float) -> str:
        moment = SNAPSHOT_AT - timedelta(hours=self._rng.uniform(low_hours, high_hours))
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    def node_ip(self, node_name: str) -> str:
        net = 20 if self.cluster.startswith("prod") else 40
        return self._node_ips.setdefault(node_name, f"10.{net}.0.{11 + len(self._node_ips)}")

    def pod_ip(self) -> str:
        return f"10.244.{self._rng.randrange(0, 64)}.{self._rng.randrange(2, 254)}"


def meta(
    ids: Ids,
    kind: str,
    name: str,
    namespace: str | None = None,
    *,
    labels: dict[str, str] | None = None,
    owner: tuple[str, str, str] | None = None,  # (apiVersion, kind, name)
    age_hours: tuple[float, float] = (24.0, 24.0 * 300),
    created: str | None = None,
) -> Obj:
    m: Obj = {"creationTimestamp": created or ids.ago(*age_hours), "name": name}
    m["resourceVersion"] = ids.resource_version()
    m["uid"] = ids.uid(f"{kind}/{namespace or ''}/{name}")
    if namespace:
        m["namespace"] = namespace
    if labels:
        m["labels"] = dict(labels)
    if owner:
        api, okind, oname = owner
        key = f"{okind}/{'' if okind in _CLUSTER_SCOPED else namespace}/{oname}"
        m["ownerReferences"] = [
            {
                "apiVersion": api,
                "blockOwnerDeletion": True,
                "controller": True,
                "kind": okind,
                "name": oname,
                "uid": ids.uid(key),
            }
        ]
    return m


def obj(api: str, kind: str, metadata: Obj, **rest: Any) -> Obj:
    return {"apiVersion": api, "kind": kind, "metadata": metadata, **rest}
