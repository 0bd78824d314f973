"""Scale bench: sync a large generated cluster snapshot and score it, then re-sync with 1% of
the pods changed, against a throwaway database. Run by hand (see bench/README.md):

    SECRET_KEY=bench .venv/bin/python bench/sync_scale.py [--db sqlite|postgres] [--nodes 2000]

Prints sizes, times, the ratio (sync + score) / json.load with the garbage collector paused (the
floor; the ratio with it running beside it), the re-sync as a share of the first sync, peak
memory, and where the time went phase by phase. `--tiny` runs in seconds (CI's smoke run).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.phases import SCORE_PHASES, SYNC_PHASES, Phases  # noqa: E402
from bench.world import Size, World, changed_pods, write_snapshot, write_tenants  # noqa: E402

DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/postgres"
# --tiny: nodes, pods, namespaces, tenants (two pools of 20 nodes, two tenants each).
TINY = (40, 600, 12, 4)


def world_arguments(parser: argparse.ArgumentParser) -> None:
    """The world's size and seed, as every bench that builds it takes them."""
    parser.add_argument("--nodes", type=int, default=Size.nodes)
    parser.add_argument("--pods", type=int, default=Size.pods, help="operator pods included")
    parser.add_argument("--namespaces", type=int, default=Size.namespaces)
    parser.add_argument("--tenants", type=int, default=Size.tenants)
    parser.add_argument("--seed", type=int, default=Size.seed)


def parse_args() -> argparse.Namespace:
    url = os.environ.get("DATABASE_URL", "")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    world_arguments(parser)
    parser.add_argument("--changed", type=float, default=0.01, help="share of pods changed")
    default_db = "postgres" if url.startswith("postgres") else "sqlite"
    parser.add_argument("--db", choices=("sqlite", "postgres"), default=default_db)
    parser.add_argument("--pg-database", default="gpuposture_bench", help="created and dropped")
    parser.add_argument("--keep", action="store_true", help="keep the database and the files")
    parser.add_argument(
        "--no-live", action="store_true", help="skip the live runs (fake API + watch re-sync)"
    )
    parser.add_argument(
        "--worst",
        action="store_true",
        help="the worst case: tenants of every class spread over every node (~20 a node)",
    )
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="40 nodes, 600 pods, 12 namespaces, 4 tenants: seconds (CI's smoke run)",
    )
    args = parser.parse_args()
    if args.tiny:
        args.nodes, args.pods, args.namespaces, args.tenants = TINY
    return args


# --- the throwaway database --------------------------------------------------------------------


def database_url(args: argparse.Namespace, workdir: Path) -> tuple[str, Callable[[], None]]:
    """The URL to run on, and how to drop the database afterwards."""
    if args.db == "sqlite":
        return f"sqlite:///{workdir / 'bench.sqlite3'}", lambda: None
    base = os.environ.get("DATABASE_URL", "")
    parts = urlsplit(base if base.startswith("postgres") else DEFAULT_PG)
    admin = urlunsplit(parts._replace(path="/postgres"))
    _pg_admin(admin, f'DROP DATABASE IF EXISTS "{args.pg_database}" WITH (FORCE)')
    _pg_admin(admin, f'CREATE DATABASE "{args.pg_database}"')

    def drop() -> None:
        _pg_admin(admin, f'DROP DATABASE IF EXISTS "{args.pg_database}" WITH (FORCE)')

    return urlunsplit(parts._replace(path=f"/{args.pg_database}")), drop


def _pg_admin(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql)  # names come from our own arguments, not from input


