"""Scale bench: the findings export (issue 16, item 4) for every role and format, and the
health check while three exports run at once on gunicorn, against a throwaway database.
Run by hand (see bench/README.md); `--tiny` runs in seconds, as CI's smoke run does:

    SECRET_KEY=bench .venv/bin/python bench/export_scale.py [--db sqlite|postgres] [--tiny]

Prints, per role and format, the rows, seconds, bytes and peak memory of the export in this
process; then, on a live gunicorn with the Dockerfile's settings (3 workers, gunicorn.conf.py),
three concurrent exports of a tenant viewer, /healthz's latency meanwhile and each worker's
peak memory; then the same with sync workers (the settings before). Exits 1 if any measured
request did not answer 200.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.sync_scale import database_url, django_setup, measure  # noqa: E402

FORMATS = ("json", "csv", "sarif")
TARGET_VIEWER_S, TARGET_HEALTHZ_S = 5.0, 1.0
EXPORT = "/api/v1/findings/export/?format={}"


def parse_args() -> argparse.Namespace:
    url = os.environ.get("DATABASE_URL", "")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tenants", type=int, default=200)
    parser.add_argument("--findings", type=int, default=50_000)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers (Dockerfile: 3)")
    parser.add_argument("--tiny", action="store_true", help="6 tenants, 300 findings: seconds")
    default_db = "postgres" if url.startswith("postgres") else "sqlite"
    parser.add_argument("--db", choices=("sqlite", "postgres"), default=default_db)
    parser.add_argument("--pg-database", default="gpuposture_export_bench")
    parser.add_argument("--keep", action="store_true", help="keep the database and print where")
    args = parser.parse_args()
    if args.tiny:
        args.tenants, args.findings, args.nodes = 6, 300, 10
    return args


@dataclass
class Role:
    label: str
    user: Any
    token: str = ""
    rows: int = 0


@dataclass
class Export:
    role: str
    kind: str
    status: int
    seconds: float
    size: int
    peak_mb: float = 0.0
    growth_mb: float = 0.0


@dataclass
class Live:
    label: str
    exports: list[Export] = field(default_factory=list)
    healthz: list[tuple[int, float]] = field(default_factory=list)  # (status, seconds)
    idle_healthz_s: float = 0.0
    worker_peak_mb: list[float] = field(default_factory=list)
    timeouts: int = 0  # "WORKER TIMEOUT" lines in gunicorn's log


def build_world(args: argparse.Namespace) -> list[Role]:
    """bench/load_world.py's world (tenants, a cluster, pods, findings shaped as the checks
    write them, scores), and the roles: a security lead and two tenant viewers."""
    from bench.bench_auth import api_token, user_ensure
    from bench.load_world import build
    from posture.models import Finding
    from tenants.models import Tenant

    build(tenants=args.tenants, nodes=args.nodes, findings=args.findings, seed=args.seed)
    slugs = list(Tenant.objects.order_by("slug").values_list("slug", flat=True))
    roles = [
        Role("security lead", user_ensure("bench-lead", "security_lead")),
        Role(
            f"viewer of {len(slugs) // 2} tenants",
            user_ensure("bench-viewer-half", "tenant_viewer", slugs[: len(slugs) // 2]),
        ),
        Role("viewer of 1 tenant", user_ensure("bench-viewer-one", "tenant_viewer", slugs[:1])),
    ]
    for role in roles:
        role.token = api_token(role.user, scope="read")
        role.rows = Finding.objects.visible_to(role.user).count()
    return roles


def rss_now_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def in_process(roles: list[Role]) -> list[Export]:
    """Each role's export in each format through Django's test client (the whole response
    read), with the process's peak memory during it."""
    from django.test import Client

    client = Client(HTTP_HOST="127.0.0.1")
    results = []
    for role in roles:
        for kind in FORMATS:

            def call(role: Role = role, kind: str = kind) -> tuple[int, int]:
                answer = client.get(EXPORT.format(kind), secure=True, HTTP_AUTHORIZATION=role.token)
                if getattr(answer, "streaming", False):
                    return answer.status_code, sum(len(b) for b in answer.streaming_content)
                return answer.status_code, len(answer.content)

            before = rss_now_mb()
            step = measure(call)
            status, size = step.result
            results.append(
                Export(
                    role.label,
                    kind,
                    status,
                    step.seconds,
                    size,
                    step.peak_mb,
                    step.peak_mb - before,
                )
            )
    return results


