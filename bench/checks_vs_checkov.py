"""Our pod checks (POD-001..004) against Checkov on the same seeded one-Pod manifests.

    SECRET_KEY=bench .venv/bin/python bench/checks_vs_checkov.py [--pods 1000] [--seed 11]

Our side reads the manifests as the app reads a snapshot (libyaml's safe loader), and for
comparison with yaml.CSafeLoader alone and with the pure-Python yaml.safe_load.
Checkov 3.3.30 runs from its own virtual environment (it needs packaging<24, which the project
cannot have): bench/.checkov-venv when it holds that version, else a throwaway one under a
temp dir (`--keep-venv` creates bench/.checkov-venv instead, for the next run). Prints the
verdicts per property against the ground truth and against each other, both times and the
ratio. See bench/CHECKOV.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.pods_gen import NAMESPACES, PROPERTIES, Manifest, write_manifests  # noqa: E402
from inventory.snapshot import ClusterSnapshot, Namespace, Pod  # noqa: E402
from inventory.sources.normalise import pod_from_template  # noqa: E402
from inventory.sources.snapshot_file import load_snapshot_objects  # noqa: E402
from posture.inputs import PostureInputs, TenantInfo, seed_trust_class  # noqa: E402
from posture.rules import CHECKS, FindingDraft  # noqa: E402
from posture.rules.common import path_within  # noqa: E402

CHECKOV_VERSION = "3.3.30"
VENV = ROOT / "bench" / ".checkov-venv"
OUR_CHECKS = ("POD-001", "POD-002", "POD-003", "POD-004")
# Checkov's id per property; None: Checkov has no equivalent check.
CHECKOV_IDS: dict[str, str | None] = {
    "privileged": "CKV_K8S_16",
    "hostPID": "CKV_K8S_17",
    "hostIPC": "CKV_K8S_18",
    "hostNetwork": "CKV_K8S_19",
    "hostPath /dev": None,
    "hostPath docker.sock": "CKV_K8S_27",
    "SYS_ADMIN": "CKV_K8S_39",
}
Verdicts = dict[str, set[str]]  # pod name -> properties reported


# --- our side ----------------------------------------------------------------------------


def parse(files: list[Path], how: str = "app") -> list[dict]:
    """The objects of each file. "app": as the app reads a snapshot of manifests
    (inventory.sources.snapshot_file: libyaml's safe loader after the depth and alias check,
    the garbage collector paused); "libyaml": yaml.CSafeLoader alone; "pure": the pure-Python
    yaml.safe_load, for comparison."""
    if how == "app":
        return load_snapshot_objects(files)
    texts = [f.read_text(encoding="utf-8") for f in files]
    if how == "libyaml":
        return [yaml.load(text, Loader=yaml.CSafeLoader) for text in texts]  # noqa: S506 - safe
    return [yaml.safe_load(text) for text in texts]


def normalise(objects: list[dict]) -> list[Pod]:
    pods = [pod_from_template(obj) for obj in objects]
    return [p for p in pods if p is not None]


def run_checks(pods: list[Pod]) -> list[FindingDraft]:
    """POD-001..004 over inputs built as tests/posture/builders.py does: one tenant owns
    every namespace the pods live in."""
    tenant = TenantInfo("bench", "Bench", seed_trust_class("internal"), NAMESPACES)
    snapshot = ClusterSnapshot(pods=tuple(pods), namespaces=tuple(Namespace(n) for n in NAMESPACES))
    inputs = PostureInputs(cluster="bench", snapshot=snapshot, tenants=(tenant,))
    return [draft for check_id in OUR_CHECKS for draft in CHECKS[check_id].evaluate(inputs)]


def our_verdicts(drafts: list[FindingDraft]) -> Verdicts:
    found: Verdicts = {}
    for d in drafts:
        props = found.setdefault(d.subject_name, set())
        ev = d.evidence
        if d.check_id == "POD-001":
            props.add("privileged")
        elif d.check_id == "POD-002":
            props.update(field.removeprefix("spec.") for field in ev["fields"])
        elif d.check_id == "POD-003":
            # One finding per workload: each dangerous volume is listed with its path.
            paths = {volume["normalised_path"] for volume in ev["volumes"]}
            if any(path_within(path, "/dev") for path in paths):
                props.add("hostPath /dev")
            if "/run/docker.sock" in paths:
                props.add("hostPath docker.sock")
        elif d.check_id == "POD-004" and d.severity == "critical":
            # One finding per workload: each container concerned lists what it adds.
            flagged = [f for c in ev["containers"] for f in c["flagged"]]
            names = {f["capability"].upper().removeprefix("CAP_") for f in flagged}
            if "SYS_ADMIN" in names:
                props.add("SYS_ADMIN")
    return found


def timed(func: Callable[[], object], repeat: int) -> tuple[float, object]:
    """Median wall time of `repeat` calls, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


# --- Checkov -------------------------------------------------------------------------------