def django_setup(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ["DEBUG"] = "0"  # DEBUG would keep every query in memory
    os.environ.setdefault("SECRET_KEY", "bench")
    os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1")  # the pages measured after the score
    os.environ.setdefault("GPUPOSTURE_MFA_ENCRYPTION_KEY", "bench-only-not-a-secret-0123456789")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuposture.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


# --- memory ------------------------------------------------------------------------------------


# Resetting the kernel's high-water mark (to see each step's own peak) also resets ru_maxrss,
# so the process peak is kept here across resets.
_PROCESS_PEAK_MB = [0.0]


def rss_peak_mb() -> float:
    """Peak resident memory since the last reset_peak() (Linux), else of the whole process."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) / 1024
    except OSError:
        pass
    _PROCESS_PEAK_MB[0] = max(_PROCESS_PEAK_MB[0], peak)
    return peak


def reset_peak() -> None:
    rss_peak_mb()  # remember the peak so far before the kernel forgets it
    gc.collect()
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS


def max_rss_mb() -> float:
    """The process's peak resident memory (ru_maxrss, carried across resets)."""
    rss_peak_mb()
    return _PROCESS_PEAK_MB[0]


# --- the run -----------------------------------------------------------------------------------


@dataclass
class Step:
    seconds: float = 0.0
    peak_mb: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    result: Any = None


def measure(func: Callable[[], Any], phase_list: tuple = (), checks: bool = False) -> Step:
    reset_peak()
    phases = Phases()
    with phases.wrapping(phase_list):
        if checks:
            with phases.checks():
                start = time.perf_counter()
                result = func()
        else:
            start = time.perf_counter()
            result = func()
        seconds = time.perf_counter() - start
    return Step(seconds, rss_peak_mb(), dict(phases.seconds), result)


def json_load(path: Path, *, gc_paused: bool) -> Step:
    """`json.load` of the whole snapshot: the yardstick. With `gc_paused` the cyclic garbage
    collector is off during the load and back on after it, as any loader of a large acyclic
    document would do (the app's own parse does it too): the fastest honest way to do the
    unavoidable work, so the floor. Without, the figure the bench printed before."""

    def load() -> int:
        was_enabled = gc.isenabled()
        if gc_paused:
            gc.disable()
        try:
            with path.open(encoding="utf-8") as f:
                return len(json.load(f)["items"])
        finally:
            if was_enabled:
                gc.enable()

    return measure(load)  # the parsed document is dropped before the next step starts


def sync_and_score(cluster: Any, path: Path) -> tuple[Step, Step]:
    from gpuposture.base.rescore import rescore_suppressed
    from inventory.services import cluster_sync_from_snapshot
    from posture.services import posture_evaluate

    # A sync asks for a re-score when it commits (eager here: the whole score again inside the
    # sync's time). The sync is timed alone and the score on its own, as the worker runs them.
    with rescore_suppressed():
        sync = measure(
            lambda: cluster_sync_from_snapshot(cluster=cluster, paths=[path]), SYNC_PHASES
        )
    score = measure(posture_evaluate, SCORE_PHASES, checks=True)
    return sync, score


def live_syncs(workdir: Path, first: Path, changed: Path) -> tuple[Step, Step]:
    """The same two worlds through the live path: a full list with the kubernetes client from
    an API served on 127.0.0.1 (bench/fake_api.py, another process), then the re-sync by watch
    after the API moved to the changed world."""
    from django.conf import settings

    from gpuposture.base.rescore import rescore_suppressed
    from inventory.services import cluster_sync
    from inventory.sources.kube import KubeSettings, KubeSource
    from inventory.sync import cluster_get_or_create

    command = [
        sys.executable,
        str(ROOT / "bench" / "fake_api.py"),
        "--world",
        str(first),
        "--next",
        str(changed),
        "--kubeconfig",
        str(workdir),
    ]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)  # noqa: S603 - our script
    try:
        _expect(server, "ready")
        cluster = cluster_get_or_create(name="bench-live")
        tuning = KubeSettings(watch_seconds=settings.GPUPOSTURE_WATCH_SECONDS)

        def sync() -> Any:
            source = KubeSource(kubeconfig=str(workdir / "kubeconfig"), settings=tuning)
            with rescore_suppressed():  # timed alone, as in sync_and_score
                return cluster_sync(cluster=cluster, source=source)

        full = measure(sync, SYNC_PHASES)
        server.send_signal(signal.SIGUSR1)
        _expect(server, "switched")
        watch = measure(sync, SYNC_PHASES)
    finally:
        server.terminate()
        server.wait()
    return full, watch


