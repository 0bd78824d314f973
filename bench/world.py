"""A large, realistic, seeded cluster for bench/sync_scale.py, streamed to a kubectl JSON List.

Nodes come in pools of 20 (time-slicing, MIG or exclusive GPUs, each pool tainted for a trust
class or, now and then, only with the generic GPU taint); every GPU node runs the GPU Operator's
device plugin, container toolkit and DCGM exporter; each tenant's Deployments and Jobs are
placed on free GPU slots of its pool, the rest stay Pending. A few pods carry the risks the
checks look for (privileged, hostPath /dev, SYS_ADMIN, hostIPC, MIG config devices), a tenth of
the namespaces lack a GPU quota, and two tenants share every pool, so the checks have real work.

The objects are built with demo/k8s.py, the same builders the demo world uses, and written one
at a time: the generator never holds the whole snapshot in memory. Pure Python, no Django.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import yaml

from bench.objects import (
    CA,
    DEVELOPER_RULES,
    GPU,
    MIG_1G,
    OPERATOR_SETS,
    TS_KEYS,
    Slot,
    app_image,
    bumped,
    operator_pod,
    platform_objects,
    tenant_pod,
)
from demo import k8s
from demo.k8s import GpuModel, Host, NodeSpec, Obj

POOL_SIZE = 20
H100 = GpuModel(
    "NVIDIA-H100-80GB-HBM3", 81559, "hopper", (9, 0), True, "PowerEdge-XE9680", 224, 2048
)
A100 = GpuModel("NVIDIA-A100-SXM4-80GB", 81920, "ampere", (8, 0), True, "DGX-A100", 256, 2048)
L40S = GpuModel(
    "NVIDIA-L40S", 46068, "ada-lovelace", (8, 9), False, "ProLiant-DL380a-Gen11", 64, 512
)
HOST = Host("Ubuntu 22.04.4 LTS", "5.15.0-119-generic", "containerd://1.7.22", "v1.29.9")
MIG_LAYOUT = {MIG_1G: 7}  # all-1g.10gb on an 80GB H100
# Pool kind -> (share of the pools, GPU models, trust classes its tenants have).
POOL_KINDS = {
    "ts": (0.35, (A100, L40S), ("internal_trusted", "internal")),
    "mig": (0.30, (H100,), ("external", "sensitive", "internal")),
    "excl": (0.35, (A100, L40S), ("internal", "external", "internal_trusted", "sensitive")),
}
REPLICAS_PER_APP = 10


@dataclass(frozen=True)
class Size:
    nodes: int = 2000
    pods: int = 40_000  # operator pods included
    namespaces: int = 400
    tenants: int = 200
    seed: int = 7
    # The worst case (sync_scale.py --worst): tenants of every class, every pool shared (time
    # slicing or MIG), each tenant's pods spread over the whole cluster, so about 20 tenants
    # run on every node and each per-node cause affects all of them.
    worst: bool = False


@dataclass(frozen=True)
class Pool:
    index: int
    kind: str
    model: GpuModel
    trust_class: str
    taint: str | None  # the class the pool is tainted for; None: the generic GPU taint only
    ts_key: str | None

    @property
    def slots(self) -> int:
        """GPU devices a pod can take on one node of the pool."""
        return {"ts": 8 * 4, "mig": 8 * 7, "excl": 8}[self.kind]

    @property
    def resource(self) -> str:
        return MIG_1G if self.kind == "mig" else GPU


class BenchIds(k8s.Ids):
    """demo's Ids, with node addresses that stay valid beyond 250 nodes."""

    def node_ip(self, node_name: str) -> str:
        if node_name not in self._node_ips:
            n = len(self._node_ips)
            self._node_ips[node_name] = f"10.20.{n // 250}.{n % 250 + 2}"
        return self._node_ips[node_name]