def run(command: list, **options: Any) -> subprocess.CompletedProcess[str]:
    """Run one of our own commands (the venv's python, pip, checkov); output captured."""
    return subprocess.run(command, capture_output=True, text=True, check=False, **options)  # noqa: S603


def installed_version(venv: Path) -> str | None:
    python = venv / "bin" / "python"
    if not python.exists():
        return None
    code = "import importlib.metadata as m; print(m.version('checkov'))"
    return run([python, "-c", code]).stdout.strip() or None


def make_venv(venv: Path) -> float:
    """Create `venv` and pip install checkov into it; the seconds it took."""
    start = time.perf_counter()
    pip = [venv / "bin" / "python", "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    for step in ([sys.executable, "-m", "venv", venv], [*pip, f"checkov=={CHECKOV_VERSION}"]):
        done = run(step)
        if done.returncode != 0:
            command = " ".join(map(str, step))
            sys.exit(f"{command} failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}")
    return time.perf_counter() - start


def run_checkov(venv: Path, directory: Path) -> tuple[float, dict]:
    command = [
        venv / "bin" / "checkov",
        "-d",
        directory,
        "--framework",
        "kubernetes",
        "-o",
        "json",
        "--quiet",
        "--compact",
        "--skip-download",
    ]
    start = time.perf_counter()
    done = run(command, env={**os.environ, "BC_SKIP_MAPPING": "TRUE"})
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: some check failed, the usual case
        sys.exit(f"checkov exited {done.returncode}:\n{done.stderr[-3000:]}")
    report = json.loads(done.stdout)
    reports = report if isinstance(report, list) else [report]
    return elapsed, next(r for r in reports if r.get("check_type") == "kubernetes")


def checkov_verdicts(report: dict) -> tuple[Verdicts, set[str]]:
    """Properties Checkov failed per pod, and every pod it reported anything on."""
    by_id = {check_id: prop for prop, check_id in CHECKOV_IDS.items() if check_id}
    found: Verdicts = {}
    for result in report["results"].get("failed_checks", []):
        props = found.setdefault(Path(result["file_path"]).stem, set())
        if result["check_id"] in by_id:
            props.add(by_id[result["check_id"]])
    return found, set(found)


# --- comparison ----------------------------------------------------------------------------


def compare(manifests: list[Manifest], ours: Verdicts, theirs: Verdicts) -> list[str]:
    head = "property                 with it  ours=truth  Checkov=truth  ours=Checkov"
    lines, notes = [head, "-" * len(head)], []
    n = len(manifests)
    for prop in PROPERTIES:

        def wrong(verdicts: Verdicts, prop: str = prop) -> list[Manifest]:
            return [m for m in manifests if (prop in verdicts.get(m.name, ())) != m.truth[prop]]

        having = sum(m.truth[prop] for m in manifests)
        our_wrong = wrong(ours)
        row = f"{prop:<22}{having:>9}{n - len(our_wrong):>12}"
        if CHECKOV_IDS[prop] is None:
            lines.append(f"{row}{'no equivalent':>15}{'-':>14}")
        else:
            their_wrong = wrong(theirs)
            same = sum(
                (prop in ours.get(m.name, ())) == (prop in theirs.get(m.name, ()))
                for m in manifests
            )
            lines.append(f"{row}{n - len(their_wrong):>15}{same:>14}")
            notes += _listed(f"{prop}: Checkov {CHECKOV_IDS[prop]} wrong", their_wrong, prop)
        notes += _listed(f"{prop}: ours wrong", our_wrong, prop)
    return lines + notes


def _listed(title: str, wrong: list[Manifest], prop: str) -> list[str]:
    if not wrong:
        return []
    lines = [f"  {title} on {len(wrong)} manifest(s), first 5:"]
    for m in wrong[:5]:
        truth = "has it" if m.truth[prop] else "has not"
        lines.append(f"    {m.file_name} ({truth}): {'; '.join(m.shape) or 'benign'}")
    return lines


# --- main ----------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--repeat", type=int, default=5, help="runs of our side (median)")
    parser.add_argument("--keep-venv", action="store_true", help=f"install into {VENV}")
    parser.add_argument("--ours-only", type=Path, help=argparse.SUPPRESS)  # the cold run
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="20 pods, one run of our side, the first mix only (CI's smoke run)",
    )
    args = parser.parse_args()
    if args.tiny:
        args.pods, args.repeat = 20, 1
    return args


def checkov_venv(args: argparse.Namespace, scratch: Path) -> Path:
    if installed_version(VENV) == CHECKOV_VERSION:
        print(f"Checkov {CHECKOV_VERSION}: reusing {VENV.relative_to(ROOT)}")
        return VENV
    venv = VENV if args.keep_venv else scratch / "checkov-venv"
    if venv.exists():
        shutil.rmtree(venv)
    seconds = make_venv(venv)
    print(f"Checkov {CHECKOV_VERSION}: installed into {venv} in {seconds:.0f} s (not counted)")
    return venv


