#!/usr/bin/env bash
# Load bench: gunicorn on 127.0.0.1 against PostgreSQL with a 200-tenant, 2,000-node world;
# wrk against the findings API (token), the overview page (session cookie) and a bare DRF
# floor endpoint returning the same bytes; prints req/s, p50/p99, errors and the ratio to the
# floor. Run by hand (see bench/README.md):
#
#   bench/load.sh                 # 60 s per endpoint
#   DURATION=10 bench/load.sh     # a quick run
#   TINY=1 bench/load.sh          # CI's smoke run: a tiny world, 1 s per endpoint, no warm-up
#
# The overview and the findings API are cached per posture version for readers of every tenant
# (posture/read_cache.py); a second pass measures both with that cache off (UNCACHED=0 skips it).
#
# Every answer is counted by bench/wrk_status.lua: the exit status is 1 when any measured
# request did not answer 200 (or failed on the socket).
#
# Settings (environment): DURATION (60), WARMUP (5), CONNECTIONS (16), THREADS (2), WORKERS
# (nproc), PGURL (postgres://postgres@127.0.0.1:5432), KEEP=1 (keep the database and the
# server), TINY=1 (6 tenants, 10 nodes, 300 findings; DURATION 1, WARMUP 0, CONNECTIONS 4 and
# UNCACHED 0 unless set).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY="$ROOT/.venv/bin/python"
if [ "${TINY:-0}" = 1 ]; then
  DURATION=${DURATION:-1} WARMUP=${WARMUP:-0} CONNECTIONS=${CONNECTIONS:-4} UNCACHED=${UNCACHED:-0}
  WORLD=(--tenants 6 --nodes 10 --findings 300)
else
  WORLD=()
fi
DURATION=${DURATION:-60}
WARMUP=${WARMUP:-5}
CONNECTIONS=${CONNECTIONS:-16}
THREADS=${THREADS:-2}
WORKERS=${WORKERS:-$(nproc)}
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
DB=gpuposture_load
WORK="$ROOT/var/load"

[ -x "$PY" ] || { echo "no .venv: run make install first" >&2; exit 1; }
if ! command -v wrk >/dev/null 2>&1; then
  echo "installing wrk (Debian package)"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get install -y wrk >/dev/null 2>&1 || { $SUDO apt-get update >/dev/null && $SUDO apt-get install -y wrk >/dev/null; }
fi
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  echo "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi

rm -rf "$WORK" && mkdir -p "$WORK"
psql "$PGURL/postgres" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null

unset CELERY_BROKER_URL CELERY_RESULT_BACKEND
export DATABASE_URL="$PGURL/$DB" SECRET_KEY=load-bench-only DEBUG=0 ALLOWED_HOSTS=127.0.0.1 \
  GPUPOSTURE_MFA_ENCRYPTION_KEY=load-bench-only-not-a-secret-0123456789 \
  SECURE_SSL_REDIRECT=0 SECURE_HSTS_SECONDS=0 LOG_LEVEL=WARNING \
  DJANGO_SETTINGS_MODULE=bench.bench_settings BENCH_VAR_DIR="$WORK" BENCH_FLOOR=1 \
  BENCH_FLOOR_BODY="$WORK/floor.json"

echo "== building the world (database $DB)"
"$PY" manage.py migrate --noinput >"$WORK/setup.log" 2>&1
"$PY" bench/load_world.py "${WORLD[@]}"
TOKEN=$("$PY" bench/bench_auth.py token bench-lead --scope read)
COOKIE=$("$PY" bench/bench_auth.py session bench-lead)
echo '{}' >"$WORK/floor.json"

PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BASE="http://127.0.0.1:$PORT"
GUNICORN=(.venv/bin/gunicorn gpuposture.wsgi:application --bind "127.0.0.1:$PORT"
  --workers "$WORKERS" --threads 1 --worker-class sync --timeout 60 --backlog 2048
  --error-logfile "$WORK/gunicorn.log" --log-level warning)
SERVER=""
stop_server() { if [ -n "$SERVER" ]; then kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; SERVER=""; fi; }
start_server() {
  "${GUNICORN[@]}" & SERVER=$!
  for _ in $(seq 1 60); do curl -fso /dev/null "$BASE/healthz" && return 0; sleep 0.5; done
  echo "gunicorn did not start; see $WORK/gunicorn.log" >&2; exit 1
}
trap '[ "${KEEP:-0}" = 1 ] || { stop_server; psql "$PGURL/postgres" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1; }' EXIT

