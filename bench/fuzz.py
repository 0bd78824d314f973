"""Fuzz the API with schemathesis against its own OpenAPI schema, as real users with tokens.

    .venv/bin/python bench/fuzz.py                       # make fuzz: 100 examples per operation
    .venv/bin/python bench/fuzz.py --ci                  # make fuzz-ci: bounded, a few minutes

Builds a throwaway database (SQLite under var/fuzz/, or the PostgreSQL database
`gpuposture_fuzz` when DATABASE_URL is a PostgreSQL URL), migrates it, loads the demo world,
starts gunicorn on 127.0.0.1 and runs `st run` once per role with that role's token: every
operation, reads and writes. Checks: no 5xx (`not_a_server_error`) and every documented
response matches its schema (`response_schema_conformance`). Exits non-zero on any failure.

The whole run happens in a new network namespace holding only loopback (`unshare --net`), so
nothing the fuzzer writes (a bulletin feed URL, say) can make the app reach the outside world;
PostgreSQL is then reached through its Unix socket. This driver imports nothing of the app: it
drives `manage.py`, `bench/bench_auth.py`, gunicorn and `st` as processes.
"""

from __future__ import annotations

# A driver of our own tools (manage.py, gunicorn, st, unshare, ip) with a throwaway key.
# ruff: noqa: S603, S606, S607, S106
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
WORK = ROOT / "var" / "fuzz"
PG_SOCKET_DIR = "/var/run/postgresql"
CHECKS = "not_a_server_error,response_schema_conformance"
# Role -> the demo's user holding it (`manage.py demo` makes them).
ROLE_USERS = {
    "security_lead": "security-lead",
    "tenant_viewer": "viewer-clinical",
    "platform_engineer": "platform-engineer",
    "procurement": "procurement",
    "auditor": "auditor",
    "superuser": "admin",
}
FULL = {"max_examples": 100, "phases": "examples,coverage,fuzzing,stateful", "limit": 3600}
# About 40 s per role on an idle 2-core machine; the limit only catches a hang. A fixed seed, so
# CI's verdict does not depend on the draw (a full run draws afresh).
CI = {"max_examples": 5, "phases": "examples,fuzzing", "limit": 300, "seed": 20261203}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ci", action="store_true", help="bounded run for CI")
    parser.add_argument("--roles", default="security_lead,tenant_viewer")
    parser.add_argument("--max-examples", type=int, help="per operation and phase")
    parser.add_argument("--phases", help="schemathesis phases (comma-separated)")
    parser.add_argument("--limit", type=int, help="seconds per role before the run is stopped")
    parser.add_argument("--seed", type=int, help="schemathesis seed, to replay a run")
    parser.add_argument("--workers", default="2", help="schemathesis workers")
    parser.add_argument("--keep", action="store_true", help="keep the database and the server")
    parser.add_argument("--no-isolate", action="store_true", help="skip the network namespace")
    parser.add_argument("--isolated", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("st_args", nargs="*", help="more `st run` options, after --")
    args = parser.parse_args()
    preset = CI if args.ci else FULL
    for key, value in preset.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    unknown = set(args.roles.split(",")) - set(ROLE_USERS)
    if unknown:
        parser.error(f"unknown roles {sorted(unknown)}; choose from {sorted(ROLE_USERS)}")
    return args


def isolate(args: argparse.Namespace) -> None:
    """Re-run this script in a network namespace with only loopback, once."""
    if args.isolated:
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        return
    if args.no_isolate:
        print("fuzz: NOT isolated from the network (--no-isolate)")
        return
    if (
        shutil.which("unshare") is None
        or subprocess.run(["unshare", "--net", "true"], capture_output=True, check=False).returncode
    ):
        sys.exit("fuzz: cannot make a network namespace (unshare --net); use --no-isolate")
    os.execvp("unshare", ["unshare", "--net", "--", sys.executable, *sys.argv, "--isolated"])


# --- the throwaway database --------------------------------------------------------------------


def database_url(isolated: bool) -> tuple[str, str | None]:
    """The URL the app uses, and the admin URL to drop the database with (None: SQLite)."""
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        return f"sqlite:///{WORK / 'fuzz.sqlite3'}", None
    parts = urlsplit(base)
    if isolated:
        # No TCP to the host's 127.0.0.1 from inside the namespace: the socket is a file.
        host = PG_SOCKET_DIR.replace("/", "%2F")
        parts = parts._replace(netloc=f"{parts.username or 'postgres'}@{host}")
    return urlunsplit(parts._replace(path="/gpuposture_fuzz")), urlunsplit(
        parts._replace(path="/postgres")
    )


def pg_admin(admin_url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql)


def app_env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CELERY_")}
    env.update(
        DATABASE_URL=url,
        DJANGO_SETTINGS_MODULE="bench.bench_settings",
        BENCH_VAR_DIR=str(WORK),
        SECRET_KEY="fuzz-only-not-secret",
        GPUPOSTURE_MFA_ENCRYPTION_KEY="fuzz-only-not-a-secret-0123456789abcdef",
        DEBUG="0",
        ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="0",
        SECURE_HSTS_SECONDS="0",
        LOG_LEVEL="WARNING",
        # Whatever the fuzzer registers or uploads stays in the run's own folders.
        GPUPOSTURE_UPLOAD_DIR=str(WORK / "uploads"),
        GPUPOSTURE_KUBECONFIG_DIR=str(WORK / "kubeconfigs"),
        GPUPOSTURE_SNAPSHOT_DIR=str(WORK / "snapshots"),
        GPUPOSTURE_FETCH_TIMEOUT_SECONDS="5",
        GPUPOSTURE_WATCH_SECONDS="1",
    )
    return env


def run(cmd: list[str], env: dict[str, str], log: Path) -> str:
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
        out.write(done.stdout + done.stderr)
    if done.returncode:
        sys.exit(f"fuzz: `{' '.join(cmd)}` failed; see {log}")
    return done.stdout


# --- the server --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_start(env: dict[str, str], port: int) -> subprocess.Popen:
    cmd = [
        str(BIN / "gunicorn"),
        "gpuposture.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "2",
        "--timeout",
        "120",
        "--error-logfile",
        str(WORK / "gunicorn.log"),
    ]
    # 4xx are the fuzzer's daily bread: log only errors (a 5xx's traceback) from the app.
    log = (WORK / "gunicorn.log").open("a")
    server = subprocess.Popen(
        cmd,
        env={**env, "LOG_LEVEL": "ERROR"},
        cwd=ROOT,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):  # noqa: S310
                return server
        except OSError:
            if server.poll() is not None:
                break
            time.sleep(0.5)
    server_stop(server)
    sys.exit(f"fuzz: gunicorn did not answer on 127.0.0.1:{port}; see {WORK / 'gunicorn.log'}")


def server_stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)


