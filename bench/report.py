"""The tables bench/sync_scale.py prints."""

from __future__ import annotations

import argparse
import os
import platform
from dataclasses import dataclass
from typing import Any

from bench.phases import SCORE_PHASES, SYNC_PHASES
from bench.world import OPERATOR_SETS, Size, World

TARGET_RATIO, TARGET_RESYNC, TARGET_MEMORY_MB = 5.0, 0.20, 1536


@dataclass
class Report:
    args: argparse.Namespace
    size: Size
    world: World
    objects: int
    file_mb: float
    setup: dict[str, float]
    load: Any  # Step: json.load with the garbage collector paused (the floor)
    load_gc_on: Any  # Step: json.load with it running (the yardstick before)
    first: tuple[Any, Any]  # (sync Step, score Step)
    again: tuple[Any, Any]
    changed: int
    max_rss_mb: float
    live: tuple[Any, Any] | None = None  # (full list Step, watch re-sync Step)

    def print(self) -> None:
        for block in (self._header(), self._times(), self._runs(), self._phases(), self._targets()):
            print("\n".join(block))
            print()

    def _header(self) -> list[str]:
        from django.db import connection

        s, w = self.size, self.world
        engine = connection.vendor
        version = connection.Database.sqlite_version if engine == "sqlite" else ""
        if engine == "postgresql":
            version = str(connection.cursor().connection.info.server_version)
        setup = ", ".join(f"{k} {v:.1f} s" for k, v in self.setup.items())
        return [
            "== gpuposture sync scale bench",
            f"database    {engine} {version} ({self.args.db})",
            f"machine     os.cpu_count()={os.cpu_count()}  python {platform.python_version()}",
            f"sizes       {'worst case: ' if s.worst else ''}{s.nodes} GPU nodes x 8 GPUs, "
            f"{s.pods} pods ({w.operator_pods} GPU "
            f"Operator: {len(OPERATOR_SETS)}/node, {w.tenant_pods} tenant), "
            f"{s.namespaces} namespaces, {s.tenants} tenants, seed {s.seed}",
            f"snapshot    {self.objects} objects, {self.file_mb:.1f} MB; re-sync changes "
            f"{self.changed} pods ({self.changed / max(1, s.pods):.1%})",
            f"setup       {setup} (not counted)",
        ]

    def _times(self) -> list[str]:
        (s1, c1), (s2, c2) = self.first, self.again
        load, load_gc = self.load.seconds, self.load_gc_on.seconds
        rows = [
            ("json.load, GC paused (the floor)", f"{load:8.2f} s", "", f"{self.load.peak_mb:7.0f}"),
            (
                "json.load, GC on (before)",
                f"{load_gc:8.2f} s",
                "",
                f"{self.load_gc_on.peak_mb:7.0f}",
            ),
            (
                "sync (cluster_sync_from_snapshot)",
                f"{s1.seconds:8.2f} s",
                f"{s2.seconds:8.2f} s",
                f"{max(s1.peak_mb, s2.peak_mb):7.0f}",
            ),
            (
                "score (posture_evaluate)",
                f"{c1.seconds:8.2f} s",
                f"{c2.seconds:8.2f} s",
                f"{max(c1.peak_mb, c2.peak_mb):7.0f}",
            ),
            (
                "sync + score",
                f"{s1.seconds + c1.seconds:8.2f} s",
                f"{s2.seconds + c2.seconds:8.2f} s",
                "",
            ),
            (
                "ratio to json.load, GC paused",
                f"{(s1.seconds + c1.seconds) / load:8.2f}",
                f"{(s2.seconds + c2.seconds) / load:8.2f}",
                "",
            ),
            (
                "ratio to json.load, GC on (before)",
                f"{(s1.seconds + c1.seconds) / load_gc:8.2f}",
                f"{(s2.seconds + c2.seconds) / load_gc:8.2f}",
                "",
            ),
            ("re-sync as % of first: sync", "", f"{s2.seconds / s1.seconds:8.1%}", ""),
            (
                "re-sync as % of first: sync + score",
                "",
                f"{(s2.seconds + c2.seconds) / (s1.seconds + c1.seconds):8.1%}",
                "",
            ),
        ]
        lines = [f"{'':36} {'first':>10} {'re-sync':>10} {'peak MB':>8}"]
        lines += [f"{a:36} {b:>10} {c:>10} {d:>8}" for a, b, c, d in rows]
        if self.live:
            full, watch = self.live
            rows = [
                (
                    "live sync: full list, then watch",
                    f"{full.seconds:8.2f} s",
                    f"{watch.seconds:8.2f} s",
                    f"{max(full.peak_mb, watch.peak_mb):7.0f}",
                ),
                (
                    "watch re-sync as % of: live full list",
                    "",
                    f"{watch.seconds / full.seconds:8.1%}",
                    "",
                ),
                ("watch re-sync as % of: first sync", "", f"{watch.seconds / s1.seconds:8.1%}", ""),
            ]
            lines += [f"{a:36} {b:>10} {c:>10} {d:>8}" for a, b, c, d in rows]
        lines.append(f"{'peak RSS of the process (ru_maxrss)':36} {self.max_rss_mb:8.0f} MB")
        return lines

    def _runs(self) -> list[str]:
        lines = ["what the runs did"]
        for name, (sync, score) in (("first", self.first), ("re-sync", self.again)):
            lines.append(f"  {name:8} sync {_changes(sync.result)}")
            lines.append(f"  {'':8} score {score.result.counts}")
        if self.live:
            for name, step in zip(("live", "watch"), self.live, strict=True):
                lines.append(f"  {name:8} sync ({step.result.mode}) {_changes(step.result)}")
        return lines

    def _phases(self) -> list[str]:
        (s1, c1), (s2, c2) = self.first, self.again
        lines = [f"{'phase (inclusive seconds)':40} {'first':>8} {'re-sync':>8}"]
        lines += self._phase_rows("sync", SYNC_PHASES, s1, s2)
        lines += self._phase_rows("score", SCORE_PHASES, c1, c2)
        if self.live:
            lines += ["", f"{'live sync (inclusive seconds)':40} {'full':>8} {'watch':>8}"]
            lines += self._phase_rows("sync", SYNC_PHASES, *self.live)
        return lines

    def _phase_rows(self, title: str, phases: tuple, one: Any, two: Any) -> list[str]:
        rows = [f"{title:40} {one.seconds:8.2f} {two.seconds:8.2f}"]
        for _module, _attribute, label, depth in phases:
            if label not in one.phases and label not in two.phases:
                continue
            rows.append(_row("  " * depth + label, one.phases, two.phases, label))
            if label == "checks":
                check_ids = sorted(k for k in one.phases if "-" in k and k[0].isupper())
                rows += [_row("      " + cid, one.phases, two.phases, cid) for cid in check_ids]
        top = sum(one.phases.get(label, 0) for _m, _a, label, d in phases if d == 1)
        top2 = sum(two.phases.get(label, 0) for _m, _a, label, d in phases if d == 1)
        rows.append(
            f"{'  rest (run rows, lease, other queries)':40} {one.seconds - top:8.2f} "
            f"{two.seconds - top2:8.2f}"
        )
        return rows

    def _targets(self) -> list[str]:
        (s1, c1), (s2, _c2) = self.first, self.again
        ratio = (s1.seconds + c1.seconds) / self.load.seconds
        ratio_gc_on = (s1.seconds + c1.seconds) / self.load_gc_on.seconds
        # A live cluster re-syncs by watch; a snapshot file can only be read again whole.
        resync, how = (
            (self.live[1].seconds / s1.seconds, "watch re-sync")
            if self.live
            else (s2.seconds / s1.seconds, "re-sync")
        )
        checks = (
            (
                f"(sync + score) / json.load, GC paused <= {TARGET_RATIO:g}",
                ratio <= TARGET_RATIO,
                f"{ratio:.2f} (against json.load, GC on: {ratio_gc_on:.2f})",
            ),
            (
                f"{how} <= {TARGET_RESYNC:.0%} of the first sync",
                resync <= TARGET_RESYNC,
                f"{resync:.1%}",
            ),
            (
                "peak memory < 1.5 GB",
                self.max_rss_mb < TARGET_MEMORY_MB,
                f"{self.max_rss_mb:.0f} MB",
            ),
        )
        return ["targets"] + [
            f"  {'PASS' if ok else 'FAIL'}  {what:45} {value}" for what, ok, value in checks
        ]


def _row(name: str, one: dict[str, float], two: dict[str, float], label: str) -> str:
    return f"{name:40} {one.get(label, 0):8.2f} {two.get(label, 0):8.2f}"


def _changes(run: Any) -> str:
    changes = run.changes
    short = {k: changes[k] for k in ("nodes", "pods", "workload") if k in changes}
    short = {k: "/".join(str(n) for n in v.values()) for k, v in short.items()}
    return f"created/updated/deleted {short}, drift events {changes.get('drift_events')}"