# --- the live server ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(url: str, port: int, workers: int, extra: list[str], log: Path) -> Any:
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "0",
        "SECURE_HSTS_SECONDS": "0",
        "LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "gpuposture.settings",
    }
    env.setdefault("SECRET_KEY", "bench")
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "gpuposture.wsgi",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        *extra,
    ]
    # cwd=ROOT: gunicorn reads ./gunicorn.conf.py there, as the image does in /app.
    output = log.open("w")
    server = subprocess.Popen(  # noqa: S603 - our own command line
        command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT
    )
    for _ in range(120):
        try:
            if get(port, "/healthz")[0] == 200:
                return server
        except OSError:
            time.sleep(0.25)
    server.terminate()
    raise SystemExit(f"gunicorn did not start; see {log}")


def get(port: int, path: str, token: str = "", timeout: float = 120) -> tuple[int, int]:
    """(status, bytes) of a GET, the body read in 64 KB blocks and dropped."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if token:
        request.add_header("Authorization", token)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310 - ours
            size = 0
            while block := answer.read(65536):
                size += len(block)
            return answer.status, size
    except urllib.error.HTTPError as error:
        return error.code, 0


def worker_peaks_mb(server: Any) -> list[float]:
    """Each worker's peak resident memory (VmHWM), from the master's children."""
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
    peaks = []
    for pid in children:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peaks.append(int(line.split()[1]) / 1024)
    return peaks


def concurrent_exports(port: int, role: Role, label: str, count: int = 3) -> Live:
    """`count` exports of `role` at once (JSON, the largest), /healthz asked every 100 ms
    until they are done."""
    live = Live(label)
    live.idle_healthz_s = statistics.median(_timed_healthz(port)[1] for _ in range(10))

    def export() -> None:
        start = time.perf_counter()
        status, size = get(port, EXPORT.format("json"), role.token)
        live.exports.append(Export(role.label, "json", status, time.perf_counter() - start, size))

    threads = [threading.Thread(target=export) for _ in range(count)]
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        live.healthz.append(_timed_healthz(port))
        time.sleep(0.1)
    for thread in threads:
        thread.join()
    return live


def _timed_healthz(port: int) -> tuple[int, float]:
    start = time.perf_counter()
    try:
        status = get(port, "/healthz", timeout=60)[0]
    except OSError:
        status = 0
    return status, time.perf_counter() - start


def live_runs(url: str, role: Role, args: argparse.Namespace, workdir: Path) -> list[Live]:
    """The Dockerfile's settings (gunicorn.conf.py: gthread), then sync workers (before)."""
    runs = []
    # gunicorn turns sync workers into gthread ones when threads > 1: the second says 1.
    settings = (
        ("gthread (gunicorn.conf.py)", []),
        ("sync (before)", ["--worker-class", "sync", "--threads", "1"]),
    )
    for label, extra in settings:
        port = free_port()
        log = workdir / f"gunicorn-{port}.log"
        server = start_gunicorn(url, port, args.workers, extra, log)
        try:
            live = concurrent_exports(port, role, label)
            live.worker_peak_mb = worker_peaks_mb(server)
        finally:
            server.terminate()
            server.wait(timeout=30)
        live.timeouts = log.read_text().count("WORKER TIMEOUT")
        runs.append(live)
    return runs


# --- the report --------------------------------------------------------------------------------


def print_in_process(roles: list[Role], results: list[Export]) -> None:
    rows = {role.label: role.rows for role in roles}
    print(
        f"{'role':24} {'rows':>7} {'format':6} {'status':>6} {'seconds':>8} {'MB sent':>8} "
        f"{'peak RSS MB':>12} {'growth MB':>10}"
    )
    for r in results:
        print(
            f"{r.role:24} {rows[r.role]:7,} {r.kind:6} {r.status:6} {r.seconds:8.2f} "
            f"{r.size / 1e6:8.1f} {r.peak_mb:12.0f} {r.growth_mb:10.0f}"
        )