def _expect(server: subprocess.Popen, word: str) -> None:
    line = server.stdout.readline().strip() if server.stdout else ""
    if line != word:
        raise RuntimeError(f"bench/fake_api.py said {line!r}, expected {word!r}")


def apply_tenants(path: Path) -> None:
    import yaml

    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document

    tenants_apply(specs=parse_tenants_document(yaml.safe_load(path.read_text(encoding="utf-8"))))


def main() -> None:
    args = parse_args()
    size = Size(args.nodes, args.pods, args.namespaces, args.tenants, args.seed, args.worst)
    workdir = Path(tempfile.mkdtemp(prefix="gpuposture-bench-"))
    url, drop = database_url(args, workdir)
    try:
        run(args, size, workdir, url)
    finally:
        if not args.keep:
            from django.db import connections

            connections.close_all()
            drop()
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"kept: {workdir} and {url}")


def run(args: argparse.Namespace, size: Size, workdir: Path, url: str) -> None:
    start = time.perf_counter()
    django_setup(url)
    migrate_s = time.perf_counter() - start
    world = World(size)
    snapshot, tenants = workdir / "snapshot.json", workdir / "tenants.yaml"
    start = time.perf_counter()
    objects = write_snapshot(world, snapshot)
    write_tenants(world, tenants)
    generate_s = time.perf_counter() - start
    start = time.perf_counter()
    apply_tenants(tenants)
    tenants_s = time.perf_counter() - start

    from inventory.sync import cluster_get_or_create

    cluster = cluster_get_or_create(name="bench")
    loaded = json_load(snapshot, gc_paused=True)
    loaded_gc_on = json_load(snapshot, gc_paused=False)
    first_sync, first_score = sync_and_score(cluster, snapshot)
    after = after_first_score(first_score)
    changed = changed_pods(size, args.changed)
    changed_snapshot = workdir / "snapshot-changed.json"
    write_snapshot(world, changed_snapshot, changed)
    re_sync, re_score = sync_and_score(cluster, changed_snapshot)
    live = live_syncs(workdir, snapshot, changed_snapshot) if not args.no_live else None

    from bench.report import Report

    Report(
        args=args,
        size=size,
        world=world,
        objects=objects,
        file_mb=snapshot.stat().st_size / 1e6,
        setup={"migrate": migrate_s, "generate snapshot": generate_s, "apply tenants": tenants_s},
        load=loaded,
        load_gc_on=loaded_gc_on,
        first=(first_sync, first_score),
        again=(re_sync, re_score),
        changed=len(changed),
        max_rss_mb=max_rss_mb(),
        live=live,
    ).print()
    print("\n".join(after.lines))
    if after.failed:
        sys.exit(1)  # a measured page did not answer 200


@dataclass
class After:
    lines: list[str]
    failed: bool


def after_first_score(first_score: Step) -> After:
    """A re-score with nothing changed, then the pages a lead opens after it (read cache cold,
    server warm)."""
    from bench import after_score
    from posture.services import posture_evaluate

    busiest = after_score.busiest_tenant()
    if busiest[0]:
        after_score.warm_up(busiest[0])  # a running server's process, before the re-score lands
    rescore = measure(posture_evaluate, SCORE_PHASES, checks=True)
    # The web process does not hold what this one built to sync and score (the worker's heap):
    # out of the collector's sight, else a full collection of it lands inside a page's time.
    gc.collect()
    gc.freeze()
    try:
        pages = after_score.page_times(busiest[0]) if busiest[0] else []
    finally:
        gc.unfreeze()
    shared = after_score.sharing("bench")
    lines = after_score.report_lines(first_score.seconds, rescore.seconds, pages, busiest, shared)
    return After(lines, after_score.failed(pages))


if __name__ == "__main__":
    main()
