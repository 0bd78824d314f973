"""A seeded GPU fleet's use, for bench/telemetry_scale.py: hourly roll-up rows for many days and
one hour of raw DCGM-Exporter samples, both from the same schedule. PURE: no Django.

Nodes of 8 GPUs. A share of the nodes is MIG (every GPU as 7 x 1g.10gb instances, each lent to
a different tenant), one node in ten is time-sliced (its figures are "shared"). Each day a node
is held by one tenant (tenants rotate daily), or runs platform pods (burn-in, validators), or
is free (the exporter reports it with no pod: "unattributed"). One held GPU in twenty sits idle
(busy ~2%), which idle_allocated reports.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from telemetry.samples import GpuSample

GPUS_PER_NODE = 8
MIG_INSTANCES, MIG_PROFILE = 7, "1g.10gb"
SCRAPE = timedelta(seconds=30)
SCRAPES_PER_HOUR = int(timedelta(hours=1) / SCRAPE)
PLATFORM_NS, PLATFORM_POD = "gpu-operator", "nvidia-cuda-validator"
IDLE_SHARE = 0.05

# GpuUsageHourly columns by attname, in the order hourly_rows() fills them.
HOURLY_COLUMNS = (
    "cluster_id", "hour", "hostname", "uuid", "gi_id", "gi_profile", "model", "tenant_id",
    "attribution", "confidence", "gpu_hours", "mig_slice_hours", "busy_gpu_hours", "samples",
    "busy_max",
)  # fmt: skip


@dataclass(frozen=True)
class Fleet:
    gpus: int = 2000
    tenants: int = 200
    mig_share: float = 0.1
    seed: int = 7

    @property
    def nodes(self) -> int:
        return -(-self.gpus // GPUS_PER_NODE)

    def hostname(self, node: int) -> str:
        return f"gpu-{node:04d}"

    def is_mig(self, node: int) -> bool:
        # Spread evenly: node n is MIG when the running share crosses a whole number.
        return int((node + 1) * self.mig_share) > int(node * self.mig_share)

    def is_time_sliced(self, node: int) -> bool:
        return not self.is_mig(node) and node % 10 == 5

    def model(self, node: int) -> str:
        return "NVIDIA A100-SXM4-80GB" if self.is_mig(node) else "NVIDIA H100 80GB HBM3"

    def devices_per_hour(self) -> int:
        return sum(
            GPUS_PER_NODE * (MIG_INSTANCES if self.is_mig(n) else 1) for n in range(self.nodes)
        )


def tenant_slug(index: int) -> str:
    return f"t-{index:03d}"


def uuid_of(node: int, gpu: int) -> str:
    return f"GPU-{node:08x}-{gpu:04x}-4000-8000-{node * 8 + gpu:012x}"


@dataclass(frozen=True)
class Holder:
    attribution: str  # tenant / platform / unattributed
    tenant: int | None  # tenant index
    idle: frozenset[int]  # GPU indexes held but idle all day


def holder(fleet: Fleet, node: int, day: int) -> Holder:
    """Who holds a node on a day (day = date.toordinal()): the same for the rows and samples."""
    rng = random.Random(f"{fleet.seed}/{node}/{day}")
    roll = rng.random()
    if roll < 0.10:
        return Holder("unattributed", None, frozenset())
    if roll < 0.15:
        return Holder("platform", None, frozenset())
    idle = frozenset(g for g in range(GPUS_PER_NODE) if rng.random() < IDLE_SHARE)
    return Holder("tenant", (node + day * 37) % fleet.tenants, idle)


def _slots(fleet: Fleet, node: int, day: int) -> Iterator[tuple[int, str, int | None, str, bool]]:
    """(gpu, gi_id, tenant index, attribution, idle) for each device of a node on a day."""
    h = holder(fleet, node, day)
    for gpu in range(GPUS_PER_NODE):
        if fleet.is_mig(node) and h.attribution == "tenant":
            for gi in range(MIG_INSTANCES):
                tenant = (node * 7 + gpu * 3 + gi + day * 37) % fleet.tenants
                yield gpu, str(gi + 7), tenant, "tenant", False
        elif fleet.is_mig(node):
            for gi in range(MIG_INSTANCES):
                yield gpu, str(gi + 7), None, h.attribution, False
        else:
            yield gpu, "", h.tenant, h.attribution, gpu in h.idle


def _busy(attribution: str, idle: bool, rng: random.Random) -> float:
    if attribution == "unattributed":
        return 0.0
    if attribution == "platform" or idle:
        return 2.0 * rng.random()
    return 30.0 + 65.0 * rng.random()


def hourly_rows(
    fleet: Fleet, *, cluster_id: int, tenant_ids: list[int], hours: list[datetime], db_hour
) -> list[tuple]:  # type: ignore[no-untyped-def]
    """GpuUsageHourly rows (HOURLY_COLUMNS order) for the given hours of one day, as the app's
    roll-up writes them: one row per device and holder, 120 samples an hour."""
    rng = random.Random(f"{fleet.seed}/{hours[0]:%Y%m%d%H}")
    day = hours[0].date().toordinal()
    rows = []
    for node in range(fleet.nodes):
        host, model = fleet.hostname(node), fleet.model(node)
        shared = fleet.is_time_sliced(node)
        for gpu, gi_id, tenant, attribution, idle in _slots(fleet, node, day):
            tenant_id = tenant_ids[tenant] if tenant is not None else None
            confidence = "none" if attribution == "unattributed" else "exact"
            confidence = "shared" if shared and attribution == "tenant" else confidence
            uuid, profile = uuid_of(node, gpu), MIG_PROFILE if gi_id else ""
            for hour in hours:
                busy = _busy(attribution, idle, rng)
                rows.append(
                    (cluster_id, db_hour(hour), host, uuid, gi_id, profile, model, tenant_id,
                     attribution, confidence, 0.0 if gi_id else 1.0, 1.0 if gi_id else 0.0,
                     0.0 if gi_id else busy / 100.0, SCRAPES_PER_HOUR, min(100.0, busy * 1.1))
                )  # fmt: skip
    return rows


def hour_samples(fleet: Fleet, hour: datetime, minutes: int = 5) -> Iterator[list[GpuSample]]:
    """One hour of samples at a 30 s scrape, every `minutes` minutes' worth in one list (as the
    beat task would read them), labelled as DCGM-Exporter labels them."""
    rng = random.Random(f"{fleet.seed}/raw/{hour:%Y%m%d%H}")
    day = hour.date().toordinal()
    devices = []
    for node in range(fleet.nodes):
        base = {"hostname": fleet.hostname(node), "model": fleet.model(node)}
        for gpu, gi_id, tenant, attribution, idle in _slots(fleet, node, day):
            namespace, pod = "", ""
            if attribution == "tenant" and tenant is not None:
                namespace, pod = tenant_slug(tenant), f"job-{node}-{gpu}-{gi_id or 0}"
            elif attribution == "platform":
                namespace, pod = PLATFORM_NS, f"{PLATFORM_POD}-{node}"
            labels = base | {"gpu": str(gpu), "uuid": uuid_of(node, gpu), "gi_id": gi_id,
                             "gi_profile": MIG_PROFILE if gi_id else "", "namespace": namespace,
                             "pod": pod, "container": "main" if pod else ""}  # fmt: skip
            devices.append((labels, attribution, idle))
    per_chunk = int(timedelta(minutes=minutes) / SCRAPE)
    for first in range(0, SCRAPES_PER_HOUR, per_chunk):
        chunk = []
        for step in range(first, min(first + per_chunk, SCRAPES_PER_HOUR)):
            time = hour + SCRAPE * step
            for labels, attribution, idle in devices:
                busy = _busy(attribution, idle, rng)
                util = None if labels["gi_id"] else busy  # GPU_UTIL is not reported on MIG
                chunk.append(GpuSample(time=time, util=util, gr_active=busy / 100.0,
                                       fb_used_mib=40000.0 * busy / 100.0, **labels))  # fmt: skip
        yield chunk