def time_ours(files: list[Path], directory: Path, repeat: int) -> tuple[list, list]:
    """Our findings, and (label, seconds) for each way of timing our side."""
    objects = parse(files)
    pods = normalise(objects)
    checks, drafts = timed(lambda: run_checks(pods), repeat)
    from_objects, _ = timed(lambda: run_checks(normalise(objects)), repeat)
    load, _ = timed(lambda: run_checks(normalise(parse(files))), repeat)
    libyaml, _ = timed(lambda: run_checks(normalise(parse(files, "libyaml"))), repeat)
    pure, _ = timed(lambda: run_checks(normalise(parse(files, "pure"))), repeat)
    start = time.perf_counter()
    done = run([sys.executable, __file__, "--ours-only", directory])
    cold = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"the fresh-process run failed:\n{done.stderr[-3000:]}")
    rows = [
        ("ours, checks only (POD-001..004, inputs built)", checks),
        ("ours, pod_from_template + checks (objects parsed)", from_objects),
        ("ours, load as the app does (libyaml, limits) + checks", load),
        ("ours, load with yaml.CSafeLoader alone + checks", libyaml),
        ("ours, load with pure-Python yaml.safe_load + checks", pure),
        ("ours, fresh process (start-up, imports, load, checks)", cold),
    ]
    return drafts, rows  # type: ignore[return-value]  # timed() returns object: run_checks' lists


def target(manifests: list[Manifest], ours: Verdicts, theirs: Verdicts) -> list[str]:
    """The issue's target: the same verdicts on every manifest."""

    def has(verdicts: Verdicts, m: Manifest, prop: str) -> bool:
        return prop in verdicts.get(m.name, ())

    cells = [(m, p) for m in manifests for p in PROPERTIES]
    ours_wrong = sum(has(ours, m, p) != m.truth[p] for m, p in cells)
    differ = [(m, p) for m, p in cells if CHECKOV_IDS[p] and has(ours, m, p) != has(theirs, m, p)]
    theirs_wrong = sum(has(theirs, m, p) != m.truth[p] for m, p in differ)
    return [
        f"ours vs ground truth: {ours_wrong} wrong verdicts in {len(cells)}",
        f"ours vs Checkov (overlapping checks): {len(differ)} manifest/property pairs differ, "
        f"Checkov wrong in {theirs_wrong} of them, ours in {len(differ) - theirs_wrong}",
    ]


MIXES = (
    ("the issue's mix (canonical spellings)", False),
    ("the trap mix (sys_admin, CAP_SYS_ADMIN, /run/docker.sock as well)", True),
)


def main() -> None:
    args = parse_args()
    if args.ours_only:  # a fresh interpreter: imports + load + checks, as a CLI would
        run_checks(normalise(parse(sorted(args.ours_only.glob("*.yaml")))))
        return
    print(f"cores (os.cpu_count()): {os.cpu_count()}; Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="checks-vs-checkov-") as tmp:
        scratch = Path(tmp)
        venv = checkov_venv(args, scratch)
        # Checkov starts in seconds whatever it reads: the smoke run starts it once.
        for number, (title, traps) in enumerate(MIXES[:1] if args.tiny else MIXES):
            print(f"\n== {title}")
            compare_mix(args, venv, scratch / f"mix-{number}", traps, timings=number == 0)


def compare_mix(
    args: argparse.Namespace, venv: Path, directory: Path, traps: bool, timings: bool
) -> None:
    directory.mkdir()
    manifests = write_manifests(directory, args.pods, args.seed, traps=traps)
    files = sorted(directory.glob("*.yaml"))
    print(f"{len(files)} Pod manifests (seed {args.seed}) in {directory}")
    drafts, rows = time_ours(files, directory, args.repeat)
    checkov_time, report = run_checkov(venv, directory)
    ours = our_verdicts(drafts)
    theirs, reported = checkov_verdicts(report)
    errors = report.get("summary", {}).get("parsing_errors", 0)
    print(f"Checkov reported on {len(reported)}/{len(files)} manifests, parsing errors: {errors}")
    print(f"our findings POD-001..004: {len(drafts)}\n")
    print("\n".join(compare(manifests, ours, theirs) + [""] + target(manifests, ours, theirs)))
    if not timings:
        return
    print(f"\n{'times':<58}{'seconds':>9}{'Checkov / ours':>16}")
    rows.append((f"Checkov {CHECKOV_VERSION} (checkov -d, whole process)", checkov_time))
    for label, seconds in rows:
        print(f"{label:<58}{seconds:>9.3f}{checkov_time / seconds:>15.0f}x")
    print(f"(ours: median of {args.repeat} runs; fresh process and Checkov: one run each)")
    load, from_objects = rows[2][1], rows[1][1]
    print(f"reading the YAML is {(load - from_objects) / load:.0%} of our load + checks time")


if __name__ == "__main__":
    main()
