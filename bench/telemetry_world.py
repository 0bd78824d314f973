"""A seeded GPU fleet's use, for bench/telemetry_scale.py: hourly roll-up rows for many days and
one hour of raw DCGM-Exporter samples, both from the same schedule (PURE), and the loaders that
put them in the bench's database (they import Django when called).

Nodes of 8 GPUs. A share of the nodes is MIG (every GPU as 7 x 1g.10gb instances, each lent to
a different tenant), one node in ten is time-sliced (its figures are "shared"). Each day a node
is held by one tenant (tenants rotate daily, handing over at an hour that differs from node to
node, as jobs do), or runs platform pods (burn-in, validators), or is free (the exporter reports
it with no pod: "unattributed"). One held GPU in twenty sits idle (busy ~2%), which
idle_allocated reports.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from telemetry.samples import GpuSample

GPUS_PER_NODE = 8
MIG_INSTANCES, MIG_PROFILE = 7, "1g.10gb"
SCRAPE = timedelta(seconds=30)
SCRAPES_PER_HOUR = int(timedelta(hours=1) / SCRAPE)
PLATFORM_NS, PLATFORM_POD = "gpu-operator", "nvidia-cuda-validator"
IDLE_SHARE = 0.05

# GpuUsageHourly columns by attname, in the order hourly_rows() fills them.
HOURLY_COLUMNS = (
    "cluster_id",
    "hour",
    "hostname",
    "uuid",
    "gi_id",
    "gi_profile",
    "model",
    "tenant_id",
    "attribution",
    "confidence",
    "gpu_hours",
    "mig_slice_hours",
    "busy_gpu_hours",
    "samples",
    "busy_max",
)


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


def holder_day(node: int, hour: datetime) -> int:
    """The node's holding day at an hour: days start at a different hour on each node."""
    return (hour - timedelta(hours=node % 24)).date().toordinal()


def holder(fleet: Fleet, node: int, day: int) -> Holder:
    """Who holds a node on a holding day: the same for the rows and the samples."""
    rng = random.Random(f"{fleet.seed}/{node}/{day}")
    roll = rng.random()
    if roll < 0.10:
        return Holder("unattributed", None, frozenset())
    if roll < 0.15:
        return Holder("platform", None, frozenset())
    idle = frozenset(g for g in range(GPUS_PER_NODE) if rng.random() < IDLE_SHARE)
    return Holder("tenant", (node + day * 37) % fleet.tenants, idle)


def _slots(fleet: Fleet, node: int, hour: datetime) -> Iterator[tuple]:
    """(gpu, gi_id, tenant index or None, attribution, idle) for each device of a node."""
    day = holder_day(node, hour)
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
) -> list[tuple]:
    """GpuUsageHourly rows (HOURLY_COLUMNS order) for the given hours, as the app's roll-up
    writes them: one row per device and holder, 120 samples an hour."""
    rng = random.Random(f"{fleet.seed}/{hours[0]:%Y%m%d%H}")
    rows = []
    for node in range(fleet.nodes):
        host, model = fleet.hostname(node), fleet.model(node)
        shared = fleet.is_time_sliced(node)
        for hour in hours:
            for gpu, gi_id, tenant, attribution, idle in _slots(fleet, node, hour):
                tenant_id = tenant_ids[tenant] if tenant is not None else None
                confidence = "none" if attribution == "unattributed" else "exact"
                confidence = "shared" if shared and attribution == "tenant" else confidence
                uuid, profile = uuid_of(node, gpu), MIG_PROFILE if gi_id else ""
                busy = _busy(attribution, idle, rng)
                rows.append(
                    (
                        cluster_id,
                        db_hour(hour),
                        host,
                        uuid,
                        gi_id,
                        profile,
                        model,
                        tenant_id,
                        attribution,
                        confidence,
                        0.0 if gi_id else 1.0,
                        1.0 if gi_id else 0.0,
                        0.0 if gi_id else busy / 100.0,
                        SCRAPES_PER_HOUR,
                        min(100.0, busy * 1.1),
                    )
                )
    return rows