# The floor returns a saved findings page: start once to save one, then again to serve it.
start_server
code=$(curl -s -o "$WORK/floor.json" -w '%{http_code}' -H "Authorization: $TOKEN" "$BASE/api/v1/findings/")
[ "$code" = 200 ] || { echo "findings API answered $code" >&2; cat "$WORK/floor.json" >&2; exit 1; }
stop_server
start_server

ENDPOINTS=(
  "findings API|/api/v1/findings/|Authorization: $TOKEN"
  "overview page|/|Cookie: $COOKIE"
  "floor (bare DRF)|/bench/floor/|Authorization: $TOKEN"
)
echo "== checking each endpoint answers 200"
for entry in "${ENDPOINTS[@]}"; do
  IFS='|' read -r name path header <<<"$entry"
  out=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' -H "$header" "$BASE$path")
  echo "   $name $path: HTTP ${out% *}, ${out#* } bytes"
  [ "${out% *}" = 200 ] || { echo "   $name does not answer 200: not measuring a redirect or an error" >&2; exit 1; }
done

echo "== gunicorn ${WORKERS} sync workers x 1 thread; wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s --timeout 30s; $(nproc) CPUs; $(psql "$PGURL/postgres" -Atc 'show server_version') PostgreSQL"
echo "   load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
measure() {  # name|path|header
  IFS='|' read -r name path header <<<"$1"
  slug=$(echo "$name" | tr -c 'a-z' '_')
  if [ "$WARMUP" != 0 ]; then
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"${WARMUP}s" -H "$header" "$BASE$path" >/dev/null
  fi
  # A 30 s timeout, not wrk's 2 s: a slow answer shows in the latencies, not as an error.
  wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --timeout 30s --latency \
    -s bench/wrk_status.lua -H "$header" "$BASE$path" >"$WORK/wrk-$slug.txt"
  echo "$name|$path|$WORK/wrk-$slug.txt" >>"$WORK/results.txt"
}
for entry in "${ENDPOINTS[@]}"; do measure "$entry"; done
# The same two with the shared read cache off (posture/read_cache.py): what a request costs
# when it builds the answer, as the first one after each posture run does.
if [ "${UNCACHED:-1}" = 1 ]; then
  stop_server
  GPUPOSTURE_READ_CACHE_SECONDS=0 start_server
  measure "findings, no cache|/api/v1/findings/?nocache|Authorization: $TOKEN"
  measure "overview, no cache|/?nocache|Cookie: $COOKIE"
fi
echo "   load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

"$PY" - "$WORK/results.txt" "$BASE" <<'EOF'
"""Parse wrk's output and print the table against the targets."""
import re
import sys

UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def ms(text):
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(value) * UNITS[unit]


rows, failed = [], []
for line in open(sys.argv[1]):
    name, path, file = line.rstrip("\n").split("|")
    out = open(file).read()
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))
    p99 = ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    # bench/wrk_status.lua's line: wrk's own "Non-2xx or 3xx" count would let redirects pass.
    not200, status = map(int, re.search(r"Not 200: (\d+) \(first status (\d+)\)", out).groups())
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors = not200 + (sum(map(int, sock.groups())) if sock else 0)
    rows.append((name, path, rps, p50, p99, errors, total))
    url = f"{sys.argv[2]}{path}"
    if errors:
        failed.append(f"{name} {url}: {not200} of {total} answered not 200 (first status "
                      f"{status}), {errors - not200} socket errors")
    elif total == 0:
        failed.append(f"{name} {url}: no request finished in the run; nothing was measured")

floor = next(r[2] for r in rows if r[1] == "/bench/floor/")
print()
print(f"{'endpoint':18} {'path':18} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7} "
      f"{'requests':>9} {'/floor':>7}  target (0 errors, >= 50% of floor, p99 < 250 ms)")
for name, path, rps, p50, p99, errors, total in rows:
    ratio = rps / floor
    if path == "/bench/floor/":
        met = "(the floor)"
    elif path.endswith("?nocache"):
        met = "(cache off: for comparison)"
    else:
        met = "yes" if errors == 0 and ratio >= 0.5 and p99 < 250 else "NO"
    print(f"{name:18} {path:18} {rps:8.1f} {p50:8.1f} {p99:8.1f} {errors:7d} {total:9d} "
          f"{ratio:6.0%}  {met}")
if failed:
    sys.exit("load bench: not every measured request answered 200:\n  " + "\n  ".join(failed))
EOF