def print_live(live: Live, workers: int) -> None:
    latencies = sorted(seconds for _status, seconds in live.healthz) or [0.0]
    statuses = sorted({status for status, _ in live.healthz})
    exports = ", ".join(
        f"{e.status} in {e.seconds:.2f} s ({e.size / 1e6:.1f} MB)" for e in live.exports
    )
    print(
        f"\n== gunicorn, {workers} {live.label} workers: {len(live.exports)} concurrent exports "
        f"({live.exports[0].role if live.exports else '-'}, json)"
    )
    print(f"   exports: {exports}")
    print(
        f"   /healthz idle: {live.idle_healthz_s * 1000:.1f} ms; during the exports: "
        f"{len(latencies)} asked, p50 {statistics.median(latencies) * 1000:.1f} ms, "
        f"max {latencies[-1] * 1000:.1f} ms, statuses {statuses}"
    )
    print(
        f"   workers' peak RSS MB: {', '.join(f'{m:.0f}' for m in live.worker_peak_mb)}; "
        f"workers killed for a timeout: {live.timeouts}"
    )


def verdicts(roles: list[Role], results: list[Export], runs: list[Live]) -> list[str]:
    """PASS/FAIL lines, and the requests that did not answer 200 or were cut short (a worker
    killed mid-stream closes the connection: the status said 200, the body is short)."""
    whole = {(r.role, r.kind): r.size for r in results}
    viewer = max((r for r in results if r.role != roles[0].label), key=lambda r: r.seconds)
    threaded = runs[0]
    worst = max((s for _status, s in threaded.healthz), default=0.0)
    print("\n== targets")
    print(
        f"   slowest viewer export {viewer.seconds:.2f} s < {TARGET_VIEWER_S} s: "
        f"{'PASS' if viewer.seconds < TARGET_VIEWER_S else 'FAIL'}"
    )
    print(
        f"   /healthz max {worst:.2f} s < {TARGET_HEALTHZ_S} s under 3 exports (gthread): "
        f"{'PASS' if worst < TARGET_HEALTHZ_S else 'FAIL'}"
    )
    failed = [f"in process {r.role} {r.kind}: {r.status}" for r in results if r.status != 200]
    for live in runs:
        failed += [
            f"{live.label} export: {e.status}, {e.size:,} of {whole[e.role, e.kind]:,} bytes"
            for e in live.exports
            if e.status != 200 or e.size != whole[e.role, e.kind]
        ]
        failed += [f"{live.label}: {n} worker(s) killed (timeout)" for n in [live.timeouts] if n]
        failed += [f"{live.label} /healthz: {s}" for s, _ in live.healthz if s != 200]
    print(f"   every measured request answered 200: {'PASS' if not failed else 'FAIL'}")
    return failed


def run(args: argparse.Namespace, url: str, workdir: Path) -> list[str]:
    os.environ.update(ALLOWED_HOSTS="127.0.0.1", LOG_LEVEL="WARNING")
    # The bench serves no static files; whitenoise's warning about their directory is noise.
    warnings.filterwarnings("ignore", message="No directory at")
    start = time.perf_counter()
    django_setup(url)
    roles = build_world(args)
    setup = time.perf_counter() - start
    from django.db import connection

    print(
        f"== {args.findings:,} findings, {args.tenants} tenants, {args.nodes} nodes; "
        f"{connection.vendor}; {os.cpu_count()} CPUs; world built in {setup:.1f} s"
    )
    results = in_process(roles)
    print("\n== each export in this process (token auth, whole body read)")
    print_in_process(roles, results)
    connection.close()  # gunicorn's workers open their own
    runs = live_runs(url, roles[1], args, workdir)
    for live in runs:
        print_live(live, args.workers)
    return verdicts(roles, results, runs)


def main() -> None:
    args = parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="gpuposture-export-bench-"))
    url, drop = database_url(args, workdir)
    try:
        failed = run(args, url, workdir)
    finally:
        if args.keep:
            print(f"kept: {url} and {workdir}")
        else:
            drop()
            shutil.rmtree(workdir, ignore_errors=True)
    if failed:
        print("not 200:\n  " + "\n  ".join(failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