def hour_samples(fleet: Fleet, hour: datetime, minutes: int = 5) -> Iterator[list[GpuSample]]:
    """One hour of samples at a 30 s scrape, every `minutes` minutes' worth in one list (as the
    beat task would read them), labelled as DCGM-Exporter labels them."""
    rng = random.Random(f"{fleet.seed}/raw/{hour:%Y%m%d%H}")
    devices = []
    for node in range(fleet.nodes):
        base = {"hostname": fleet.hostname(node), "model": fleet.model(node)}
        for gpu, gi_id, tenant, attribution, idle in _slots(fleet, node, hour):
            namespace, pod = "", ""
            if attribution == "tenant" and tenant is not None:
                namespace, pod = tenant_slug(tenant), f"job-{node}-{gpu}-{gi_id or 0}"
            elif attribution == "platform":
                namespace, pod = PLATFORM_NS, f"{PLATFORM_POD}-{node}"
            labels = base | {
                "gpu": str(gpu),
                "uuid": uuid_of(node, gpu),
                "gi_id": gi_id,
                "gi_profile": MIG_PROFILE if gi_id else "",
                "namespace": namespace,
                "pod": pod,
                "container": "main" if pod else "",
            }
            devices.append((labels, attribution, idle))
    per_chunk = int(timedelta(minutes=minutes) / SCRAPE)
    for first in range(0, SCRAPES_PER_HOUR, per_chunk):
        chunk = []
        for step in range(first, min(first + per_chunk, SCRAPES_PER_HOUR)):
            time = hour + SCRAPE * step
            for labels, attribution, idle in devices:
                busy = _busy(attribution, idle, rng)
                util = None if labels["gi_id"] else busy  # GPU_UTIL is not reported on MIG
                chunk.append(
                    GpuSample(
                        time=time,
                        util=util,
                        gr_active=busy / 100.0,
                        fb_used_mib=40000.0 * busy / 100.0,
                        **labels,
                    )
                )
        yield chunk


# --- loading it (Django) -------------------------------------------------------------------------


def setup_world(fleet: Fleet) -> tuple[Any, Any]:
    """The cluster, its nodes (time-sliced ones marked, as the ingest's attribution reads),
    the tenants with one namespace each, and a security lead."""
    from django.contrib.auth.models import Group, User
    from django.utils import timezone

    from inventory.models import Node
    from inventory.sync import cluster_get_or_create
    from tenants.models import Tenant, TenantNamespace, TrustClass

    cluster = cluster_get_or_create(name="bench")
    now = timezone.now()
    Node.objects.bulk_create(
        Node(
            cluster=cluster,
            name=fleet.hostname(n),
            is_gpu_node=True,
            gpu_count=8,
            gpu_model=fleet.model(n),
            changed_at=now,
            sharing_strategy="mig"
            if fleet.is_mig(n)
            else "time_slicing"
            if fleet.is_time_sliced(n)
            else "none",
        )
        for n in range(fleet.nodes)
    )
    classes = list(TrustClass.objects.order_by("rank"))
    tenants = Tenant.objects.bulk_create(
        Tenant(slug=tenant_slug(i), name=f"Tenant {i}", trust_class=classes[i % len(classes)])
        for i in range(fleet.tenants)
    )
    TenantNamespace.objects.bulk_create(TenantNamespace(tenant=t, name=t.slug) for t in tenants)
    user = User.objects.create_user("bench-lead", password=None)
    user.groups.add(Group.objects.get(name="security_lead"))
    return cluster, user


def load_hourly(fleet: Fleet, cluster: Any, first_hour: datetime, days: int) -> int:
    """days x 24 hours of roll-ups from first_hour, a day per INSERT batch (COPY on PostgreSQL)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from inventory.bulk import db_datetime, rows_insert
    from telemetry.models import GpuUsageHourly
    from tenants.models import Tenant

    tenant_ids = [pk for _slug, pk in Tenant.objects.order_by("slug").values_list("slug", "pk")]
    total = 0
    for d in range(days):
        hours = [first_hour + timedelta(hours=24 * d + h) for h in range(24)]
        rows = hourly_rows(
            fleet, cluster_id=cluster.pk, tenant_ids=tenant_ids, hours=hours, db_hour=db_datetime
        )
        with transaction.atomic():
            rows_insert(GpuUsageHourly, HOURLY_COLUMNS, rows, timezone.now())
        total += len(rows)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # as autovacuum would, soon after such a load
            cursor.execute("VACUUM ANALYZE telemetry_gpuusagehourly")
    return total


def ingest_hour(fleet: Fleet, cluster: Any, hour: datetime) -> int:
    """One raw hour through samples_ingest, five minutes of scrapes per call."""
    from telemetry.services import samples_ingest

    return sum(
        samples_ingest(cluster=cluster, samples=chunk).samples
        for chunk in hour_samples(fleet, hour)
    )


def roll_days(cluster: Any, first: date, last: date) -> int:
    """The daily roll-ups of the loaded hours, by the app's own day roll-up (as telemetry_rollup
    runs it after each hour), for the days first..last; 0 when the app has none."""
    from django.apps import apps
    from django.db import connection

    from telemetry import rollup

    roll_day = getattr(rollup, "_roll_day", None)
    if roll_day is None:
        return 0
    for n in range((last - first).days + 1):
        roll_day(cluster, first + timedelta(days=n))
    model = apps.get_model("telemetry", "GpuUsageDaily")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # as autovacuum would, soon after such a load
            cursor.execute(f"VACUUM ANALYZE {model._meta.db_table}")
    return model.objects.count()
