"""Scale bench: the utilisation page over 30 days of a 2,000-GPU fleet's roll-ups (hourly and
daily), and the roll-up of one hour of raw samples, against a throwaway database. Run by hand
(see bench/README.md):

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
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.sync_scale import Step, database_url, django_setup, max_rss_mb, measure  # noqa: E402
from bench.telemetry_world import (  # noqa: E402
    SCRAPES_PER_HOUR,
    Fleet,
    ingest_hour,
    load_hourly,
    roll_days,
    setup_world,
)

TARGET_PAGE_S, MAX_QUERIES, RUNS = 1.0, 15, 3
# Wrapped from outside, as bench/phases.py does for the sync: the view's parts, the roll-up's.
PAGE_PHASES = (
    ("telemetry.views", "tenant_days", "tenant_days", 1),
    ("telemetry.views", "tenant_hours_area", "chart (plotly)", 1),
    ("telemetry.views", "top_gpus", "top_gpus", 1),
    ("telemetry.views", "idle_allocated", "idle_allocated", 1),
    ("telemetry.views", "render", "template (and its small queries)", 1),
)
ROLLUP_PHASES = (
    ("telemetry.rollup", "_hours_to_roll", "find hours to roll", 1),
    ("telemetry.rollup", "_roll_hour", "roll the hour (read, weigh, write)", 1),
    ("telemetry.rollup", "weighted", "weigh samples (pure)", 2),
    ("telemetry.rollup", "_roll_day", "re-aggregate the day (daily roll-up)", 1),
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
        "--tiny", action="store_true", help="16 GPUs, 4 tenants: seconds (CI's smoke run)"
    )
    args = parser.parse_args()
    if args.tiny:
        args.gpus, args.tenants = 16, 4
    return args


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

    def lines(self, indent: str = "      ") -> list[str]:
        """One line per query: its time, and its SQL with the column list elided."""
        out = []
        for seconds, sql in self.queries:
            sql = re.sub(
                r"^SELECT (DISTINCT )?.*? FROM ", r"SELECT \1… FROM ", " ".join(sql.split())
            )
            out.append(
                f"{indent}{seconds * 1000:8.1f} ms  {sql[:109]}{'…' if len(sql) > 109 else ''}"
            )
        return out


Run = tuple[Step, QueryLog]


def timed(func: Callable[[], Any], phases: tuple = ()) -> Run:
    from django.db import connection

    log = QueryLog()
    with connection.execute_wrapper(log):
        step = measure(func, phases)
    return step, log


@dataclass
class Results:
    pages: dict[int, list[Run]]  # by ?days=
    api: list[Run]
    selectors: dict[str, Run]


# --- the run -----------------------------------------------------------------------------------


def run(args: argparse.Namespace, url: str) -> None:
    os.environ["ALLOWED_HOSTS"] = "127.0.0.1"
    # The bench serves no static files; whitenoise's warning about their directory is noise.
    warnings.filterwarnings("ignore", message="No directory at")
    start = time.perf_counter()
    django_setup(url)
    setup = {"migrate": time.perf_counter() - start}

    from django.test import Client

    from telemetry.models import GpuReading
    from telemetry.rollup import telemetry_rollup

    fleet = Fleet(args.gpus, args.tenants, args.mig_share, args.seed)
    now_hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    raw_hour = now_hour - timedelta(hours=1)  # the hour the next roll-up will find
    user, sizes = load(fleet, args.days, raw_hour, setup)
    days = args.days if args.days in (7, 30, 90) else 30  # the periods the page offers
    rollup = timed(lambda: telemetry_rollup(now=now_hour), ROLLUP_PHASES)
    # Signed in after the roll-up (a minute or more at full size): the session notes its last
    # use at most once a minute, and that write belongs to no page.
    client = signed_in(Client(HTTP_HOST="127.0.0.1"), user)
    results = page_and_selectors(client, user, days)

    print_header(args, fleet, setup)
    print(
        f"data        {sizes['hourly']:,} hourly rows ({args.days} days), {sizes['daily']:,} "
        f"daily rows; {sizes['raw']:,} raw samples of {raw_hour:%Y-%m-%d %H}h "
        f"({SCRAPES_PER_HOUR}/device) and {sizes['old']:,} dated 8 days earlier\n"
    )
    print_table(results, rollup)
    print_breakdown(results, days)
    print_rollup(*rollup, sizes["raw"], GpuReading.objects.count())
    print_targets(args, results, days)


def load(fleet: Fleet, days: int, raw_hour: datetime, setup: dict[str, float]) -> tuple:
    """The world, hourly rows for `days` days before raw_hour, their daily roll-ups, and raw
    samples for raw_hour and for the same hour 8 days earlier (past the 7-day retention)."""

    def step(label: str, func: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        result = func()
        setup[label] = time.perf_counter() - start
        return result

    cluster, user = step("tenants, nodes", lambda: setup_world(fleet))
    first_hour = raw_hour - timedelta(days=days)
    sizes = {
        "hourly": step("hourly rows", lambda: load_hourly(fleet, cluster, first_hour, days)),
        "daily": step(
            "daily rows (the app's _roll_day)",
            lambda: roll_days(cluster, first_hour.date(), raw_hour.date()),
        ),
        "raw": step("ingest the raw hour", lambda: ingest_hour(fleet, cluster, raw_hour)),
        "old": step(
            "ingest it 8 days earlier",
            lambda: ingest_hour(fleet, cluster, raw_hour - timedelta(days=8)),
        ),
    }
    return user, sizes


def page_and_selectors(client: Any, user: Any, days: int) -> Results:
    from gpuposture.base.roles import user_roles
    from telemetry.selectors import Period, idle_allocated, tenant_days, top_gpus

    pages = {d: page_runs(client, f"/utilisation/?days={d}") for d in sorted({7, days})}
    api = page_runs(client, f"/api/v1/utilisation/?days={days}")
    user_roles(user)  # cached on the user, as within a request
    period = Period(days=days)
    selectors = {
        name: timed(lambda f=f: f(user, period))
        for name, f in (
            ("tenant_days", tenant_days),
            ("top_gpus", top_gpus),
            ("idle_allocated", idle_allocated),
        )
    }
    return Results(pages, api, selectors)


def signed_in(client: Any, user: Any) -> Any:
    """`client` with the session a security lead has after signing in with a password and a
    TOTP code (bench/bench_auth.py: the authenticator enrolled, allauth's record of both
    factors). A bare force_login has no second factor, and the per-role MFA rule answers every
    page of such a session with a redirect to the two-factor setup."""
    from django.conf import settings

    from bench.bench_auth import session_cookie

    name, key = session_cookie(user).split("=", 1)
    assert name == settings.SESSION_COOKIE_NAME
    client.cookies[name] = key
    return client


def page_runs(client: Any, path: str, runs: int = RUNS) -> list[Run]:
    out = []
    for _ in range(runs):
        step, log = timed(lambda: client.get(path, secure=True), PAGE_PHASES)
        expect_200(path, step.result)
        out.append((step, log))
    return out


def expect_200(path: str, response: Any) -> None:
    """Stop the bench when a measured request did not answer 200: a redirect (to the sign-in
    or the two-factor page) or an error would be timed as if it were the page."""
    if response.status_code != 200:
        where = f" to {response['Location']}" if response.has_header("Location") else ""
        sys.exit(
            f"telemetry bench: GET https://127.0.0.1{path} answered {response.status_code}"
            f"{where}, not 200; no figures are printed for a page that was not served"
        )


def best(runs: list[Run]) -> Run:
    return min(runs, key=lambda r: r[0].seconds)


# --- what it prints ----------------------------------------------------------------------------


def print_header(args: argparse.Namespace, fleet: Fleet, setup: dict[str, float]) -> None:
    from django.db import connection

    engine = connection.vendor
    version = connection.Database.sqlite_version if engine == "sqlite" else ""
    if engine == "postgresql":
        version = str(connection.cursor().connection.info.server_version)
    print("== gpuposture telemetry scale bench")
    print(f"database    {engine} {version} ({args.db}); os.cpu_count()={os.cpu_count()}")
    print(
        f"fleet       {fleet.gpus} GPUs on {fleet.nodes} nodes ({args.mig_share:.0%} of nodes "
        f"MIG, 7 x 1g.10gb), {fleet.devices_per_hour()} devices an hour, {args.tenants} "
        f"tenants, seed {args.seed}"
    )
    print("setup       " + ", ".join(f"{k} {v:.1f} s" for k, v in setup.items()) + " (not counted)")


def _row(label: str, step: Step, log: QueryLog) -> str:
    return f"{label:46} {step.seconds:8.3f} {len(log.queries):8d} {step.peak_mb:8.0f}"


def print_table(results: Results, rollup: Run) -> None:
    lines = [f"{'':46} {'seconds':>8} {'queries':>8} {'peak MB':>8}"]
    for days, runs in results.pages.items():
        label = f"page /utilisation/?days={days}"
        lines += [_row(f"{label}  run {i}", *r) for i, r in enumerate(runs, 1)]
        lines.append(_row(f"{label}  best", *best(runs)))
    days = max(results.pages)
    label = f"api /api/v1/utilisation/?days={days}"
    lines += [_row(f"{label}  run {i}", *r) for i, r in enumerate(results.api, 1)]
    lines += [
        _row(f"selector {name}({days} days) alone", *r) for name, r in results.selectors.items()
    ]
    lines.append(_row("telemetry_rollup (one raw hour + retention)", *rollup))
    lines.append(f"{'peak RSS of the process (ru_maxrss)':46} {max_rss_mb():8.0f} MB")
    print("\n".join(lines) + "\n")


def print_breakdown(results: Results, days: int) -> None:
    step, log = best(results.pages[days])
    print(f"where the page's time goes (best ?days={days} run):")
    for _module, _attribute, label, _depth in PAGE_PHASES:
        print(f"      {step.phases.get(label, 0.0) * 1000:8.1f} ms  {label}")
    rest = step.seconds - sum(step.phases.values())
    print(f"      {rest * 1000:8.1f} ms  rest (middleware: session, user, roles)")
    print("    its queries, execute time each (SQLite finishes a grouped query as rows are read):")
    print("\n".join(log.lines()) + "\n")


def print_rollup(step: Step, log: QueryLog, raw: int, left: int) -> None:
    result = step.result
    deletes = [s for s, sql in log.queries if re.match(r'DELETE FROM "telemetry_gpureading"', sql)]
    print(
        f"roll-up: {result.hours} hour rolled, {raw:,} samples -> {result.rows:,} hourly rows; "
        f"{result.deleted:,} raw samples past retention deleted, {left:,} left"
    )
    for _module, _attribute, label, depth in ROLLUP_PHASES:
        if label in step.phases:
            print(f"  {'  ' * depth}{label:40} {step.phases[label]:8.2f} s")
    print(f"    {'retention delete (its DELETE query)':40} {sum(deletes):8.2f} s\n")


def print_targets(args: argparse.Namespace, results: Results, days: int) -> None:
    seconds = best(results.pages[days])[0].seconds
    counts = sorted({len(log.queries) for runs in results.pages.values() for _s, log in runs})
    for ok, label, value in (
        (
            seconds < TARGET_PAGE_S,
            f"page for {args.days} days x {args.gpus} GPUs < {TARGET_PAGE_S:g} s",
            f"{seconds:.2f} s",
        ),
        (
            len(counts) == 1 and counts[0] < MAX_QUERIES,
            f"queries bounded (the same for "
            f"?days={' and '.join(map(str, results.pages))}, < {MAX_QUERIES})",
            f"{counts}",
        ),
    ):
        print(f"{'PASS' if ok else 'FAIL'}  {label}: {value}")


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
