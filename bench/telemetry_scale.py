"""Scale bench: the utilisation page over 30 days of hourly roll-ups of a 2,000-GPU fleet, and
the hourly roll-up of one hour of raw samples, against a throwaway database. Run by hand (see
bench/README.md):

    SECRET_KEY=bench .venv/bin/python bench/telemetry_scale.py [--db sqlite|postgres]

Prints the page's and the API's time and query count, each selector alone, the roll-up of one
raw hour and the retention delete, peak memory, and PASS/FAIL for the page target.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.sync_scale import Step, database_url, django_setup, max_rss_mb, measure  # noqa: E402
from bench.telemetry_world import (  # noqa: E402
    HOURLY_COLUMNS,
    SCRAPES_PER_HOUR,
    Fleet,
    hour_samples,
    hourly_rows,
    tenant_slug,
)

TARGET_PAGE_S, MAX_QUERIES, RUNS = 1.0, 15, 3
ROLLUP_PHASES = (
    ("telemetry.services", "_hours_to_roll", "find hours to roll", 1),
    ("telemetry.services", "_roll_hour", "roll the hour (read, weigh, write)", 1),
    ("telemetry.services", "weighted", "weigh samples (pure)", 2),
)


def parse_args() -> argparse.Namespace:
    url = os.environ.get("DATABASE_URL", "")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=2000)
    parser.add_argument("--days", type=int, default=30, help="days of hourly roll-ups")
    parser.add_argument("--tenants", type=int, default=200)
    parser.add_argument("--mig-share", type=float, default=0.1, help="share of MIG nodes")
    parser.add_argument("--seed", type=int, default=7)
    default_db = "postgres" if url.startswith("postgres") else "sqlite"
    parser.add_argument("--db", choices=("sqlite", "postgres"), default=default_db)
    parser.add_argument("--pg-database", default="gpuposture_telemetry_bench")
    parser.add_argument("--keep", action="store_true", help="keep the database and print where")
    parser.add_argument(
        "--experiment", action="store_true", help="then time candidate fixes (bench DB only)"
    )
    return parser.parse_args()


class QueryLog:
    """Every query run while active, with its execute time (connection.execute_wrapper: no
    debug cursor, so no cost beyond a clock read)."""

    def __init__(self) -> None:
        self.queries: list[tuple[float, str]] = []

    def __call__(self, execute: Callable, sql: str, params: Any, many: bool, context: Any) -> Any:
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.queries.append((time.perf_counter() - start, sql))

    @contextmanager
    def active(self) -> Iterator[QueryLog]:
        from django.db import connection

        with connection.execute_wrapper(self):
            yield self

    def lines(self, indent: str = "      ") -> list[str]:
        return [f"{indent}{s * 1000:8.1f} ms  {short_sql(sql)}" for s, sql in self.queries]


def short_sql(sql: str, width: int = 110) -> str:
    sql = re.sub(r"\s+", " ", sql)
    sql = re.sub(r"^SELECT (DISTINCT )?.*? FROM ", r"SELECT \1… FROM ", sql, count=1)
    return sql if len(sql) <= width else sql[: width - 1] + "…"


def timed(func: Callable[[], Any], phases: tuple = ()) -> tuple[Step, QueryLog]:
    log = QueryLog()
    with log.active():
        step = measure(func, phases)
    return step, log


# --- setup (not counted) -----------------------------------------------------------------------


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
        Node(cluster=cluster, name=fleet.hostname(n), is_gpu_node=True, gpu_count=8,
             gpu_model=fleet.model(n), changed_at=now,
             sharing_strategy="mig" if fleet.is_mig(n)
             else "time_slicing" if fleet.is_time_sliced(n) else "none")
        for n in range(fleet.nodes)
    )  # fmt: skip
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


# --- the run -----------------------------------------------------------------------------------


def page_runs(client: Any, path: str) -> list[tuple[Step, QueryLog]]:
    runs = []
    for _ in range(RUNS):
        step, log = timed(lambda: client.get(path, secure=True))
        if step.result.status_code != 200:
            raise RuntimeError(f"GET {path}: {step.result.status_code}")
        runs.append((step, log))
    return runs


def best(runs: list[tuple[Step, QueryLog]]) -> tuple[Step, QueryLog]:
    return min(runs, key=lambda r: r[0].seconds)


def run(args: argparse.Namespace, url: str) -> None:
    os.environ["ALLOWED_HOSTS"] = "127.0.0.1"
    # The bench serves no static files; whitenoise's warning about their directory is noise.
    warnings.filterwarnings("ignore", message="No directory at")
    start = time.perf_counter()
    django_setup(url)
    setup = {"migrate": time.perf_counter() - start}

    from django.db import connection
    from django.test import Client

    from telemetry.models import GpuReading, GpuUsageHourly
    from telemetry.selectors import Period, idle_allocated, tenant_days, top_gpus
    from telemetry.services import telemetry_rollup

    fleet = Fleet(args.gpus, args.tenants, args.mig_share, args.seed)
    now_hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    raw_hour = now_hour - timedelta(hours=1)  # the hour the next roll-up will find
    first_hour = raw_hour - timedelta(days=args.days)
    start = time.perf_counter()
    cluster, user = setup_world(fleet)
    setup["tenants, nodes"] = time.perf_counter() - start
    start = time.perf_counter()
    hourly = load_hourly(fleet, cluster, first_hour, args.days)
    setup["hourly rows"] = time.perf_counter() - start
    start = time.perf_counter()
    raw = ingest_hour(fleet, cluster, raw_hour)
    setup["ingest raw hour (samples_ingest)"] = time.perf_counter() - start
    start = time.perf_counter()
    old = ingest_hour(fleet, cluster, raw_hour - timedelta(days=8))  # past the 7-day retention
    setup["ingest the same, 8 days old"] = time.perf_counter() - start

    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    pages = {days: page_runs(client, f"/utilisation/?days={days}") for days in (7, args_days(args))}
    api = page_runs(client, f"/api/v1/utilisation/?days={args_days(args)}")
    from gpuposture.base.roles import user_roles

    user_roles(user)  # cached on the user, as within a request
    period = Period(days=args_days(args))
    selectors = {
        "tenant_days": timed(lambda: tenant_days(user, period)),
        "top_gpus": timed(lambda: top_gpus(user, period)),
        "idle_allocated": timed(lambda: idle_allocated(user, period)),
    }
    window = GpuUsageHourly.objects.filter(hour__date__gte=period.since).count()
    rollup, rollup_log = timed(lambda: telemetry_rollup(now=now_hour), ROLLUP_PHASES)
    left = GpuReading.objects.count()

    engine = connection.vendor
    version = connection.Database.sqlite_version if engine == "sqlite" else ""
    if engine == "postgresql":
        version = str(connection.cursor().connection.info.server_version)
    print("== gpuposture telemetry scale bench")
    print(f"database    {engine} {version} ({args.db}); os.cpu_count()={os.cpu_count()}")
    print(f"fleet       {fleet.gpus} GPUs on {fleet.nodes} nodes ({args.mig_share:.0%} MIG "
          f"nodes, 7 x 1g.10gb), {fleet.devices_per_hour()} devices an hour, "
          f"{args.tenants} tenants, seed {args.seed}")  # fmt: skip
    print(f"data        {hourly:,} hourly rows ({args.days} days, {window:,} in the "
          f"{period.days}-day window); {raw:,} raw samples of {raw_hour:%Y-%m-%d %H}h "
          f"({SCRAPES_PER_HOUR}/device) and {old:,} dated 8 days earlier")  # fmt: skip
    print("setup       " + ", ".join(f"{k} {v:.1f} s" for k, v in setup.items()) + " (not counted)")
    print()
    lines = [f"{'':44} {'seconds':>8} {'queries':>8} {'peak MB':>8}"]
    for label, runs in ((f"page /utilisation/?days={d}", pages[d]) for d in pages):
        for i, (step, log) in enumerate(runs, 1):
            lines.append(_row(f"{label}  run {i}", step, log))
        lines.append(_row(f"{label}  best", *best(runs)))
    for i, (step, log) in enumerate(api, 1):
        lines.append(_row(f"api /api/v1/utilisation/?days={period.days}  run {i}", step, log))
    for name, (step, log) in selectors.items():
        lines.append(_row(f"selector {name}({period.days} days) alone", step, log))
    lines.append(_row("telemetry_rollup (one raw hour + retention)", rollup, rollup_log))
    print("\n".join(lines))
    print(f"{'peak RSS of the process (ru_maxrss)':44} {max_rss_mb():8.0f} MB")
    print()
    print(f"where the page's time goes (best ?days={period.days} run, execute time per query):")
    page_step, page_log = best(pages[period.days])
    print("\n".join(page_log.lines()))
    in_sql = sum(s for s, _ in page_log.queries)
    print(f"      {in_sql * 1000:8.1f} ms  in SQL; {(page_step.seconds - in_sql) * 1000:.1f} ms "
          f"in Python (view, selectors' merging, chart, template)")  # fmt: skip
    print()
    print_rollup(rollup, rollup_log, raw, left)
    print()
    p7, p30 = len(best(pages[7])[1].queries), len(page_log.queries)
    targets = (
        (f"page for {args.days} days x {fleet.gpus} GPUs < {TARGET_PAGE_S:g} s",
         page_step.seconds < TARGET_PAGE_S, f"{page_step.seconds:.2f} s"),
        (f"queries bounded (?days=7 == ?days={period.days}, < {MAX_QUERIES})",
         p7 == p30 < MAX_QUERIES, f"{p7} and {p30}"),
    )  # fmt: skip
    for label, ok, value in targets:
        print(f"{'PASS' if ok else 'FAIL'}  {label}: {value}")


def args_days(args: argparse.Namespace) -> int:
    return args.days if args.days in (7, 30, 90) else 30  # the periods the page offers


def _row(label: str, step: Step, log: QueryLog) -> str:
    return f"{label:44} {step.seconds:8.3f} {len(log.queries):8d} {step.peak_mb:8.0f}"


def print_rollup(step: Step, log: QueryLog, raw: int, left: int) -> None:
    result = step.result
    deletes = [s for s, sql in log.queries if re.match(r'DELETE FROM "telemetry_gpureading"', sql)]
    print(f"roll-up: {result.hours} hour rolled, {raw:,} samples -> {result.rows:,} hourly rows; "
          f"{result.deleted:,} raw samples past retention deleted, {left:,} left")  # fmt: skip
    for _module, _attribute, label, depth in ROLLUP_PHASES:
        if label in step.phases:
            print(f"  {'  ' * depth}{label:40} {step.phases[label]:8.2f} s")
    print(f"    {'retention delete (its DELETE query)':40} {sum(deletes):8.2f} s")


def main() -> None:
    args = parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="gpuposture-telemetry-bench-"))
    url, drop = database_url(args, workdir)
    try:
        run(args, url)
    finally:
        if not args.keep:
            from django.db import connections

            connections.close_all()
            drop()
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"kept: {workdir} and {url}")


if __name__ == "__main__":
    main()