class World:
    """Every object of the cluster, made in a fixed order from the seed."""

    def __init__(self, size: Size) -> None:
        self.size = size
        rng = random.Random(size.seed)
        pools = max(1, -(-size.nodes // POOL_SIZE))
        self.pools = [_pool(rng, i, shared_only=size.worst) for i in range(pools)]
        self.node_pool = [self.pools[i // POOL_SIZE] for i in range(size.nodes)]
        self.tenants = [f"tenant-{t:03d}" for t in range(size.tenants)]
        self.tenant_pool = {t: self.pools[i % len(self.pools)] for i, t in enumerate(self.tenants)}
        self.tenant_class = {t: self._tenant_class(rng, self.tenant_pool[t]) for t in self.tenants}
        owners = [self.tenants[i % size.tenants] for i in range(size.namespaces)]
        self.namespaces = {  # namespace -> tenant, dealt out in turn
            f"{tenant}-ns{i // size.tenants}": tenant for i, tenant in enumerate(owners)
        }
        self.operator_pods = size.nodes * len(OPERATOR_SETS)
        self.tenant_pods = max(0, size.pods - self.operator_pods)

    def _tenant_class(self, rng: random.Random, pool: Pool) -> str:
        if self.size.worst:  # every class, mixed on every node
            return rng.choice(("internal_trusted", "internal", "external", "sensitive"))
        # One tenant in ten sits in a pool its class does not belong to: SHARE-003's case.
        if rng.random() < 0.1:
            return rng.choice(("internal", "external", "internal_trusted"))
        return pool.trust_class

    def node_name(self, i: int) -> str:
        return f"gpu-{self.node_pool[i].kind}-{i:05d}"

    def tenants_document(self) -> dict[str, Any]:
        owned: dict[str, list[str]] = {t: [] for t in self.tenants}
        for ns, tenant in self.namespaces.items():
            owned[tenant].append(ns)
        # A tenth of the namespaces are claimed by label instead of the registry.
        return {
            "tenants": [
                {
                    "slug": t,
                    "name": f"Tenant {t[-3:]}",
                    "trust_class": self.tenant_class[t],
                    "namespaces": [ns for ns in owned[t] if not _by_label(ns)],
                    "principals": [f"group:{t}-developers"],
                }
                for t in self.tenants
            ]
        }

    def items(self, changed: frozenset[int] = frozenset()) -> Iterator[Obj]:
        """Every object; pods whose running number is in `changed` get a new image tag (even
        numbers) or finish (odd numbers), as between two syncs of a live cluster."""
        ids = BenchIds(self.size.seed, "bench")
        yield from self._nodes(ids)
        yield from self._namespaced_objects(ids)
        pods = _Counter()
        yield from self._operator_pods(ids, pods, changed)
        yield from self._tenant_pod_objects(ids, pods, changed)

    def _nodes(self, ids: k8s.Ids) -> Iterator[Obj]:
        for i in range(self.size.nodes):
            yield k8s.node(
                ids,
                _node_spec(self.node_name(i), self.node_pool[i]),
                HOST,
                mig_strategy="mixed",
                zone="eu-west-1a",
            )

    def _namespaced_objects(self, ids: k8s.Ids) -> Iterator[Obj]:
        yield from platform_objects(ids)
        for n, (ns, tenant) in enumerate(self.namespaces.items()):
            labels = {"gpuposture.io/tenant": tenant} if _by_label(ns) else {}
            yield k8s.namespace(ids, ns, labels)
            yield k8s.configmap(ids, "kube-root-ca.crt", ns, {"ca.crt": CA})
            if n % 10 != 3:  # one namespace in ten has no GPU quota: K8S-001
                hard = {"requests.nvidia.com/gpu": "64", f"requests.{MIG_1G}": "64"}
            else:
                hard = {"requests.cpu": "64", "requests.memory": "256Gi"}
            yield k8s.resource_quota(ids, ns, hard, dict.fromkeys(hard, "0"))
            yield k8s.service(ids, ns, "inference", f"{ns}-app0", 8000)
            yield k8s.role(ids, "tenant-developer", DEVELOPER_RULES, ns)
            yield k8s.binding(ids, "tenant-developers", "edit", f"Group:{tenant}-developers", ns)

    def _operator_pods(
        self, ids: k8s.Ids, pods: _Counter, changed: frozenset[int]
    ) -> Iterator[Obj]:
        for i in range(self.size.nodes):
            for ds in OPERATOR_SETS:
                number = pods.next()
                image = bumped(ds.image) if number in changed else ds.image
                yield operator_pod(ids, ds, self.node_name(i), image)

    def _tenant_pod_objects(
        self, ids: k8s.Ids, pods: _Counter, changed: frozenset[int]
    ) -> Iterator[Obj]:
        rng = random.Random(self.size.seed + 1)
        free = {i: self.node_pool[i].slots for i in range(self.size.nodes)}
        pool_nodes: dict[int, list[int]] = {}
        for i, pool in enumerate(self.node_pool):
            pool_nodes.setdefault(pool.index, []).append(i)
        everywhere = list(range(self.size.nodes))
        for tenant, ns, app, count in self._apps():
            pool = self.tenant_pool[tenant]
            yield k8s.deployment(ids, app, ns, app_image(app))
            rs = f"{app}-{ids.hex(10)}"
            for _ in range(count):
                if self.size.worst:  # anywhere in the cluster, tolerating the node's taint
                    node = _place(rng, everywhere, free)
                    pool = self.node_pool[node] if node is not None else pool
                else:
                    node = _place(rng, pool_nodes.get(pool.index, []), free)
                name = self.node_name(node) if node is not None else None
                slot = Slot(name, pool.resource, pool.taint, f"pool-{pool.index:03d}")
                number = pods.next()
                yield tenant_pod(ids, rng, (ns, app, rs), slot, number in changed, number)

    def _apps(self) -> Iterator[tuple[str, str, str, int]]:
        """(tenant, namespace, app, replicas): tenant pods shared out by pool capacity."""
        weight = {t: self.tenant_pool[t].slots for t in self.tenants}
        total = sum(weight.values()) or 1
        by_tenant = {
            t: [ns for ns, owner in self.namespaces.items() if owner == t] for t in self.tenants
        }
        left = self.tenant_pods
        for k, tenant in enumerate(self.tenants):
            share = (
                left if k == len(self.tenants) - 1 else self.tenant_pods * weight[tenant] // total
            )
            share, left = min(share, left), left - min(share, left)
            spaces = by_tenant[tenant] or [f"{tenant}-ns0"]
            for a, start in enumerate(range(0, share, REPLICAS_PER_APP)):
                ns = spaces[a % len(spaces)]
                yield tenant, ns, f"{ns}-app{a}", min(REPLICAS_PER_APP, share - start)


class _Counter:
    def __init__(self) -> None:
        self.value = -1

    def next(self) -> int:
        self.value += 1
        return self.value


def _pool(rng: random.Random, index: int, *, shared_only: bool = False) -> Pool:
    kinds = [k for k in POOL_KINDS if not (shared_only and k == "excl")]
    kind = rng.choices(kinds, weights=[POOL_KINDS[k][0] for k in kinds])[0]
    _, models, classes = POOL_KINDS[kind]
    trust_class = rng.choice(classes)
    # One pool in ten carries only the generic nvidia.com/gpu taint: K8S-002.
    taint = None if rng.random() < 0.1 else trust_class
    ts_key = rng.choice(tuple(TS_KEYS)) if kind == "ts" else None
    return Pool(index, kind, rng.choice(models), trust_class, taint, ts_key)


def _node_spec(name: str, pool: Pool) -> NodeSpec:
    taints: tuple[tuple[str, str | None, str], ...] = (("nvidia.com/gpu", None, "NoSchedule"),)
    if pool.taint:
        taints += (("gpuposture.io/trust-class", pool.taint, "NoSchedule"),)
    sharing, replicas = ("time-slicing", 4) if pool.kind == "ts" else ("none", 1)
    mig = pool.kind == "mig"
    return NodeSpec(
        name,
        f"pool-{pool.index:03d}",
        pool.model,
        8,
        sharing,
        replicas,
        pool.ts_key,
        "all-1g.10gb" if mig else None,
        MIG_LAYOUT if mig else {},
        taints,
    )


def _place(rng: random.Random, nodes: list[int], free: dict[int, int]) -> int | None:
    """A node of the pool with a free slot (tried a few times at random, then in order), or
    None: the pod stays Pending."""
    for _ in range(4):
        i = rng.choice(nodes) if nodes else None
        if i is not None and free[i] > 0:
            free[i] -= 1
            return i
    for i in nodes:
        if free[i] > 0:
            free[i] -= 1
            return i
    return None


def _by_label(namespace: str) -> bool:
    return namespace.endswith("ns1") and int(namespace.split("-")[1]) % 10 == 0


def write_snapshot(world: World, path: Path, changed: frozenset[int] = frozenset()) -> int:
    """Write the List one object at a time; returns the number of objects."""
    count = 0
    with path.open("w", encoding="utf-8") as out:
        out.write('{"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, ')
        out.write('"items": [')
        for item in world.items(changed):
            _write_item(out, item, first=count == 0)
            count += 1
        out.write("]}\n")
    return count


def _write_item(out: IO[str], item: Obj, *, first: bool) -> None:
    if not first:
        out.write(", ")
    out.write(json.dumps(item))


def write_tenants(world: World, path: Path) -> None:
    path.write_text(yaml.safe_dump(world.tenants_document(), sort_keys=False), encoding="utf-8")


def changed_pods(size: Size, fraction: float = 0.01) -> frozenset[int]:
    """Which pods (by running number) change between the two syncs."""
    rng = random.Random(size.seed + 2)
    return frozenset(rng.sample(range(size.pods), round(size.pods * fraction)))