# --- schemathesis ------------------------------------------------------------------------------

SUMMARY = re.compile(r"=+ (.*) in [\d.]+s =+")
GENERATED = re.compile(r"(\d+) generated")


def fuzz_role(args: argparse.Namespace, role: str, header: str, port: int) -> dict[str, object]:
    log = WORK / f"st-{role}.log"
    cmd = [
        str(BIN / "st"),
        "run",
        f"http://127.0.0.1:{port}/api/schema/",
        "--header",
        f"Authorization: {header}",
        "--checks",
        CHECKS,
        "--max-examples",
        str(args.max_examples),
        "--phases",
        args.phases,
        "--workers",
        args.workers,
        "--request-timeout",
        "60",
        "--generation-database",
        "none",
        "--suppress-health-check",
        "all",
        "--no-color",
        "--report",
        "junit",
        "--report-junit-path",
        str(WORK / f"junit-{role}.xml"),
        *(["--seed", str(args.seed)] if args.seed is not None else []),
        *args.st_args,
    ]
    print(
        f"\n=== fuzz as {role} ({ROLE_USERS[role]}): {args.max_examples} examples/operation, "
        f"phases {args.phases}, limit {args.limit}s; log {log}",
        flush=True,
    )
    started = time.monotonic()
    timed_out = False
    with log.open("w") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=WORK,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        assert proc.stdout is not None
        deadline = started + args.limit
        for line in proc.stdout:
            out.write(line)
            out.flush()
            if not args.ci:
                print(line, end="", flush=True)
            if time.monotonic() > deadline:
                timed_out = True
                os.killpg(proc.pid, signal.SIGTERM)
                break
        proc.wait()
    text = log.read_text()
    summary = SUMMARY.findall(text)
    generated = GENERATED.findall(text)
    failures = [ln.strip() for ln in text.splitlines() if re.match(r"\s+❌ ST\d+", ln)]
    ok = proc.returncode == 0 and not timed_out
    if args.ci and not ok:
        print(text[-20000:])
    return {
        "role": role,
        "ok": ok,
        "seconds": round(time.monotonic() - started),
        "cases": generated[-1] if generated else "?",
        "summary": "time limit reached" if timed_out else (summary[-1] if summary else "?"),
        "failures": failures,
    }


def main() -> None:
    args = parse_args()
    isolate(args)
    WORK.mkdir(parents=True, exist_ok=True)
    for name in ("uploads", "kubeconfigs", "snapshots"):
        shutil.rmtree(WORK / name, ignore_errors=True)
        (WORK / name).mkdir()
    (WORK / "fuzz.sqlite3").unlink(missing_ok=True)
    setup_log = WORK / "setup.log"
    setup_log.write_text("")
    url, admin = database_url(args.isolated)
    if admin:
        pg_admin(admin, "DROP DATABASE IF EXISTS gpuposture_fuzz WITH (FORCE)")
        pg_admin(admin, "CREATE DATABASE gpuposture_fuzz")
    env = app_env(url)
    print(f"fuzz: database {urlsplit(url).scheme} {urlsplit(url).path}; loading the demo world")
    py = str(BIN / "python")
    run([py, "manage.py", "migrate", "--noinput"], env, setup_log)
    run([py, "manage.py", "demo"], env, setup_log)
    roles = args.roles.split(",")
    headers = {
        role: run([py, "bench/bench_auth.py", "token", ROLE_USERS[role]], env, setup_log).strip()
        for role in roles
    }
    port = free_port()
    server = server_start(env, port)
    results = []
    try:
        # The tenant viewer first: the security lead's writes change the world it would see.
        for role in sorted(roles, key=lambda r: r != "tenant_viewer"):
            results.append(fuzz_role(args, role, headers[role], port))
    finally:
        if not args.keep:
            server_stop(server)
            if admin:
                pg_admin(admin, "DROP DATABASE IF EXISTS gpuposture_fuzz WITH (FORCE)")
    print("\n=== fuzz summary (checks: " + CHECKS + ")")
    print(f"{'role':18} {'result':6} {'cases':>7} {'seconds':>8}  schemathesis")
    for r in results:
        result = "ok" if r["ok"] else "FAIL"
        print(f"{r['role']:18} {result:6} {r['cases']:>7} {r['seconds']:>8}  {r['summary']}")
        for failure in r["failures"]:
            print(f"{'':34}{failure}")
    if args.keep:
        print(f"kept: server on 127.0.0.1:{port} (pid {server.pid}), database {url}")
    sys.exit(0 if results and all(r["ok"] for r in results) else 1)


if __name__ == "__main__":
    main()
