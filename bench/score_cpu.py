"""CPU seconds of a first score and of a re-score with nothing changed, with a digest of every
result they store: for judging a change to the score on a shared machine. CPU seconds
(`time.process_time`) move far less with the load than wall time, and SQLite's work runs in
this process, so they count it. Run by hand (see bench/README.md):

    SECRET_KEY=bench .venv/bin/python bench/score_cpu.py --worst --nodes 200 --pods 4000 --runs 3

It builds and syncs the same world as bench/sync_scale.py (same options, same seed) in a
throwaway SQLite database once, then scores a fresh copy of that synced, never scored database
for each run. The digest covers every finding (fingerprint, fields, evidence as canonical JSON,
tenants), every tenant score (risk, score, grade, cap, contributions, counts) and every action
(key, fields, finding ids, tenants with their risk), ids included: two versions of the code that
print the same digests on the same world stored the same results.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.phases import SCORE_PHASES, Phases  # noqa: E402
from bench.sync_scale import TINY, apply_tenants, django_setup, world_arguments  # noqa: E402
from bench.world import Size, World, write_snapshot, write_tenants  # noqa: E402


def synced_world(size: Size, workdir: Path) -> None:
    """Migrate, apply the world's tenants and sync its snapshot once (not scored)."""
    from gpuposture.base.rescore import rescore_suppressed
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create

    world = World(size)
    snapshot, tenants = workdir / "snapshot.json", workdir / "tenants.yaml"
    write_snapshot(world, snapshot)
    write_tenants(world, tenants)
    apply_tenants(tenants)
    with rescore_suppressed():  # the sync's own re-score would be a first score untimed
        cluster_sync_from_snapshot(cluster=cluster_get_or_create(name="bench"), paths=[snapshot])


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _sha(value: Any) -> str:
    return hashlib.sha256(canonical(value).encode()).hexdigest()[:16]


def results_digest() -> dict[str, Any]:
    """A short sha256 of each kind of stored result, ids included (see the module docstring)."""
    from posture.models import Action, ActionTenant, Finding, FindingTenant, TenantScore

    links: dict[int, list[str]] = {}
    for finding_id, slug in FindingTenant.objects.values_list("finding_id", "tenant__slug"):
        links.setdefault(finding_id, []).append(slug)
    findings = list(
        Finding.objects.order_by("fingerprint").values(
            "pk", "fingerprint", "check_id", "cluster__name", "subject_kind", "subject_namespace",
            "subject_name", "key", "severity", "title", "status", "exposure", "evidence",
            "evidence_digest", "accepted_until",
        )
    )  # fmt: skip
    for row in findings:
        row["evidence"] = canonical(row["evidence"])
        row["tenants"] = sorted(links.get(row["pk"], []))
    scores = list(
        TenantScore.objects.order_by("run_id", "tenant__slug").values(
            "run_id", "tenant__slug", "risk", "score", "grade", "cap", "contributions",
            "open_by_severity",
        )
    )  # fmt: skip
    shares: dict[int, list[tuple[str, float]]] = {}
    for action_id, slug, risk in ActionTenant.objects.values_list(
        "action_id", "tenant__slug", "risk"
    ):
        shares.setdefault(action_id, []).append((slug, risk))
    actions = list(
        Action.objects.order_by("key").values(
            "pk", "key", "cluster__name", "title", "severity", "check_ids", "finding_ids",
            "finding_count", "risk_removed", "share_of_risk", "share_of_critical",
        )
    )  # fmt: skip
    for row in actions:
        row["tenants"] = sorted(shares.get(row.pop("pk"), []))
    parts = {"findings": findings, "scores": scores, "actions": actions}
    return {
        **{name: _sha(rows) for name, rows in parts.items()},
        "sizes": {name: len(rows) for name, rows in parts.items()},
    }


def timed_score(label: str, profile: Path | None) -> None:
    """posture_evaluate() once: its CPU seconds, each phase's, and the counts it stored."""
    from posture.services import posture_evaluate

    phases = Phases(clock=time.process_time)
    profiler = cProfile.Profile() if profile else None
    with phases.wrapping(SCORE_PHASES):
        start = time.process_time()
        if profiler:
            profiler.enable()
        run = posture_evaluate()
        if profiler:
            profiler.disable()
        total = time.process_time() - start
    listed = "  ".join(f"{name} {s:.2f}" for name, s in phases.seconds.items())
    print(f"{label}: {total:.2f} CPU s; {listed}")
    print(f"  counts {run.counts}")
    if profiler and profile:
        profiler.dump_stats(profile)
        pstats.Stats(str(profile)).sort_stats("tottime").print_stats(25)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    world_arguments(parser)
    parser.add_argument("--worst", action="store_true", help="as bench/sync_scale.py --worst")
    parser.add_argument("--tiny", action="store_true", help="sync_scale.py's tiny world (CI)")
    parser.add_argument("--runs", type=int, default=1, help="first scores, each on a fresh copy")
    parser.add_argument("--profile", type=Path, help="cProfile the last first score to this file")
    args = parser.parse_args()
    if args.tiny:
        args.nodes, args.pods, args.namespaces, args.tenants = TINY
    return args


def main() -> None:
    args = parse_args()
    size = Size(args.nodes, args.pods, args.namespaces, args.tenants, args.seed, args.worst)
    workdir = Path(tempfile.mkdtemp(prefix="gpuposture-score-cpu-"))
    try:
        measure(args, size, workdir)
    finally:
        from django.db import connections

        connections.close_all()
        shutil.rmtree(workdir, ignore_errors=True)


def measure(args: argparse.Namespace, size: Size, workdir: Path) -> None:
    db, synced = workdir / "run.sqlite3", workdir / "synced.sqlite3"
    django_setup(f"sqlite:///{db}")  # migrates
    from django.db import connection

    synced_world(size, workdir)
    for number in range(1, args.runs + 1):
        connection.close()  # the file is copied whole, with no connection open on it
        if number == 1:
            shutil.copyfile(db, synced)
        else:
            shutil.copyfile(synced, db)
        timed_score(f"first score {number}", args.profile if number == args.runs else None)
    print(f"  digest {results_digest()}")
    timed_score("re-score, nothing changed", None)
    print(f"  digest {results_digest()}")


if __name__ == "__main__":
    main()
